#!/usr/bin/env bash
# observe.sh: what observability costs the server per call, at 100
# connections × 1 call in flight (Bench/NoArg). Three servers take turns,
# each in its own process, started afresh for each run, the order rotating
# per round, all under the same plain SRMP caller (cmd/srmpcall):
#   off       lifenet serve
#   metrics   lifenet serve --metrics 127.0.0.1:0 (the otel module's server
#             interceptor and observers, exported for Prometheus)
#   traces    the same with --traces 0.01 --traces-out none: a server span
#             per call, sampled parent-based at 1 %, made and dropped
# Each server's CPU is read from /proc over the middle of the measured
# window; the table gives medians, and each server's CPU per call over
# off's in the same round, the median of those ratios and their range.
#
#   ./observe.sh [--conns N] [--rounds R] [--seconds S]
#
# Defaults: --conns 100 --rounds 5 --seconds 4. Linux only (/proc).
set -euo pipefail

cd "$(dirname "$0")"
source ./lib.sh # $tmp, $pids, cleanup on exit, ready, window_args, stop, ticks, field
window_args 5 '2,16p' "/proc" "$@" # sets conns, rounds, seconds

echo "building into $tmp" >&2
(cd ../cmd/lifenet && go build -o "$tmp/lifenet" .)
go build -o "$tmp/srmpcall" ./cmd/srmpcall

# start NAME: start NAME's server; wait for its READY line (sets a, p).
start() {
	local cmd=("$tmp/lifenet" serve --host 127.0.0.1 --port 0 --udp=false --seconds 120)
	case "$1" in
	metrics) cmd+=(--metrics 127.0.0.1:0) ;;
	traces) cmd+=(--metrics 127.0.0.1:0 --traces 0.01 --traces-out none) ;;
	esac
	: >"$tmp/server.out"
	"${cmd[@]}" >"$tmp/server.out" 2>"$tmp/server.err" &
	p=$!
	pids=("$p")
	a=$(ready "$1" "$p" "$tmp/server.out" "$tmp/server.err")
}

span=$((seconds - 2))
order=(off metrics traces)
for r in $(seq "$rounds"); do
	for i in 0 1 2; do
		name=${order[$(((r - 1 + i) % 3))]}
		start "$name"
		"$tmp/srmpcall" --remote "$a" --conns "$conns" --seconds "$seconds" --warmup 1 >"$tmp/run.out" 2>"$tmp/run.err" &
		c=$!
		pids+=("$c")
		sleep 2.5
		t0=$(ticks "$p")
		sleep "$span"
		t1=$(ticks "$p")
		failed=0
		wait "$c" || failed=$?
		pids=("$p")
		if [ "$failed" != 0 ]; then
			echo "observe.sh: round $r $name failed:" >&2
			cat "$tmp/run.err" "$tmp/run.out" >&2
			exit 1
		fi
		stop
		rate=$(field callsPerSec)
		[ -n "$rate" ] || { echo "observe.sh: round $r $name: no calls/s in the summary:" >&2; cat "$tmp/run.out" >&2; exit 1; }
		scpu=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v r="$rate" -v s="$span" 'BEGIN{printf "%.3f", (b-a)/hz*1e6/(r*s)}')
		echo "$name $rate $scpu $r" >>"$tmp/runs"
		printf 'round %d/%d %-8s %8.0f calls/s  server %6s µs/call\n' "$r" "$rounds" "$name" "$rate" "$scpu" >&2
	done
done

echo "## observability's cost: $conns conns × 1 in flight, $rounds rounds of ${seconds}s; medians"
echo
awk "$median_awk"'
# ratios: the server CPU per call of name over off'"'"'s in the same round (a pair
# measured minutes apart at most, so that a slow drift of the machine cancels).
function ratios(name, v,   i, n) {
	n = 0
	for (i = 1; i <= runs; i++) if (who[i] == name && ((round[i], "off") in cpu)) v[++n] = val[i, 3] / cpu[round[i], "off"]
	return n
}
{ runs++; who[runs] = $1; val[runs, 2] = $2; val[runs, 3] = $3; round[runs] = $4; cpu[$4, $1] = $3 }
END {
	printf "| server | calls/s | server µs/call | server CPU / off, median of the rounds'"'"' ratios | the rounds'"'"' ratios, lowest–highest |\n|---|---:|---:|---:|---|\n"
	split("off metrics traces", names, " ")
	for (k = 1; k <= 3; k++) {
		m = names[k]
		n = ratios(m, v)
		lo = hi = v[1]
		for (i = 1; i <= n; i++) { if (v[i] < lo) lo = v[i]; if (v[i] > hi) hi = v[i] }
		printf "| %s | %.0f | %.3f | %.3f× | %.2f–%.2f× |\n", m, median(m, 2), median(m, 3), mid(v, n), lo, hi
		delete v
	}
	printf "\ntargets: metrics ≤ 1.05×, metrics and traces at 1 %% ≤ 1.10× off\n"
}' "$tmp/runs"
