# lib.sh: what the end-to-end scripts share. Source it after setting NAME
# (the script's name in its last line); it makes a work directory $WORK,
# removed on exit with every process whose pid is in PIDS, and defines
# pass, fail, die and wait_addr.

WORK=$(mktemp -d "${TMPDIR:-/tmp}/llmfleet-$NAME.XXXXXX")
PIDS=()
FAILED=0

cleanup() {
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pass() { echo "PASS $*"; }
fail() {
	echo "FAIL $*"
	FAILED=$((FAILED + 1))
}
# die fails, shows the tail of every log in $WORK, and exits.
die() {
	fail "$*"
	for f in "$WORK"/*.log; do
		[ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }
	done
	echo "$NAME: FAIL ($FAILED failed)"
	exit 1
}

# wait_addr FILE PREFIX: the http://host:port a server printed after PREFIX.
wait_addr() {
	local file=$1 prefix=$2 i
	for i in $(seq 1 100); do
		if addr=$(grep -o "$prefix http://[0-9.:]*" "$file" 2>/dev/null | grep -o 'http://.*'); then
			echo "$addr"
			return 0
		fi
		sleep 0.1
	done
	return 1
}
