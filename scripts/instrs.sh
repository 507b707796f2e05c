#!/usr/bin/env bash
# instrs.sh — the user-space instructions one op of a Go benchmark costs, counted by valgrind's
# callgrind rather than timed, so a busy machine does not move the figure (repeat runs agree to
# about 1-2 % at N of 10,000-50,000).
#
#   scripts/instrs.sh PKG 'BenchmarkRegex$' [N]           e.g. scripts/instrs.sh ./codec 'FrameEcho/format=srmp/impl=codec$' 20000
#   BASE=REV scripts/instrs.sh PKG 'BenchmarkRegex$' [N]  the same at commit REV first, then the work tree
#   TOP=0 ...                                             skip the profile of the hottest functions
#
# Method: the benchmark binary runs under callgrind twice, at N and at 2N iterations, with
# GOMAXPROCS=1 (callgrind runs one thread at a time anyway) and GODEBUG=asyncpreemptoff=1 (the
# preemption signal upsets callgrind). (instructions(2N) - instructions(N)) / N is the cost of one
# more op: setup, teardown and the test binary's start cancel out. The regex must match exactly one
# benchmark (anchor it with $).
#
# Not seen: the kernel (system calls, the TCP stack), cache misses, contention across cores. Use it to
# decide between two versions of user-space code; confirm with timed runs in separate processes.
set -euo pipefail
if [ $# -lt 2 ]; then sed -n '2,17p' "$0"; exit 2; fi
pkg=$1
regex=$2
n=${3:-20000}
command -v valgrind >/dev/null || { echo "instrs.sh: valgrind is needed (apt-get install -y valgrind)" >&2; exit 2; }
work=$(mktemp -d)
cleanup() {
  if [ -d "$work/base" ]; then git worktree remove --force "$work/base" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# collected LABEL ITERATIONS: callgrind's instruction total for one run of the benchmark binary.
collected() {
  local label=$1 iters=$2 log="$work/$1.$2.log"
  GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
    --callgrind-out-file="$work/$label.$iters.out" "$work/$label.test" \
    -test.run '^$' -test.bench "$regex" -test.benchtime "${iters}x" >"$log" 2>&1 || {
    echo "instrs.sh: the benchmark failed under valgrind:" >&2; tail -5 "$log" >&2; exit 1; }
  local matched
  matched=$(grep -c '^Benchmark' "$log" || true)
  if [ "$matched" != 1 ]; then
    echo "instrs.sh: '$regex' matched $matched benchmarks in $pkg; it must match one" >&2
    grep '^Benchmark' "$log" | cut -c1-100 >&2 || true
    exit 1
  fi
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log"
}

# measure LABEL DIR: build PKG's test binary in DIR and print the instructions per op.
measure() {
  local label=$1 dir=$2
  (cd "$dir" && go test -c -o "$work/$label.test" "$pkg") >/dev/null
  local one two
  one=$(cd "$dir/$pkg" && collected "$label" "$n")
  two=$(cd "$dir/$pkg" && collected "$label" "$((2 * n))")
  awk -v l="$label" -v a="$one" -v b="$two" -v n="$n" \
    'BEGIN { printf "%s: %.0f instructions/op (N=%d; %d -> %d)\n", l, (b - a) / n, n, a, b }'
}

if [ -n "${BASE:-}" ]; then
  git worktree add -q --detach "$work/base" "$BASE"
  measure "base-$BASE" "$work/base"
fi
measure "worktree" "$PWD"
if [ "${TOP:-1}" != 0 ]; then
  echo "hottest functions (the 2N run, setup included):"
  callgrind_annotate "$work/worktree.$((2 * n)).out" 2>/dev/null | sed -n '/^Ir/,$p' | sed -n '3,22p'
fi
