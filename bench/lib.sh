# shellcheck shell=bash
# lib.sh: what ab.sh and floor.sh share; sourced, not run. It makes $tmp,
# kills the processes listed in $pids and removes $tmp on exit.

# bench/ is a module of its own, outside the repository's go.work.
export GOWORK=off
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ready NAME PID OUT ERR: wait for the READY line that server NAME (process
# PID) writes to OUT and print its address (without tcp://); if it exits or
# takes 10 s, show its stderr (ERR) and fail.
ready() {
	local name=$1 pid=$2 out=$3 err=$4 a
	for _ in $(seq 100); do
		a=$(awk '/^READY /{print $2; exit}' "$out" 2>/dev/null || true)
		if [ -n "$a" ]; then
			echo "${a#tcp://}"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "$(basename "$0"): the $name server did not start:" >&2
	cat "$err" >&2
	return 1
}

# window_args ROUNDS HELP NEEDS ARGS...: parse the measuring scripts' shared
# flags into conns (default 100), rounds (default ROUNDS) and seconds
# (default 4); --help prints the lines HELP (a sed range) of the script.
# NEEDS names what a non-Linux machine lacks.
window_args() {
	local name help=$2 needs=$3
	name=$(basename "$0")
	rounds=$1 conns=100 seconds=4
	shift 3
	die2() { echo "$name: $*" >&2; exit 2; }
	while [ $# -gt 0 ]; do
		case "$1" in
		--conns) conns=${2-} ;;
		--rounds) rounds=${2-} ;;
		--seconds) seconds=${2-} ;;
		-h | --help) sed -n "$help" "$0" >&2; exit 2 ;;
		*) die2 "unknown argument $1 (see --help)" ;;
		esac
		[ $# -ge 2 ] || die2 "$1 needs a value"
		shift 2
	done
	[[ $conns =~ ^[1-9][0-9]*$ ]] || die2 "--conns $conns: want a positive integer"
	[[ $rounds =~ ^[1-9][0-9]*$ && $rounds -le 100 ]] || die2 "--rounds $rounds: want 1 to 100"
	[[ $seconds =~ ^[1-9][0-9]*$ && $seconds -ge 3 && $seconds -le 60 ]] || die2 "--seconds $seconds: want 3 to 60 whole seconds"
	[ "$(uname -s)" = Linux ] || die2 "needs Linux ($needs)"
}

# stop: end the server started last (its PID in $p).
stop() {
	kill "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	pids=()
}

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # a process's user + system clock ticks
hz=$(getconf CLK_TCK)
field() { sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p" "$tmp/run.out"; } # a number of the run's summary

# median_awk: awk functions for the scripts' summaries, over rows read as
# runs, who[i] (the server's name) and val[i, col]: mid(v, n), the median of
# v[1..n] (sorted in place), and median(name, col), the median of name's
# rows in column col.
median_awk='
function mid(v, n,   i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function median(name, col,   n, i, v) {
	n = 0
	for (i = 1; i <= runs; i++) if (who[i] == name) v[++n] = val[i, col]
	return mid(v, n)
}
'
