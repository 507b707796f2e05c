#!/usr/bin/env bash
# The one test command for lifenet, exactly what CI runs (.ci/run):
# formatting, vet, staticcheck, the race-enabled test suite in the
# lifenet_debug build, the whole suite in the normal build without the
# race detector (the hostile battery at full size, the Prometheus scrape),
# the etcd module's tests against an embedded etcd (about 25 s) and its
# failure drill in network namespaces (about 45 s, root only), a 2-minute
# soak and then a short fuzz of every target. Figures on 2 cores in
# README.md ("Quick start").
#
# LIFENET_INSTALL=1 (set by .ci/run) lets it install what a test needs
# and the machine lacks (Debian's prometheus, through apt-get); without
# it nothing is installed and a test whose tool is missing skips.
# LIFENET_VERBOSE=1 shows each package's test output (go test -v).
set -euo pipefail
cd "$(dirname "$0")/.."

STATICCHECK_VERSION=v0.8.2 # honnef.co/go/tools, pinned
TOOLS="$PWD/.tools"

# Files the steps write (the drill's figures, the soak's log) go to a
# directory of this run's own, removed at the end.
work=$(mktemp -d "${TMPDIR:-/tmp}/lifenet-test.XXXXXX")
cleanup() {
  rm -rf "$work"
}
trap cleanup EXIT

# Each step's header says when it started, in seconds into the run.
step() { printf '\n== %s   [at %ds]\n' "$*" "$SECONDS"; }

vflag=()
if [ -n "${LIFENET_VERBOSE:-}" ]; then vflag=(-v); fi

# The workspace (go.work): the library, cmd/lifenet, cmd/lifenet-etcd and
# otel/, modules of their own. "./..." names the library's packages alone
# (a nested module's are not under it, workspace or not), so every step
# names all four; bench/ and etcd/ are outside the workspace and run with
# GOWORK=off.
MODS=(./... ./cmd/lifenet/... ./cmd/lifenet-etcd/... ./otel/...)

# The build tags: lifenet_debug adds only constants and an init
# (`grep -rl '//go:build lifenet_debug'`: packet's and rpc's debug
# switches, the tests' debugBuild) that turn on the use-after-release
# checks. The race suite runs in that build, where misuse panics at once;
# everything else (vet, staticcheck, the cross-builds, the normal-build
# suite, fuzz, soak) compiles and runs the normal build, as shipped. The
# compiler checks the debug build's files as the race suite builds them,
# and go test vets them.

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.tools/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet "${MODS[@]}"

step "cross-build and vet (windows, darwin)"
for os in windows darwin; do
  GOOS=$os go build "${MODS[@]}"
  GOOS=$os go vet "${MODS[@]}"
done

step "staticcheck $STATICCHECK_VERSION"
if [ ! -x "$TOOLS/staticcheck" ] || ! "$TOOLS/staticcheck" -version | grep -q "${STATICCHECK_VERSION#v}"; then
  GOWORK=off GOBIN="$TOOLS" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi
"$TOOLS/staticcheck" "${MODS[@]}"
(cd etcd && GOWORK=off "$TOOLS/staticcheck" ./...)

step "bench module (grpc-go and net/rpc comparisons; a module of its own so the library never depends on grpc)"
(cd bench && export GOWORK=off && go vet ./... && go test -count=1 "${vflag[@]}" -run . ./...)

step "etcd module (registry and resolver on a real embedded etcd; a module of its own so the library never depends on etcd)"
(cd etcd && export GOWORK=off && go vet ./... && go test -race -count=1 "${vflag[@]}" -skip '^TestDrill$' ./...)
# The failure drill across hosts in network namespaces (about 45 s; root
# only, it skips otherwise): without -race so that its timings are those
# of a normal build; its figures are logged here and written to
# $LIFENET_DRILL_RESULTS if set, else to this run's directory
# (docs/scale-out.md, "Failure drills").
(cd etcd && LIFENET_DRILL_RESULTS="${LIFENET_DRILL_RESULTS:-$work/drill-results.txt}" GOWORK=off go test -count=1 -run '^TestDrill$' -v .)

step "prometheus (Debian's package) for the /metrics scrape test in cmd/lifenet"
if command -v prometheus >/dev/null; then
  echo "prometheus: $(command -v prometheus)"
elif [ -n "${LIFENET_INSTALL:-}" ]; then
  if command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null) ||
      { echo "apt-get install prometheus failed"; exit 1; }
  else
    echo "LIFENET_INSTALL is set but there is no apt-get: install Debian's prometheus package"; exit 1
  fi
else
  echo "no prometheus on PATH: TestPrometheusScrapesServe will skip (fails under CI); LIFENET_INSTALL=1 installs it with apt-get"
fi

step "go test -race, lifenet_debug build (use-after-release checks, poisoning, tracking; the hostile battery scaled down)"
go test -race -count=1 "${vflag[@]}" -tags lifenet_debug "${MODS[@]}"

step "go test, normal build without the race detector (the hostile battery at full size, the Prometheus scrape)"
go test -count=1 "${vflag[@]}" "${MODS[@]}"

# The soak and the fuzzing run one after the other: beside the soak, the
# fuzzing engine's own time limits were missed often enough (a target
# ending with "context deadline exceeded" and no failing input) to make
# a run red for nothing.
step "soak (2 minutes of mixed load, churn and faults; fails on growth or no return to baseline)"
soak_flags=(--minutes 2)
if [ -n "${LIFENET_VERBOSE:-}" ]; then soak_flags+=(--verbose); fi
go build -o "$work/lifenet" ./cmd/lifenet
soak_rc=0
"$work/lifenet" soak "${soak_flags[@]}" >"$work/soak.log" 2>&1 || soak_rc=$?
cat "$work/soak.log"
if [ "$soak_rc" -ne 0 ]; then echo "soak failed (exit $soak_rc)"; exit 1; fi

step "fuzz every target briefly on top of its seed corpus (one worker each)"
LIFENET_FUZZ_WORKERS=1 ./scripts/fuzz.sh 5s

step "all passed"
