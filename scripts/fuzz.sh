#!/usr/bin/env bash
# Runs every fuzz target for a while each. Usage: scripts/fuzz.sh [duration]
set -euo pipefail
cd "$(dirname "$0")/.."
time="${1:-30s}"
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "== $pkg $target ($time)"
    go test -run "^$" -fuzz "^${target}\$" -fuzztime "$time" -fuzzminimizetime 5s "$pkg"
  done
done
