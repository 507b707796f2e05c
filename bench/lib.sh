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
