#!/usr/bin/env bash
# Separate-process A/B of UDP (issue 14), the implementations in turn,
# each in a process of its own beside a client process of its own. The
# implementations take turns going first from round to round, so drift in
# the machine's load favours none.
#
# SET=sink (the default): UDP sink servers. The std-net loop (`lifenet
# load --impl raw --udp`: one ReadFromUDPAddrPort per datagram) against
# lifenet's UDP server (batched recvmmsg on Linux), each fed by the same
# raw sender (`--impl raw --udpconnect`: connected sockets, one write per
# datagram), 1 KiB and 32 B datagrams from 4 and 32 senders. Per run: the
# server's received rate (datagrams/s, the median of its per-second
# samples), its CPU per datagram (getrusage over the run, µs), the loss
# (1 − received/sent).
#
# SET=codec: SRMP over UDP. srmp-rt-c*: echo round trips of 32-byte SRMP
# requests (one frame per datagram, one in flight per client) from 1, 4
# and 16 clients of the raw UDP client (`lifenet load --udp --codec srmp`
# uses it with either --impl) against lifenet's codec server or the baseline's
# datagram loop; per run the round trips/s the client saw, the server's
# CPU per request (µs) and the requests left unanswered (%). client-*:
# one-way send from 4 unconnected sockets (send-to) to the same raw UDP
# sink, the raw client against lifenet's UDP client (transport.Client: the
# load tool's codec client over UDP is always the raw one, so this row
# sends plain datagrams); per run the client's send rate, its CPU per
# datagram (µs) and the loss the sink saw.
#
# SET=all runs both. Every run also reports the kernel's receive-buffer
# drops during it (/proc/net/snmp Udp RcvbufErrors, which counts every UDP
# socket on the machine: run it on a quiet one). Then per scenario the
# medians of each figure, and the medians of the per-round ratios to raw.
#
# Usage: [SET=sink|codec|all] scripts/udp-ab.sh [rounds] [seconds] [scenario-regex]
#   rounds 5, seconds 5, every scenario of the set by default.
# IMPLS="raw lifenet lifenet1" adds lifenet with --udpbatch 1 (one read per
# datagram: the portable loop), to separate batching from the rest (server
# rows only; the client rows skip it).
# RCVBUF sets SO_RCVBUF on the servers (default 4 MiB; the kernel caps it
# at net.core.rmem_max). PIN=1 pins servers to CPU 1, clients to CPU 0.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5} seconds=${2:-5} only=${3:-.}
read -r -a impls <<<"${IMPLS:-raw lifenet}"
rcvbuf=${RCVBUF:-4194304}
bin=$(mktemp -d)/lifenet
go build -o "$bin" ./cmd/lifenet
sink=(
  "1KB-s4|sink|1024|4"
  "1KB-s32|sink|1024|32"
  "32B-s4|sink|32|4"
  "32B-s32|sink|32|32"
)
codec=(
  "srmp-rt-c1|rt|32|1"
  "srmp-rt-c4|rt|32|4"
  "srmp-rt-c16|rt|32|16"
  "client-32B|client|32|4"
  "client-1KB|client|1024|4"
)
case ${SET:-sink} in
sink) scenarios=("${sink[@]}") ;;
codec) scenarios=("${codec[@]}") ;;
all) scenarios=("${sink[@]}" "${codec[@]}") ;;
*) echo "SET=${SET}: want sink, codec or all" >&2; exit 2 ;;
esac
server_cpu=() client_cpu=()
if [[ ${PIN:-0} == 1 ]]; then server_cpu=(taskset -c 1) client_cpu=(taskset -c 0); fi
max=$(cat /proc/sys/net/core/rmem_max 2>/dev/null || echo 0)
if ((max < rcvbuf)); then
  echo "note: net.core.rmem_max is $max: SO_RCVBUF $rcvbuf is capped to it (sysctl -w net.core.rmem_max=$rcvbuf lifts the cap)" >&2
fi

rcvbuf_errors() { awk '/^Udp:/ { if (!h) { for (i = 1; i <= NF; i++) if ($i == "RcvbufErrors") c = i; h = 1 } else print $c }' /proc/net/snmp; }

out=$(mktemp)
port=7950
run() { # scenario kind impl size senders
  local name=$1 kind=$2 impl=$3 size=$4 senders=$5 log cli spid e0 e1 flags=() server=() client=()
  port=$((port + 1))
  case $impl in
  raw) flags=(--impl raw) ;;
  lifenet) flags=(--impl lifenet) ;;
  lifenet1) flags=(--impl lifenet --udpbatch 1) ;;
  *) echo "unknown impl $impl" >&2; exit 2 ;;
  esac
  case $kind in
  sink)
    server=("${flags[@]}" --oneway)
    client=(--udpconnect --impl raw --oneway --clients "$senders") ;;
  rt)
    server=("${flags[@]}" --codec srmp)
    client=(--impl raw --codec srmp --mode roundtrip --clients "$senders") ;;
  client)
    [[ $impl == lifenet1 ]] && return # --udpbatch is the server's: no client row
    server=(--impl raw --oneway)
    client=(--impl "$impl" --oneway --clients "$senders") ;;
  esac
  log=$(mktemp) cli=$(mktemp)
  "${server_cpu[@]}" "$bin" load --server --udp "${server[@]}" --port "$port" --size "$size" \
    --rcvbuf "$rcvbuf" --idle-exit 1 --first-client 30 >"$log" &
  spid=$!
  for _ in $(seq 100); do grep -q READY "$log" && break; sleep 0.1; done
  e0=$(rcvbuf_errors)
  "${client_cpu[@]}" "$bin" load --remote "127.0.0.1:$port" --udp "${client[@]}" \
    --size "$size" --seconds "$seconds" --warmup 1 --json >"$cli"
  wait "$spid"
  e1=$(rcvbuf_errors)
  local steady summary
  steady=$(grep '^STEADY-JSON' "$log" | cut -d' ' -f2-)
  summary=$(grep '^SUMMARY:' "$cli" | cut -d' ' -f2-)
  # Columns: scenario impl rate cpu-µs loss% drops. sink: the server's
  # received rate and CPU per datagram; rt: round trips/s and the server's
  # CPU per request, loss = requests unanswered; client: the client's send
  # rate and CPU per datagram, loss at the sink.
  jq -r -n --arg n "$name" --arg i "$impl" --arg k "$kind" --argjson s "$steady" --argjson c "$summary" --argjson drops $((e1 - e0)) --argjson size "$size" '
    def pct(x): (x * 10000 | round) / 100;
    def prime: ([([(4194304 / $size | floor), 4] | max), 64] | min) * $size; # the client warm-up the server also counted
    def sinkloss: if $c.sentBytes > 0 then pct(1 - ($s.received - prime) / $c.sentBytes) else 0 end;
    if $k == "sink" then [($s.pktps | floor), ($s.cpuSecPerMillion * 1000 | round / 1000), sinkloss]
    elif $k == "rt" then [($c.msgsPerSec | floor), ($s.cpuSecPerMillion * 1000 | round / 1000),
      (if $c.sentBytes > 0 then pct(1 - ($c.latencyCount // 0) * $size / $c.sentBytes) else 0 end)]
    else [($c.msgsPerSec | floor), $c.cpuPerMsg, sinkloss] end
    | "\($n) \($i) \(.[0]) \(.[1]) \(.[2]) \($drops)"' | tee -a "$out"
  rm -f "$log" "$cli"
}

echo "scenario impl rate/s cpu-µs/msg loss% rcvbuf-drops"
for ((r = 1; r <= rounds; r++)); do
  order=("${impls[@]}")
  if ((r % 2 == 0)); then # reversed every other round
    order=()
    for ((i = ${#impls[@]} - 1; i >= 0; i--)); do order+=("${impls[i]}"); done
  fi
  for sc in "${scenarios[@]}"; do
    IFS='|' read -r name kind size senders <<<"$sc"
    [[ $name =~ $only ]] || continue
    for impl in "${order[@]}"; do run "$name" "$kind" "$impl" "$size" "$senders"; done
  done
done

awk '
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  { k = $1 SUBSEP $2; i = ++cnt[k]; rate[k, i] = $3; cpu[k, i] = $4; loss[k, i] = $5; drops[k, i] = $6
    if (!($1 in seen)) { seen[$1] = 1; names[++ns] = $1 }
    if (!($2 in iseen)) { iseen[$2] = 1; imps[++ni] = $2 } }
  END {
    printf "\nmedians over rounds; ratios are medians of per-round ratios to raw\n"
    printf "%-11s %-9s %6s %11s %12s %7s %12s %11s %10s\n", "scenario", "impl", "rounds", "rate/s", "cpu-µs/msg", "loss%", "rcvbuf-drops", "rate/raw", "cpu/raw"
    for (s = 1; s <= ns; s++) for (m = 1; m <= ni; m++) {
      name = names[s]; imp = imps[m]; k = name SUBSEP imp; n = cnt[k]
      if (n == 0) continue
      for (i = 1; i <= n; i++) { a[i] = rate[k, i]; b[i] = cpu[k, i]; c[i] = loss[k, i]; d[i] = drops[k, i] }
      mr = median(a, n); mc = median(b, n); ml = median(c, n); md = median(d, n)
      rr = "-"; rc = "-"; kr = name SUBSEP "raw"; p = cnt[kr] < n ? cnt[kr] : n
      if (imp != "raw" && p > 0) {
        for (i = 1; i <= p; i++) { x[i] = rate[k, i] / rate[kr, i]; y[i] = cpu[k, i] / cpu[kr, i] }
        rr = sprintf("%.3f", median(x, p)); rc = sprintf("%.3f", median(y, p))
      }
      printf "%-11s %-9s %6d %11.0f %12.3f %7.2f %12.0f %11s %10s\n", name, imp, n, mr, mc, ml, md, rr, rc
    }
  }' "$out"
rm -f "$out"
