#!/usr/bin/env bash
# Runs the benchmarks with allocation counts. Usage:
#   scripts/bench.sh [regexp] [count]     e.g. scripts/bench.sh 'BufferCost' 5
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench "${1:-.}" -benchmem -count "${2:-1}" ./...
