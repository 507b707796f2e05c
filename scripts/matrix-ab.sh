#!/usr/bin/env bash
# matrix-ab.sh: two builds of lifenet, old and new, measured in turn by
# their own `lifenet matrix` (the order alternates each round), and per
# scenario the median over rounds of new/old for lifenet's own rate.
#
#   scripts/matrix-ab.sh OLD_REV [rounds] [scenario-regex] [seconds]
#
# OLD_REV is built in a temporary worktree; the new build is the working
# tree. Defaults: 5 rounds, the codec echo, RPC and one-way rows, 3 s.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: scripts/matrix-ab.sh OLD_REV [rounds] [regex] [seconds]}
rounds=${2:-5}
regex=${3:-'^(tcp-32B-srmp-window-16C|tcp-32B-lengthfield-serial-16C|rpc-noarg-100conn|rpc-noarg-c1|tcp-1KB|tcp-1KB-rt-sync-4C)$'}
seconds=${4:-3}
dir=$(mktemp -d)
trap 'git worktree remove --force "$dir/src" 2>/dev/null || true; rm -rf "$dir"' EXIT
git worktree add -q --detach "$dir/src" "$rev"
(cd "$dir/src/cmd/lifenet" && go build -o "$dir/old" .)
(cd cmd/lifenet && go build -o "$dir/new" .)
for r in $(seq 1 "$rounds"); do
	order="old new"
	[ $((r % 2)) -eq 0 ] && order="new old"
	for b in $order; do
		echo "round $r: $b" >&2
		"$dir/$b" matrix --only "$regex" --rounds 1 --seconds "$seconds" --warmup 1 --out "$dir/$b-$r" >/dev/null 2>&1
	done
done
python3 - "$dir" "$rounds" <<'PY'
import json, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
def rates(b, r):
    j = json.load(open(f"{d}/{b}-{r}/results.json"))
    return {x["scenario"]: x["lifenet"] for x in j["ratios"]}
ratios = {}
for r in range(1, rounds + 1):
    old, new = rates("old", r), rates("new", r)
    for s in old:
        if s in new and old[s]:
            ratios.setdefault(s, []).append(new[s] / old[s])
print("| scenario | new/old median | pairs |")
print("|---|---:|---|")
for s, v in sorted(ratios.items()):
    print(f"| {s} | {statistics.median(v):.3f} | {', '.join(f'{x:.3f}' for x in v)} |")
PY
