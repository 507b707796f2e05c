#!/usr/bin/env bash
# Separate-process A/B of the server: lifenet vs the std-net loop, each
# measured by its own STEADY line (server CPU included) under the same raw
# client. The two alternate which goes first from round to round, so drift
# in the machine's load does not favour either.
# Codec scenarios (lf-*, srmp-*) give the server the client's --codec and
# --size: lifenet runs its codec, raw the baseline's per-message loop (each frame
# parsed and answered), both driven by the raw client's window of valid
# frames, counting the replies (--count-replies: the light driver of every
# figure in docs/perf/codec-echo.md, not a caller matching each reply).
# Prints one line per run: "<scenario> <impl> <STEADY-JSON>", then per
# scenario the medians of the per-round lifenet/raw ratios (frames/s and
# server CPU per message) and of each server's allocations per message.
# Usage: scripts/server-ab.sh [rounds] [seconds] [scenario-regex]
# PIN=1 pins the server to CPU 1 and the client to CPU 0 (taskset).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/ab-lib.sh
source scripts/ab-lib.sh
ab_init "$@"
port=7900
scenarios=(
  "oneway-32B-c4|--oneway --size 32 --clients 4"
  "oneway-32B-c16|--oneway --size 32 --clients 16"
  "oneway-1KB-c4|--oneway --size 1024 --clients 4"
  "oneway-1KB-c16|--oneway --size 1024 --clients 16"
  "echo-1KB-c4|--mode pipeline --size 1024 --clients 4"
  "echo-1KB-c16|--mode pipeline --size 1024 --clients 16"
  "lf-echo-32B-c16|--codec lengthfield --mode pipeline --size 32 --clients 16 --window 256"
  "lf-echo-32B-c1|--codec lengthfield --mode pipeline --size 32 --clients 1 --window 256"
  "srmp-echo-32B-c16|--codec srmp --mode pipeline --size 32 --clients 16 --window 255"
  "srmp-echo-32B-c1|--codec srmp --mode pipeline --size 32 --clients 1 --window 255"
)
out=$(mktemp)
server_cpu=() client_cpu=()
if [[ ${PIN:-0} == 1 ]]; then server_cpu=(taskset -c 1) client_cpu=(taskset -c 0); fi
run() { # scenario-name impl flags
  local name=$1 impl=$2 flags=$3 size oneway="" codec log spid
  port=$((port + 1))
  size=$(sed -E 's/.*--size ([0-9]+).*/\1/' <<<"$flags")
  [[ $flags == *--oneway* ]] && oneway="--oneway"
  codec=$(sed -nE 's/.*--codec ([a-z]+).*/--codec \1/p' <<<"$flags")
  log=$(mktemp)
  # shellcheck disable=SC2086
  "${server_cpu[@]}" "$bin" load --server --impl "$impl" --port "$port" --size "$size" $oneway $codec >"$log" &
  spid=$!
  for _ in $(seq 50); do grep -q READY "$log" && break; sleep 0.1; done
  # shellcheck disable=SC2086
  "${client_cpu[@]}" "$bin" load --remote "127.0.0.1:$port" --impl raw ${codec:+--count-replies} --seconds "$seconds" --warmup 1 --json $flags >/dev/null
  wait "$spid"
  echo "$name $impl $(grep '^STEADY-JSON' "$log" | cut -d' ' -f2-)" | tee -a "$out"
  rm -f "$log"
}
ab_rounds "$rounds" "$only" "${scenarios[@]}"
ab_summary "$out" pktps cpuSecPerMillion server
rm -f "$out"
