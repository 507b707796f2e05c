#!/usr/bin/env bash
# Separate-process A/B of the server: lifenet vs the std-net loop, each
# measured by its own STEADY line (server CPU included) under the same raw
# client. Prints one line per run: "<scenario> <impl> <STEADY-JSON>".
# Usage: scripts/server-ab.sh [rounds] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-4}
bin=$(mktemp -d)/lifenet
go build -o "$bin" ./cmd/lifenet
port=7900
scenarios=(
  "oneway-32B-c4|--oneway --size 32 --clients 4"
  "oneway-32B-c16|--oneway --size 32 --clients 16"
  "oneway-1KB-c4|--oneway --size 1024 --clients 4"
  "oneway-1KB-c16|--oneway --size 1024 --clients 16"
  "echo-1KB-c4|--mode pipeline --size 1024 --clients 4"
  "echo-1KB-c16|--mode pipeline --size 1024 --clients 16"
)
for ((r = 1; r <= rounds; r++)); do
  for sc in "${scenarios[@]}"; do
    name=${sc%%|*}
    flags=${sc#*|}
    for impl in lifenet raw; do
      port=$((port + 1))
      size=$(sed -E 's/.*--size ([0-9]+).*/\1/' <<<"$flags")
      oneway=""
      [[ $flags == *--oneway* ]] && oneway="--oneway"
      log=$(mktemp)
      "$bin" load --server --impl "$impl" --port "$port" --size "$size" $oneway >"$log" &
      spid=$!
      for _ in $(seq 50); do grep -q READY "$log" && break; sleep 0.1; done
      # shellcheck disable=SC2086
      "$bin" load --remote "127.0.0.1:$port" --impl raw --seconds "$seconds" --warmup 1 --json $flags >/dev/null
      wait "$spid"
      echo "$name $impl $(grep '^STEADY-JSON' "$log" | cut -d' ' -f2-)"
      rm -f "$log"
    done
  done
done
