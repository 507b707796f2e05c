#!/usr/bin/env bash
# floor.sh: what one call costs at the floor, 100 connections × 1 in flight.
# Five runs take turns, each server in its own process, started afresh for
# each run, the order rotating per round:
#   raw       the standard library's goroutine-per-connection echo
#             (lifenet load --server --impl raw) under cmd/srmpcall, a
#             plain std SRMP caller: the floor of both sides
#   epoll     a hand-rolled event-loop echo (cmd/epollecho: level-triggered
#             epoll, one read per event, the gnet/netpoll design), srmpcall
#   lifenet/std  lifenet serve (Bench/NoArg) under srmpcall: lifenet's
#             server against the raw echo under the same client
#   lifenet   lifenet serve under its own client (lifenet rpcload)
#   netrpc    Go's net/rpc (lifenet serve --impl netrpc) under rpcload
# Each server's CPU is read from /proc over the middle of the measured
# window; the table gives medians and the ratios the rpc issue's targets
# are written in.
#
#   ./floor.sh [--conns N] [--rounds R] [--seconds S]
#
# Defaults: --conns 100 --rounds 3 --seconds 4. Linux only (/proc, epoll).
set -euo pipefail

cd "$(dirname "$0")"
source ./lib.sh # $tmp, $pids (here the server and client running now), cleanup on exit, ready
window_args 3 '2,20p' "/proc and epoll" "$@" # sets conns, rounds, seconds

echo "building into $tmp" >&2
(cd ../cmd/lifenet && go build -o "$tmp/lifenet" .) # a module of its own
go build -o "$tmp/epollecho" ./cmd/epollecho
go build -o "$tmp/srmpcall" ./cmd/srmpcall

# start NAME: start NAME's server; wait for its READY line (sets a, p).
start() {
	local cmd
	case "$1" in
	raw) cmd=("$tmp/lifenet" load --server --impl raw --host 127.0.0.1 --port 0) ;;
	epoll) cmd=("$tmp/epollecho" --seconds 120) ;;
	lifenet | lifenet/std) cmd=("$tmp/lifenet" serve --host 127.0.0.1 --port 0 --seconds 120) ;;
	netrpc) cmd=("$tmp/lifenet" serve --impl netrpc --host 127.0.0.1 --port 0 --seconds 120) ;;
	esac
	: >"$tmp/server.out" # no READY line of an earlier run
	"${cmd[@]}" >"$tmp/server.out" 2>"$tmp/server.err" & # $! is the server itself, whose CPU is read
	p=$!
	pids=("$p")
	a=$(ready "$1" "$p" "$tmp/server.out" "$tmp/server.err")
}
# client NAME: run NAME's client in place of the calling (sub)shell (exec:
# started with &, $! is the client itself, which cleanup can then kill).
client() {
	local warm=(--seconds "$seconds" --warmup 1 --json)
	case "$1" in
	raw | epoll | lifenet/std) exec "$tmp/srmpcall" --remote "$a" --conns "$conns" --seconds "$seconds" --warmup 1 ;;
	lifenet) exec "$tmp/lifenet" rpcload --remote "$a" --conns "$conns" --inflight 1 --call noarg "${warm[@]}" ;;
	netrpc) exec "$tmp/lifenet" rpcload --impl netrpc --remote "$a" --conns "$conns" --inflight 1 --call noarg "${warm[@]}" ;;
	esac
}

# One run: a fresh server, the client in the background, the server's
# ticks at 1.5 s into the measured window and 0.5 s before its end.
span=$((seconds - 2))
order=(raw epoll lifenet/std lifenet netrpc)
for r in $(seq "$rounds"); do
	for i in 0 1 2 3 4; do
		name=${order[$(((r - 1 + i) % 5))]}
		start "$name"
		client "$name" >"$tmp/run.out" 2>"$tmp/run.err" &
		c=$!
		pids+=("$c")
		sleep 2.5
		t0=$(ticks "$p")
		sleep "$span"
		t1=$(ticks "$p")
		failed=0
		wait "$c" || failed=$?
		pids=("$p") # the client has been reaped
		if [ "$failed" != 0 ]; then
			echo "floor.sh: round $r $name failed:" >&2
			cat "$tmp/run.err" "$tmp/run.out" >&2
			exit 1
		fi
		stop
		rate=$(field callsPerSec)
		ccpu=$(field clientCpuUsPerCall)
		errs=$(field errors)
		if [ -z "$rate" ] || [ -z "$ccpu" ] || [ "${errs:-0}" != 0 ]; then
			echo "floor.sh: round $r $name: no calls/s or client CPU in its summary, or calls failed:" >&2
			cat "$tmp/run.out" >&2
			exit 1
		fi
		scpu=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v r="$rate" -v s="$span" 'BEGIN{printf "%.2f", (b-a)/hz*1e6/(r*s)}')
		echo "$name $rate $scpu $ccpu" >>"$tmp/runs"
		printf 'round %d/%d %-11s %8.0f calls/s  server %5s µs/call  client %5s µs/call\n' "$r" "$rounds" "$name" "$rate" "$scpu" "$ccpu" >&2
	done
done

echo "## the floor: $conns conns × 1 in flight, $rounds rounds of ${seconds}s; medians"
echo
awk "$median_awk"'
{ runs++; who[runs] = $1; val[runs, 2] = $2; val[runs, 3] = $3; val[runs, 4] = $4 }
END {
	printf "| server | calls/s | server µs/call | client µs/call |\n|---|---:|---:|---:|\n"
	split("raw epoll lifenet/std lifenet netrpc", names, " ")
	for (k = 1; k <= 5; k++) {
		m = names[k]
		rate[m] = median(m, 2); srv[m] = median(m, 3); cli[m] = median(m, 4)
		printf "| %s | %.0f | %.2f | %.2f |\n", m, rate[m], srv[m], cli[m]
	}
	printf "\nlifenet/raw calls/s %.2f× (target ≥ 0.9×); lifenet/netrpc calls/s %.2f× (target ≥ 1.4×), server CPU %.2f× (target ≤ 0.6×)\n", rate["lifenet"] / rate["raw"], rate["lifenet"] / rate["netrpc"], srv["lifenet"] / srv["netrpc"]
	printf "the floor: raw/netrpc calls/s %.2f×, server CPU %.2f×; epoll/raw server CPU %.2f×\n", rate["raw"] / rate["netrpc"], srv["raw"] / srv["netrpc"], srv["epoll"] / srv["raw"]
	printf "under one client: lifenet/raw server CPU %.2f×; lifenet client/srmpcall client CPU %.2f×\n", srv["lifenet/std"] / srv["raw"], cli["lifenet"] / cli["raw"]
}' "$tmp/runs"
