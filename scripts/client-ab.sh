#!/usr/bin/env bash
# Separate-process A/B of the codec CLIENT: lifenet's codec client vs the
# raw std-net client, each against the same server (rawnet's per-message
# loop, a fresh process per run), alternating which goes first per round.
# Serial rows compare round trips per second (and time per request);
# windowed rows compare client CPU per request (the SUMMARY's cpuPerMsg).
# Prints one line per run: "<scenario> <impl> <SUMMARY-JSON>", then per
# scenario the medians of the per-round lifenet/raw ratios.
# Usage: scripts/client-ab.sh [rounds] [seconds] [scenario-regex]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-4}
only=${3:-.}
bin=$(mktemp -d)/lifenet
go build -o "$bin" ./cmd/lifenet
port=8300
scenarios=(
  "srmp-serial-c1|--codec srmp --mode roundtrip --size 32 --clients 1"
  "srmp-serial-c16|--codec srmp --mode roundtrip --size 32 --clients 16"
  "srmp-serial-c64|--codec srmp --mode roundtrip --size 32 --clients 64"
  "lf-serial-c1|--codec lengthfield --mode roundtrip --size 32 --clients 1"
  "srmp-window-c16|--codec srmp --mode pipeline --size 32 --clients 16 --window 255"
  "lf-window-c16|--codec lengthfield --mode pipeline --size 32 --clients 16 --window 256"
)
out=$(mktemp)
run() { # scenario-name impl flags
  local name=$1 impl=$2 flags=$3 codec log spid
  port=$((port + 1))
  codec=$(sed -nE 's/.*--codec ([a-z]+).*/--codec \1/p' <<<"$flags")
  log=$(mktemp)
  # shellcheck disable=SC2086
  "$bin" load --server --impl raw --port "$port" --size 32 $codec >"$log" &
  spid=$!
  for _ in $(seq 50); do grep -q READY "$log" && break; sleep 0.1; done
  # shellcheck disable=SC2086
  echo "$name $impl $("$bin" load --remote "127.0.0.1:$port" --impl "$impl" --seconds "$seconds" --warmup 1 --json $flags | sed -n 's/^SUMMARY: //p')" | tee -a "$out"
  wait "$spid"
  rm -f "$log"
}
for ((r = 1; r <= rounds; r++)); do
  order=(lifenet raw)
  ((r % 2 == 0)) && order=(raw lifenet)
  for sc in "${scenarios[@]}"; do
    name=${sc%%|*}
    [[ $name =~ $only ]] || continue
    for impl in "${order[@]}"; do run "$name" "$impl" "${sc#*|}"; done
  done
done
awk '
  function field(k,   m) { return match($0, "\"" k "\":[0-9.e+-]+") ? substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 : 0 }
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  { k = $1 SUBSEP $2; i = ++cnt[k]; rate[k, i] = field("msgsPerSec"); cpu[k, i] = field("cpuPerMsg"); alloc[k, i] = field("allocPerMsg"); if (!($1 in seen)) { seen[$1] = 1; names[++ns] = $1 } }
  END {
    print "\nscenario          rounds  rate lifenet/raw  client CPU/msg lifenet/raw  client B/msg lifenet  raw"
    for (s = 1; s <= ns; s++) {
      name = names[s]; n = cnt[name, "lifenet"] < cnt[name, "raw"] ? cnt[name, "lifenet"] : cnt[name, "raw"]
      for (i = 1; i <= n; i++) { t[i] = rate[name, "lifenet", i] / rate[name, "raw", i]; c[i] = cpu[name, "lifenet", i] / cpu[name, "raw", i]; al[i] = alloc[name, "lifenet", i]; ar[i] = alloc[name, "raw", i] }
      printf "%-17s %6d  %16.3f  %26.3f  %20.2f  %4.2f\n", name, n, median(t, n), median(c, n), median(al, n), median(ar, n)
    }
  }' "$out"
rm -f "$out"
