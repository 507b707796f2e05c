#!/usr/bin/env bash
# The one test command for lifenet: formatting, vet, staticcheck, the
# race-enabled test suite in both normal and lifenet_debug builds, the
# etcd module's tests against an embedded etcd (about 25 s) and its
# failure drill in network namespaces (about 45 s, root only), the hostile
# battery at full size, a short fuzz of every target and a 2-minute
# soak (about 12 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."

STATICCHECK_VERSION=v0.8.2 # honnef.co/go/tools, pinned
TOOLS="$PWD/.tools"

step() { printf '\n== %s\n' "$*"; }

# The workspace (go.work): the library, cmd/lifenet, cmd/lifenet-etcd and
# otel/, modules of their own. "./..." names the library's packages alone
# (a nested module's are not under it, workspace or not), so every step
# names all four; bench/ and etcd/ are outside the workspace and run with
# GOWORK=off.
MODS=(./... ./cmd/lifenet/... ./cmd/lifenet-etcd/... ./otel/...)

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.tools/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet "${MODS[@]}"
go vet -tags lifenet_debug "${MODS[@]}"

step "cross-build and vet (windows, darwin)"
for os in windows darwin; do
  GOOS=$os go build "${MODS[@]}"
  GOOS=$os go vet "${MODS[@]}"
done

step "bench module (grpc-go and net/rpc comparisons; a module of its own so the library never depends on grpc)"
(cd bench && export GOWORK=off && go vet ./... && go test -count=1 -run . ./...)

step "etcd module (registry and resolver on a real embedded etcd; a module of its own so the library never depends on etcd)"
(cd etcd && export GOWORK=off && go vet ./... && go test -race -count=1 -skip '^TestDrill$' ./...)
# The failure drill across hosts in network namespaces (about 45 s; root
# only, it skips otherwise): without -race so that its timings are those
# of a normal build; its figures go to $LIFENET_DRILL_RESULTS
# (docs/scale-out.md, "Failure drills").
(cd etcd && GOWORK=off go test -count=1 -run '^TestDrill$' -v .)

step "staticcheck $STATICCHECK_VERSION"
if [ ! -x "$TOOLS/staticcheck" ] || ! "$TOOLS/staticcheck" -version | grep -q "${STATICCHECK_VERSION#v}"; then
  GOWORK=off GOBIN="$TOOLS" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi
"$TOOLS/staticcheck" "${MODS[@]}"
"$TOOLS/staticcheck" -tags lifenet_debug "${MODS[@]}"
(cd etcd && GOWORK=off "$TOOLS/staticcheck" ./...)

step "prometheus (Debian's package) for the /metrics scrape test in cmd/lifenet"
if ! command -v prometheus >/dev/null; then
  if command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null) ||
      { [ -n "${CI:-}" ] && { echo "apt-get install prometheus failed"; exit 1; }; echo "apt-get install prometheus failed: the Prometheus test will skip"; }
  elif [ -n "${CI:-}" ]; then
    echo "no apt-get: CI needs Debian's prometheus package"; exit 1
  else
    echo "no apt-get and no prometheus on PATH: TestPrometheusScrapesServe will skip"
  fi
fi

step "go test -race (lifenet_debug build: use-after-release checks, poisoning, tracking)"
go test -race -count=1 -tags lifenet_debug "${MODS[@]}"

step "go test -race"
go test -race -count=1 "${MODS[@]}"

step "hostile battery at full size (the race builds above run some items scaled down)"
go test -count=1 ./tests/hostile/...

step "fuzz every target briefly on top of its seed corpus"
./scripts/fuzz.sh 5s

step "soak: 2 minutes of mixed load, churn and faults; fails on growth or no return to baseline"
go run ./cmd/lifenet soak --minutes 2
