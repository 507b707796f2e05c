#!/usr/bin/env bash
# Runs every fuzz target in the module for a while each, on top of its seed
# corpus (testdata/fuzz). Usage: scripts/fuzz.sh [duration]  (default 30s;
# CI passes 5s). Targets are found with `go test -list`, so a new Fuzz
# function is fuzzed without editing this script. A failure prints the
# target's output and leaves the crasher in testdata/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
time="${1:-30s}"
n=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    printf '%-50s %-28s ' "$pkg" "$target"
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$time" -fuzzminimizetime 5s "$pkg" >"$log" 2>&1; then
      echo FAIL; cat "$log"; exit 1
    fi
    echo ok
    n=$((n + 1))
  done
done
echo "fuzzed $n targets for $time each"
