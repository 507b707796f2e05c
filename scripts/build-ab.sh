#!/usr/bin/env bash
# Build against build: the lifenet codec server of REV (a commit) and of
# the working tree, each in its own process under the same raw client,
# taking turns (the order alternates per round); with SIDE=client, the
# lifenet codec client of each build against the same raw server. Prints
# each run's JSON, then per scenario the medians of the per-round tree/REV
# ratios of frames/s and of CPU per frame (server's, or client's).
# Usage: [SIDE=client] scripts/build-ab.sh REV [rounds] [seconds] [scenario-regex]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: scripts/build-ab.sh REV [rounds] [seconds] [regex]}
rounds=${2:-4} seconds=${3:-4} only=${4:-.}
dir=$(mktemp -d)
git worktree add -q --detach "$dir/src" "$rev"
(cd "$dir/src" && go build -o "$dir/base" ./cmd/lifenet)
git worktree remove --force "$dir/src"
go build -o "$dir/tree" ./cmd/lifenet
scenarios=(
  "srmp-c16|--codec srmp --size 32 --clients 16 --window 255"
  "srmp-c1|--codec srmp --size 32 --clients 1 --window 255"
  "lf-c16|--codec lengthfield --size 32 --clients 16 --window 256"
  "lf-c1|--codec lengthfield --size 32 --clients 1 --window 256"
)
out=$dir/out port=8700 side=${SIDE:-server}
run() { # name build flags
  local name=$1 build=$2 flags=$3 codec log spid summary server=$2 client=tree simpl=lifenet cimpl=raw
  if [[ $side == client ]]; then server=tree client=$2 simpl=raw cimpl=lifenet; fi
  port=$((port + 1))
  codec=$(sed -nE 's/.*--codec ([a-z]+).*/--codec \1/p' <<<"$flags")
  log=$dir/log
  # shellcheck disable=SC2086
  "$dir/$server" load --server --impl "$simpl" --port "$port" --size 32 $codec >"$log" 2>&1 &
  spid=$!
  for _ in $(seq 50); do grep -q READY "$log" && break; sleep 0.1; done
  # shellcheck disable=SC2086
  summary=$("$dir/$client" load --remote "127.0.0.1:$port" --impl "$cimpl" --mode pipeline --seconds "$seconds" --warmup 1 --json $flags | sed -n 's/^SUMMARY: //p')
  wait "$spid" || true
  if [[ $side == client ]]; then
    echo "$name $build $summary" | tee -a "$out"
  else
    echo "$name $build $(sed -n 's/^STEADY-JSON //p' "$log")" | tee -a "$out"
  fi
}
for ((r = 1; r <= rounds; r++)); do
  order=(base tree)
  ((r % 2 == 0)) && order=(tree base)
  for sc in "${scenarios[@]}"; do
    name=${sc%%|*}
    [[ $name =~ $only ]] || continue
    for b in "${order[@]}"; do run "$name" "$b" "${sc#*|}"; done
  done
done
awk '
  function field(k,   m) { return match($0, "\"" k "\":[0-9.e+-]+") ? substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3) + 0 : 0 }
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  { k = $1 SUBSEP $2; i = ++cnt[k]; rate[k, i] = field("pktps") + field("msgsPerSec"); cpu[k, i] = field("cpuSecPerMillion") + field("cpuPerMsg"); if (!($1 in seen)) { seen[$1] = 1; names[++ns] = $1 } }
  END {
    printf "\n%-10s %6s  %18s  %18s  %s\n", "scenario", "rounds", "rate tree/base", "CPU/frame tree/base", "per-round CPU ratios"
    for (s = 1; s <= ns; s++) {
      name = names[s]; n = cnt[name, "tree"] < cnt[name, "base"] ? cnt[name, "tree"] : cnt[name, "base"]; list = ""
      for (i = 1; i <= n; i++) { t[i] = rate[name, "tree", i] / rate[name, "base", i]; c[i] = cpu[name, "tree", i] / cpu[name, "base", i]; list = list sprintf(" %.3f", c[i]) }
      printf "%-10s %6d  %18.3f  %18.3f  %s\n", name, n, median(t, n), median(c, n), list
    }
  }' "$out"
rm -rf "$dir"
