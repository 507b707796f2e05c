#!/usr/bin/env bash
# Repeats one TCP echo load (default: the 64 KiB pipeline, 8 connections,
# sync receive) in alternating lifenet/raw pairs, separate processes, and
# prints per run the client's rate, lost bytes, drain time and failures
# beside the changes of the kernel's TCP loss counters (nstat) — a stall or
# a lost echo can then be put next to retransmission timeouts and
# receive-queue drops of the same run.
# Usage: scripts/stall-check.sh [pairs] [seconds] [load flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-10}
seconds=${2:-4}
shift $(($# < 2 ? $# : 2))
flags=("$@")
if [ ${#flags[@]} -eq 0 ]; then
  flags=(--size 65536 --clients 8 --mode pipeline --recvmode sync)
fi
command -v nstat >/dev/null || { echo "stall-check: needs nstat (iproute2)" >&2; exit 2; }
dir=$(mktemp -d)
go build -o "$dir/lifenet" ./cmd/lifenet
counters='TcpExtTCPTimeouts|TcpExtTCPRcvQDrop|TcpExtRcvPruned|TcpRetransSegs'
snapshot() { nstat -az 2>/dev/null | awk -v re="^($counters)\$" '$1 ~ re {print $1, $2}' | sort; }
# Server flags: the size (and --udp/--oneway/--codec if given) must match the client's.
server_flags=()
for ((i = 0; i < ${#flags[@]}; i++)); do
  case ${flags[i]} in
    --size|--codec|--frame) server_flags+=("${flags[i]}" "${flags[i+1]}"); i=$((i+1)) ;;
    --udp|--oneway) server_flags+=("${flags[i]}") ;;
  esac
done
port=7700
for ((p = 1; p <= pairs; p++)); do
  order=(lifenet raw)
  ((p % 2 == 0)) && order=(raw lifenet)
  for impl in "${order[@]}"; do
    port=$((port + 1))
    before=$(snapshot)
    "$dir/lifenet" load --server --impl "$impl" --port "$port" --idle-exit 1 "${server_flags[@]}" >"$dir/server.log" 2>&1 &
    server=$!
    sleep 0.3
    "$dir/lifenet" load --remote "127.0.0.1:$port" --impl "$impl" --json --seconds "$seconds" --warmup 1 "${flags[@]}" >"$dir/client.log" 2>&1 || true
    wait "$server" || true
    after=$(snapshot)
    summary=$(sed -n 's/^SUMMARY: //p' "$dir/client.log" | tr -d '\n')
    delta=$(join <(echo "$before") <(echo "$after") | awk '{d = $3 - $2; if (d) printf " %s+%d", $1, d}')
    printf '%d %s %s |%s\n' "$p" "$impl" "${summary:-no SUMMARY: $(tail -1 "$dir/client.log")}" "${delta:- no loss counters moved}"
  done
done
rm -rf "$dir"
