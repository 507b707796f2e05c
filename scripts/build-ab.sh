#!/usr/bin/env bash
# Build against build: the lifenet codec server of REV (a commit) and of
# the working tree, each in its own process under the same raw client,
# taking turns (the order alternates per round); with SIDE=client, the
# lifenet codec client of each build against the same raw server. Prints
# each run's JSON, then per scenario the medians of the per-round tree/REV
# ratios of frames/s and of CPU per frame (the server's, or the client's).
# Usage: [SIDE=client] scripts/build-ab.sh REV [rounds] [seconds] [scenario-regex]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/ab-lib.sh
source scripts/ab-lib.sh
rev=${1:?usage: scripts/build-ab.sh REV [rounds] [seconds] [regex]}
shift
ab_init "$@" # builds the working tree's CLI in $bin
ab_a=tree ab_b=base side=${SIDE:-server}
dir=$(dirname "$bin")
git worktree add -q --detach "$dir/src" "$rev"
(cd "$dir/src" && go build -o "$dir/base" ./cmd/lifenet)
git worktree remove --force "$dir/src"
cp "$bin" "$dir/tree"
scenarios=(
  "srmp-c16|--codec srmp --size 32 --clients 16 --window 255"
  "srmp-c1|--codec srmp --size 32 --clients 1 --window 255"
  "lf-c16|--codec lengthfield --size 32 --clients 16 --window 256"
  "lf-c1|--codec lengthfield --size 32 --clients 1 --window 256"
)
out=$dir/out port=8700
run() { # scenario-name build flags
  local name=$1 build=$2 flags=$3 codec log spid summary server=$2 client=tree simpl=lifenet cimpl=raw count=--count-replies
  if [[ $side == client ]]; then server=tree client=$2 simpl=raw cimpl=lifenet count=; fi
  port=$((port + 1))
  codec=$(sed -nE 's/.*--codec ([a-z]+).*/--codec \1/p' <<<"$flags")
  log=$dir/log
  # shellcheck disable=SC2086
  "$dir/$server" load --server --impl "$simpl" --port "$port" --size 32 $codec >"$log" 2>&1 &
  spid=$!
  for _ in $(seq 50); do grep -q READY "$log" && break; sleep 0.1; done
  # shellcheck disable=SC2086
  summary=$("$dir/$client" load --remote "127.0.0.1:$port" --impl "$cimpl" $count --mode pipeline --seconds "$seconds" --warmup 1 --json $flags | sed -n 's/^SUMMARY: //p')
  wait "$spid" || true
  if [[ $side == client ]]; then
    echo "$name $build $summary" | tee -a "$out"
  else
    echo "$name $build $(sed -n 's/^STEADY-JSON //p' "$log")" | tee -a "$out"
  fi
}
ab_rounds "$rounds" "$only" "${scenarios[@]}"
if [[ $side == client ]]; then
  ab_summary "$out" msgsPerSec cpuPerMsg client
else
  ab_summary "$out" pktps cpuSecPerMillion server
fi
rm -rf "$dir"
