#!/usr/bin/env bash
# scaleout.sh: many SRMP sessions on one machine, past one process's file
# limit: K `lifenet serve --reuseport` processes share one port and F
# `lifenet fleet` processes each hold --per sessions from source addresses
# of their own (127.0.0.<10+i>…), with a heartbeat call each --heartbeat.
# It prints each fleet's report line, the servers' summed RSS before and
# with the sessions held, and per session.
#
#   ./scaleout.sh [--servers K] [--fleets F] [--per N] [--heartbeat 10s] [--duration 60s]
#                 [--ramp RATE] [--sample-after S] [--keepalive D]
#
# Defaults: 6 servers, 5 fleets, 19,800 sessions each (99,000), 10 s, 60 s,
# each fleet opening connections as fast as the servers accept (--ramp:
# connections a second per fleet, e.g. 100/s), and the servers' RSS taken
# --sample-after seconds after the fleets start (default: half of
# --duration; with a slow ramp, give the ramp's length plus a little).
# --keepalive is each server's TCP keep-alive period (serve --keepalive;
# 0: off): at a million sessions with a heartbeat a minute, serve's 15 s
# default costs the kernel 100,000 probe packets a second.
# Needs Linux. Every process it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")"
source ./lib.sh # $tmp, $pids, cleanup on exit, ready
servers=6 fleets=5 per=19800 heartbeat=10s duration=60s ramp=0 sample_after= keepalive=
while [ $# -gt 0 ]; do
	case "$1" in
	--servers) servers=${2-} ;;
	--fleets) fleets=${2-} ;;
	--per) per=${2-} ;;
	--heartbeat) heartbeat=${2-} ;;
	--duration) duration=${2-} ;;
	--ramp) ramp=${2-} ;;
	--sample-after) sample_after=${2-} ;;
	--keepalive) keepalive=${2-} ;;
	*) echo "scaleout.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift 2
done
(cd ../cmd/lifenet && go build -o "$tmp/lifenet" .)
rss() { # the summed VmRSS of the server PIDs, in KiB
	local sum=0 p
	for p in "${spids[@]}"; do sum=$((sum + $(awk '/^VmRSS/{print $2}' "/proc/$p/status"))); done
	echo "$sum"
}
port=$((20000 + RANDOM % 20000))
spids=()
for i in $(seq 1 "$servers"); do
	"$tmp/lifenet" serve --reuseport --port "$port" --max-conns 0 --max-conns-per-ip 0 ${keepalive:+--keepalive "$keepalive"} >"$tmp/s$i.out" 2>"$tmp/s$i.err" &
	pids+=($!) spids+=($!)
	ready "serve $i" $! "$tmp/s$i.out" "$tmp/s$i.err" >/dev/null
done
before=$(rss)
echo "servers: ${spids[*]} on 127.0.0.1:$port; RSS before $((before / 1024)) MiB"
fpids=()
for i in $(seq 1 "$fleets"); do
	a=$((10 + 2 * i))
	"$tmp/lifenet" fleet --remote "127.0.0.1:$port" --conns "$per" --sources "127.0.0.$a-127.0.0.$((a + 1))" \
		--heartbeat "$heartbeat" --duration "$duration" --ramp "$ramp" --idle 10s --json "$tmp/f$i.json" >"$tmp/f$i.out" 2>"$tmp/f$i.err" &
	pids+=($!) fpids+=($!)
done
sleep "${sample_after:-$(( ${duration%s} / 2 ))}"
held=$(rss)
echo "with $((fleets * per)) sessions asked: servers' RSS $((held / 1024)) MiB, $(((held - before) * 1024 / (fleets * per))) bytes per session"
rc=0
for i in $(seq 1 "$fleets"); do
	wait "${fpids[$((i - 1))]}" || rc=1
	grep -E "held|heartbeats" "$tmp/f$i.out" | sed "s/^/fleet $i: /"
done
exit $rc
