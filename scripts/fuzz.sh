#!/usr/bin/env bash
# Runs every fuzz target in the module for a while each, on top of its seed
# corpus (testdata/fuzz). Usage: scripts/fuzz.sh [duration]  (default 30s;
# CI passes 5s). Targets are the Fuzz functions of each package's test
# files in this build (`go list`), so a new one is fuzzed without editing
# this script. LIFENET_FUZZ_WORKERS sets the workers per target (go test
# -parallel; default one per CPU; scripts/test.sh uses 1). A failure
# prints the target's output and leaves the crasher in testdata/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
time="${1:-30s}"
n=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
workers=()
if [ -n "${LIFENET_FUZZ_WORKERS:-}" ]; then workers=(-parallel "$LIFENET_FUZZ_WORKERS"); fi
fuzz_one() {
  go test -run '^$' -fuzz "^${2}\$" -fuzztime "$time" -fuzzminimizetime 5s "${workers[@]}" "$1" </dev/null >"$log" 2>&1
}
# Each package's directory and test files, then its Fuzz functions: read
# from the sources rather than listed by building every test binary.
targets() {
  (cd "$1" && [ $# -gt 1 ] && shift && sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$@" | sort -u) || true
}
while IFS='|' read -r pkg dir files; do
  [ -n "$files" ] || continue
  # shellcheck disable=SC2086 # the file names hold no spaces
  for target in $(targets "$dir" $files); do
    printf '%-50s %-28s ' "$pkg" "$target"
    if ! fuzz_one "$pkg" "$target"; then
      # go test -fuzz can end with "context deadline exceeded" when the
      # time runs out while it minimises a new input, or while its worker
      # is slow to answer on a loaded machine (the soak runs beside it),
      # though nothing failed (no "Failing input"): run that target again,
      # up to twice more.
      again=0
      for retry in 2 3; do
        grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input' "$log" || break
        if fuzz_one "$pkg" "$target"; then again=$retry; break; fi
      done
      if [ "$again" -gt 0 ]; then
        echo "ok (run $again)"; n=$((n + 1)); continue
      fi
      echo FAIL; cat "$log"; exit 1
    fi
    echo ok
    n=$((n + 1))
  done
done < <(go list -f '{{.ImportPath}}|{{.Dir}}|{{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' ./...)
echo "fuzzed $n targets for $time each"
