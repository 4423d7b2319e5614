#!/usr/bin/env bash
# Measures durable acceptance through `llmfleet serve`: 128 callers
# (`llmfleet-bench load`, a separate process) post batched calls with
# `Prefer: respond-async`, each answered 202 once it is stored, for
# DURATION (default 5s) after a warm-up; first against one serve on SQLite,
# then against 1, 2 and 3 replicas of one fleet on PostgreSQL (a fresh
# schema each), the calls taking the replicas in turn as a round-robin
# balancer sends them. Pools go out at 1,000 requests (--batch-min-size
# and --batch-max-size 1000) to the emulator, so the engine's flushing and
# batch creates are part of the figure. Prints a Markdown table.
#
#   scripts/bench-accept.sh [DURATION] [CALLERS]
#
# LLMFLEET_BENCH_POSTGRES is the server (default: the local one,
# postgres://postgres@127.0.0.1:5432/test?sslmode=disable); its schemas are
# dropped after (with psql, if installed). Needs Go.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${1:-5s}
CALLERS=${2:-128}
PG=${LLMFLEET_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
WORK=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
BIN=$WORK/llmfleet
(cd "$ROOT" && go build -o "$WORK/" ./cmd/llmfleet ./cmd/llmfleet-bench)
export LLMFLEET_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

# started FILE: waits until the process writing FILE printed its URL.
started() {
	for _ in $(seq 200); do
		if grep -qo 'http://[^ ]*' "$1" 2>/dev/null; then
			grep -o 'http://[^ ]*' "$1" | head -1
			return
		fi
		sleep 0.05
	done
	echo "did not start: $(cat "$1" "$1.err" 2>/dev/null)" >&2
	exit 1
}

"$BIN" emulate --listen 127.0.0.1:0 >"$WORK/emu.out" 2>"$WORK/emu.err" &
PIDS+=($!)
EMU=$(started "$WORK/emu.out")

# run NAME DB REPLICAS: one measurement.
run() {
	local name=$1 db=$2 n=$3 urls="" pids=()
	for i in $(seq "$n"); do
		"$BIN" serve --listen 127.0.0.1:0 --anthropic-url "$EMU" --db "$db" --replica-name "r$i" \
			--access-log=false --batch-min-size 1000 --batch-max-size 1000 \
			>"$WORK/serve$i.out" 2>"$WORK/serve$i.out.err" &
		pids+=($!)
		urls+=${urls:+,}$(started "$WORK/serve$i.out")
	done
	local out
	out=$("$BIN-bench" load --url "$urls" --concurrency "$CALLERS" --duration "$DURATION" \
		--header 'Prefer: respond-async' --header 'llmfleet-route: batch' --header 'llmfleet-latency-budget-ms: 86400000')
	kill -TERM "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null || true
	field() { echo "$out" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
	awk -v name="$name" -v n="$n" -v rps="$(field req_per_s)" -v p50="$(field p50_us)" -v p99="$(field p99_us)" -v e="$(field errors)" \
		'BEGIN { printf "| %s | %s | %d | %.1f ms | %.1f ms | %s |\n", name, n, rps, p50 / 1000, p99 / 1000, e }'
}

echo "| store | replicas | accepted req/s | p50 | p99 | errors |"
echo "|---|---|---|---|---|---|"
run SQLite "$WORK/llmfleet.db" 1
for n in 1 2 3; do
	schema=bench_$(date +%s)_$n
	sep='?'
	[[ $PG == *\?* ]] && sep='&'
	run PostgreSQL "$PG${sep}search_path=$schema" "$n"
	if command -v psql >/dev/null; then
		psql "$PG" -qc "DROP SCHEMA $schema CASCADE" >/dev/null 2>&1 || true
	fi
done
