#!/usr/bin/env bash
# Separate-process A/B of the codec CLIENT: lifenet's codec client vs the
# raw std-net client, each against the same server (the baseline's per-message
# loop, a fresh process per run), alternating which goes first per round.
# Serial rows compare round trips per second (and time per request);
# windowed rows compare client CPU per request (the SUMMARY's cpuPerMsg).
# Prints one line per run: "<scenario> <impl> <SUMMARY-JSON>", then per
# scenario the medians of the per-round lifenet/raw ratios.
# Usage: scripts/client-ab.sh [rounds] [seconds] [scenario-regex]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/ab-lib.sh
source scripts/ab-lib.sh
ab_init "$@"
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
ab_rounds "$rounds" "$only" "${scenarios[@]}"
ab_summary "$out" msgsPerSec cpuPerMsg client
rm -f "$out"
