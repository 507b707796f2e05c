#!/usr/bin/env bash
# Runs every fuzz target in the module for a short, fixed time (FUZZTIME,
# default 5s each) on top of its seed corpus (testdata/fuzz). Targets are
# found with `go test -list`, so a new Fuzz function is fuzzed without
# editing this script. A failure leaves the crasher in testdata/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-5s}
n=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    printf '%-50s %s ' "$pkg" "$target"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" >"$log" 2>&1 || {
      echo FAIL; cat "$log"; exit 1
    }
    echo ok
    n=$((n + 1))
  done
done
echo "fuzzed $n targets for $FUZZTIME each"
