#!/usr/bin/env bash
# connscale.sh: what a held connection costs each server (issue 44's table).
# One server at a time, each started afresh in its own process on a free
# port, under the same client (by default `lifenet fleet`, which samples the
# server's RSS and CPU from /proc through --server-pid):
#   std                goroutine per connection, 64 KiB buffer (cmd/connserve)
#   gnet               gnet v2's echo example (cmd/connserve, Linux)
#   nbio               nbio's echo example (cmd/connserve, Linux)
#   lifenet-transport  lifenet's transport echo (cmd/connserve --impl lifenet)
#   lifenet-codec      lifenet's codec echo over SRMP (cmd/connserve --impl lifenet-codec)
#   lifenet-serve      lifenet serve --max-conns 0 --max-conns-per-ip 0
# The echo servers are driven with --proto echo, the SRMP ones with
# --proto srmp. Each client's JSON report is kept in --out; the script
# prints a markdown table of them (also written to OUT/table.md).
#
#   ./connscale.sh [--conns N] [--servers std,gnet,...] [--timeout S] [--out DIR] [--client 'CMD'] [--lifenet PATH]
#
# Defaults: --conns 10000, all six servers, --timeout 300 (seconds a client
# may run before it is killed and its row marked failed), --out a new
# directory under /tmp, and the lifenet built from ../cmd/lifenet
# (--lifenet: a lifenet binary to use instead, e.g. one of another commit).
# The client command (--client, or CONNSCALE_CLIENT) is split on spaces,
# with {lifenet} (the lifenet used), {addr}, {conns}, {proto}, {pid} (the
# server's PID) and {json} (the report to write)
# replaced; the default is
#   {lifenet} fleet --remote {addr} --conns {conns} --sources 127.0.0.1-127.0.0.2
#   --proto {proto} --heartbeat 10s --duration 30s --burst 60KiB --server-pid {pid} --json {json}
# The table's columns are read from the report with jq (row_jq below).
# Needs Linux (/proc, gnet, nbio) and jq. A server holds up to --conns
# files: keep --conns under the open-file limit (ulimit -n).
set -euo pipefail

cd "$(dirname "$0")"
source ./lib.sh # $tmp, $pids (the server and client running now), cleanup on exit, ready

all_servers=(std gnet nbio lifenet-transport lifenet-codec lifenet-serve)
default_client='{lifenet} fleet --remote {addr} --conns {conns} --sources 127.0.0.1-127.0.0.2 --proto {proto} --heartbeat 10s --duration 30s --burst 60KiB --server-pid {pid} --json {json}'

# row_jq turns one client report into a table row ($name: the server).
# Edit here if the report's fields change.
row_jq='
def n: if . == null then "—" else (. * 10 | round / 10 | tostring) end;
def b: if . == null then "—" else (round | tostring) end;
def after($i): (.server.afterBurst // [])[$i].bytesPerConn | b;
"| \($name) | \(.held)/\(.conns) | \(.server.bytesPerConn | b) | \(after(0)) | \(after(1)) | \(after(2)) | \(after(3)) | \(after(4)) | \(.server.cpuPerHeartbeatUs | n) | \(.rttP99Ms | n) |"'
header='| server | held | B / idle conn | B / conn 1 s after burst | 2 s | 3 s | 4 s | 5 s | heartbeat server CPU µs/msg | heartbeat p99 ms |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|'

name=$(basename "$0")
die2() { echo "$name: $*" >&2; exit 2; }
conns=10000 timeout=300 out="" lifenet="" client=${CONNSCALE_CLIENT:-$default_client}
servers=$(IFS=,; echo "${all_servers[*]}")
while [ $# -gt 0 ]; do
	case "$1" in
	--conns) conns=${2-} ;;
	--servers) servers=${2-} ;;
	--timeout) timeout=${2-} ;;
	--out) out=${2-} ;;
	--client) client=${2-} ;;
	--lifenet) lifenet=${2-} ;;
	-h | --help) sed -n '2,30p' "$0" >&2; exit 2 ;;
	*) die2 "unknown argument $1 (see --help)" ;;
	esac
	[ $# -ge 2 ] || die2 "$1 needs a value"
	shift 2
done
[[ $conns =~ ^[1-9][0-9]*$ && $conns -le 1000000 ]] || die2 "--conns $conns: want 1 to 1000000"
[[ $timeout =~ ^[1-9][0-9]*$ && $timeout -le 86400 ]] || die2 "--timeout $timeout: want 1 to 86400 whole seconds"
IFS=, read -r -a run_list <<<"$servers"
[ ${#run_list[@]} -gt 0 ] || die2 "--servers: name at least one of ${all_servers[*]}"
for s in "${run_list[@]}"; do
	[[ " ${all_servers[*]} " == *" $s "* ]] || die2 "--servers: unknown server $s (want some of ${all_servers[*]})"
done
[ "$(uname -s)" = Linux ] || die2 "needs Linux (/proc, gnet, nbio)"
command -v jq >/dev/null || die2 "needs jq (the table is read from the clients' JSON reports)"
if [ -z "$out" ]; then
	out=$(mktemp -d "${TMPDIR:-/tmp}/connscale.XXXXXX")
else
	mkdir -p "$out"
fi

echo "building into $tmp" >&2
if [ -n "$lifenet" ]; then
	[ -x "$lifenet" ] || die2 "--lifenet $lifenet: not an executable file"
	cp "$lifenet" "$tmp/lifenet"
else
	(cd ../cmd/lifenet && go build -o "$tmp/lifenet" .) # a module of its own
fi
go build -o "$tmp/connserve" ./cmd/connserve
if [ -z "${CONNSCALE_CLIENT:-}" ] && [ "$client" = "$default_client" ] && ! "$tmp/lifenet" fleet -h >/dev/null 2>&1; then
	die2 "this lifenet has no fleet command: pass the client with --client or CONNSCALE_CLIENT"
fi

# A server outlives its client by at most this bound (where it takes one);
# the script kills it by PID in any case.
bound=$((timeout + 60))

# server NAME: set cmd (the server's command line) and proto (the client's).
server() {
	case "$1" in
	std | gnet | nbio) cmd=("$tmp/connserve" --impl "$1" --host 127.0.0.1 --port 0 --seconds "$bound") proto=echo ;;
	lifenet-transport) cmd=("$tmp/connserve" --impl lifenet --host 127.0.0.1 --port 0 --seconds "$bound") proto=echo ;;
	lifenet-codec) cmd=("$tmp/connserve" --impl lifenet-codec --host 127.0.0.1 --port 0 --seconds "$bound") proto=srmp ;;
	lifenet-serve)
		cmd=("$tmp/lifenet" serve --host 127.0.0.1 --port 0 --max-conns 0 --max-conns-per-ip 0 --seconds "$bound") proto=srmp ;;
	esac
}

# stop_all: end this run's processes (by PID) and wait for them.
stop_all() {
	for q in "${pids[@]}"; do kill "$q" 2>/dev/null || true; done
	for q in "${pids[@]}"; do wait "$q" 2>/dev/null || true; done
	pids=()
}

rows=()
for s in "${run_list[@]}"; do
	server "$s"
	: >"$tmp/server.out"
	"${cmd[@]}" >"$tmp/server.out" 2>"$out/$s.server.err" &
	p=$!
	pids=("$p")
	if ! a=$(ready "$s" "$p" "$tmp/server.out" "$out/$s.server.err"); then
		stop_all
		rows+=("| $s | server did not start (see $out/$s.server.err) |||||||||")
		continue
	fi
	json="$out/$s.json"
	rm -f "$json"
	read -r -a words <<<"$client"
	argv=()
	for w in "${words[@]}"; do
		w=${w//\{lifenet\}/$tmp/lifenet}
		w=${w//\{addr\}/$a}
		w=${w//\{conns\}/$conns}
		w=${w//\{proto\}/$proto}
		w=${w//\{pid\}/$p}
		w=${w//\{json\}/$json}
		argv+=("$w")
	done
	echo "$s: server pid $p at $a; client: ${argv[*]}" >&2
	"${argv[@]}" >"$out/$s.client.out" 2>"$out/$s.client.err" &
	c=$!
	pids+=("$c")
	deadline=$((SECONDS + timeout))
	while kill -0 "$c" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 1; done
	note=""
	if kill -0 "$c" 2>/dev/null; then
		kill "$c" 2>/dev/null || true
		note="client killed after --timeout $timeout s"
	fi
	rc=0
	wait "$c" 2>/dev/null || rc=$?
	kill -0 "$p" 2>/dev/null || note="${note:+$note; }the server exited during the run"
	stop_all
	if [ -s "$json" ] && row=$(jq -r --arg name "$s" "$row_jq" "$json" 2>"$tmp/jq.err"); then
		rows+=("$row")
	else
		rows+=("| $s | no report (client exit $rc; see $out/$s.client.err) |||||||||")
	fi
	if [ "$rc" -ne 0 ] || [ -n "$note" ]; then
		echo "$s: client exit $rc${note:+; $note}: $(tail -n 1 "$out/$s.client.err" 2>/dev/null)" >&2
	fi
done

{
	echo "$header"
	printf '%s\n' "${rows[@]}"
} | tee "$out/table.md"
echo "reports in $out" >&2
