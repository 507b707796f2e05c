#!/usr/bin/env bash
# ab.sh: lifenet, Go's net/rpc and grpc-go side by side, in separate
# processes. Builds lifenet (../cmd/lifenet), grpcload and abtable into a
# temporary directory, starts the three servers (lifenet serve, lifenet
# serve --impl netrpc, grpcload --server; each on a free port, read from
# its READY line), runs the three clients one after another for R rounds
# (the order rotates each round), and prints the medians per
# implementation and the ratios lifenet/netrpc and lifenet/grpc.
#
#   ./ab.sh [--conns N] [--inflight K] [--call SHAPE] [--rounds R]
#           [--seconds S] [--warmup W]
#
# Defaults: --conns 1 --inflight 16 --call noarg --rounds 5 --seconds 3
# --warmup 1. One round takes about 3 × (S + W + 0.5) seconds.
set -euo pipefail

conns=1 inflight=16 call=noarg rounds=5 seconds=3 warmup=1
usage() { echo "usage: $0 [--conns N] [--inflight K] [--call noarg|echo16|echo2000|string16|string2000|multi] [--rounds R] [--seconds S] [--warmup W]" >&2; exit 2; }
die2() { echo "ab.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case "$1" in
	--conns) conns=${2-} ;;
	--inflight) inflight=${2-} ;;
	--call) call=${2-} ;;
	--rounds) rounds=${2-} ;;
	--seconds) seconds=${2-} ;;
	--warmup) warmup=${2-} ;;
	-h | --help) usage ;;
	*) die2 "unknown argument $1 (see --help)" ;;
	esac
	[ $# -ge 2 ] || die2 "$1 needs a value"
	shift 2
done
int='^[1-9][0-9]*$' num='^([0-9]+\.?[0-9]*|\.[0-9]+)$'
[[ $conns =~ $int ]] || die2 "--conns $conns: want a positive integer"
[[ $inflight =~ $int ]] || die2 "--inflight $inflight: want a positive integer"
[[ $rounds =~ $int && $rounds -le 100 ]] || die2 "--rounds $rounds: want 1 to 100"
[[ $seconds =~ $num ]] || die2 "--seconds $seconds: want a number of seconds"
[[ $warmup =~ $num ]] || die2 "--warmup $warmup: want a number of seconds"
case "$call" in noarg | echo16 | echo2000 | string16 | string2000 | multi) ;; *) die2 "--call $call: want noarg, echo16, echo2000, string16, string2000 or multi" ;; esac

cd "$(dirname "$0")"
source ./lib.sh # $tmp, $pids, cleanup on exit, ready

echo "building into $tmp" >&2
(cd ../cmd/lifenet && go build -o "$tmp/lifenet" .) # a module of its own
go build -o "$tmp/grpcload" ./cmd/grpcload
go build -o "$tmp/abtable" ./cmd/abtable

# start NAME CMD…: start a server, wait for its READY line, set addr.
start() {
	local name=$1
	shift
	"$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	local pid=$!
	pids+=("$pid")
	addr=$(ready "$name" "$pid" "$tmp/$name.out" "$tmp/$name.err")
}
start lifenet "$tmp/lifenet" serve --host 127.0.0.1 --port 0
a_lifenet=$addr
start netrpc "$tmp/lifenet" serve --impl netrpc --host 127.0.0.1 --port 0
a_netrpc=$addr
start grpc "$tmp/grpcload" --server --host 127.0.0.1 --port 0
a_grpc=$addr
echo "servers: lifenet $a_lifenet, netrpc $a_netrpc, grpc $a_grpc" >&2

shape=(--conns "$conns" --inflight "$inflight" --call "$call" --seconds "$seconds" --warmup "$warmup" --json)
client() {
	case "$1" in
	lifenet) "$tmp/lifenet" rpcload --remote "$a_lifenet" "${shape[@]}" ;;
	netrpc) "$tmp/lifenet" rpcload --impl netrpc --remote "$a_netrpc" "${shape[@]}" ;;
	grpc) "$tmp/grpcload" --remote "$a_grpc" "${shape[@]}" ;;
	esac
}
order=(lifenet netrpc grpc)
field() { sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p" <<<"$line"; } # a number from $line
for r in $(seq "$rounds"); do
	for i in 0 1 2; do
		impl=${order[$(((r - 1 + i) % 3))]}
		if ! client "$impl" >"$tmp/run.out" 2>"$tmp/run.err"; then
			echo "ab.sh: round $r $impl failed:" >&2
			cat "$tmp/run.err" "$tmp/run.out" >&2
			exit 1
		fi
		line=$(grep '^SUMMARY: ' "$tmp/run.out")
		echo "$line" >>"$tmp/summaries"
		echo "round $r/$rounds $impl: $(field callsPerSec) calls/s, P50 $(field p50Us) µs, $(field errors) errors" >&2
	done
done

echo "## $call, $conns conns × $inflight in flight, $rounds rounds of ${seconds}s (+${warmup}s warm-up); medians"
echo
"$tmp/abtable" <"$tmp/summaries"
echo
echo "ratios: lifenet's figure over the other's (calls/s: higher is better for lifenet; the rest: lower is)"
