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

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.tools/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...
go vet -tags lifenet_debug ./...

step "cross-build and vet (windows, darwin)"
for os in windows darwin; do
  GOOS=$os go build ./...
  GOOS=$os go vet ./...
done

step "bench module (grpc-go and net/rpc comparisons; a module of its own so the library never depends on grpc)"
(cd bench && go vet ./... && go test -count=1 -run . ./...)

step "etcd module (registry and resolver on a real embedded etcd; a module of its own so the library never depends on etcd)"
(cd etcd && go vet ./... && go test -race -count=1 -skip '^TestDrill$' ./...)
# The failure drill across hosts in network namespaces (about 45 s; root
# only, it skips otherwise): without -race so that its timings are those
# of a normal build; its figures go to $LIFENET_DRILL_RESULTS
# (docs/scale-out.md, "Failure drills").
(cd etcd && go test -count=1 -run '^TestDrill$' -v .)

step "otel module (metrics and traces through the rpc interceptors; a module of its own so the library never depends on OpenTelemetry)"
(cd otel && go vet ./... && go test -race -count=1 ./...)

step "staticcheck $STATICCHECK_VERSION"
if [ ! -x "$TOOLS/staticcheck" ] || ! "$TOOLS/staticcheck" -version | grep -q "${STATICCHECK_VERSION#v}"; then
  GOBIN="$TOOLS" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi
"$TOOLS/staticcheck" ./...
"$TOOLS/staticcheck" -tags lifenet_debug ./...
(cd etcd && "$TOOLS/staticcheck" ./...)
(cd otel && "$TOOLS/staticcheck" ./...)

step "go test -race (lifenet_debug build: use-after-release checks, poisoning, tracking)"
go test -race -count=1 -tags lifenet_debug ./...

step "go test -race"
go test -race -count=1 ./...

step "hostile battery at full size (the race builds above run some items scaled down)"
go test -count=1 ./tests/hostile/...

step "fuzz every target briefly on top of its seed corpus"
./scripts/fuzz.sh 5s

step "soak: 2 minutes of mixed load, churn and faults; fails on growth or no return to baseline"
go run ./cmd/lifenet soak --minutes 2
