#!/usr/bin/env bash
# Measures durable acceptance through `llmfleet serve`: 128 callers
# (`llmfleet-bench load`, a separate process) post batched calls with
# `Prefer: respond-async`, each answered 202 once it is stored, for
# DURATION (default 5s) after a warm-up; first against one serve on SQLite,
# then against 1, 2 and 3 replicas of one fleet on PostgreSQL (a fresh
# schema each), the calls taking the replicas in turn as a round-robin
# balancer sends them. Pools go out at 1,000 requests (--batch-min-size
# and --batch-max-size 1000) to the emulator, so the engine's flushing and
# batch creates are part of the figure. Prints a Markdown table; the CPU
# column is the serve processes' CPU time (user and system) per request
# answered, the warm-up's included.
#
#   scripts/bench-accept.sh [DURATION] [CALLERS]
#
# LLMFLEET_BENCH_POSTGRES is the server (default: the local one,
# postgres://postgres@127.0.0.1:5432/test?sslmode=disable); its schemas are
# dropped after (with psql, if installed). LLMFLEET_BENCH_STORES picks the
# stores (default "sqlite postgres").
#
# Side by side: LLMFLEET_BENCH_SERVE="old=/tmp/old/llmfleet new=/tmp/new/llmfleet"
# runs each named serve binary in turn (old, new, then new, old, ...) for
# LLMFLEET_BENCH_ROUNDS rounds (default 3) on every store (one replica),
# with the same emulator and load generator (this tree's), and prints each
# binary's median after the rounds. Needs Go.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${1:-5s}
CALLERS=${2:-128}
PG=${LLMFLEET_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
STORES=${LLMFLEET_BENCH_STORES:-sqlite postgres}
ROUNDS=${LLMFLEET_BENCH_ROUNDS:-3}
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

# cputicks PID...: the processes' CPU time so far, user and system, in clock ticks.
cputicks() {
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	echo "$t"
}

"$BIN" emulate --listen 127.0.0.1:0 >"$WORK/emu.out" 2>"$WORK/emu.err" &
PIDS+=($!)
EMU=$(started "$WORK/emu.out")
HZ=$(getconf CLK_TCK)

# run NAME SERVE DB REPLICAS: one measurement of the serve binary SERVE.
run() {
	local name=$1 serve=$2 db=$3 n=$4 urls="" pids=() f
	for i in $(seq "$n"); do
		f=$(mktemp "$WORK/serve.XXXXXX") # empty, and its own: no run reads the last one's URL
		"$serve" serve --listen 127.0.0.1:0 --anthropic-url "$EMU" --db "$db" --replica-name "r$i" \
			--access-log=false --batch-min-size 1000 --batch-max-size 1000 \
			>"$f" 2>"$f.err" &
		pids+=($!)
		urls+=${urls:+,}$(started "$f")
	done
	local out t0
	t0=$(cputicks "${pids[@]}")
	out=$("$BIN-bench" load --url "$urls" --concurrency "$CALLERS" --duration "$DURATION" \
		--header 'Prefer: respond-async' --header 'llmfleet-route: batch' --header 'llmfleet-latency-budget-ms: 86400000')
	local cpu=$(($(cputicks "${pids[@]}") - t0))
	kill -TERM "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null || true
	field() { echo "$out" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
	awk -v name="$name" -v n="$n" -v rps="$(field req_per_s)" -v p50="$(field p50_us)" -v p99="$(field p99_us)" -v e="$(field errors)" \
		-v cpu="$cpu" -v hz="$HZ" -v calls="$(field requests)" -v warm="$(field warmup)" \
		'BEGIN { printf "| %s | %s | %d | %.1f ms | %.1f ms | %.0f µs | %s |\n", name, n, rps, p50 / 1000, p99 / 1000, cpu / hz * 1e6 / (calls + warm), e }'
}

# fresh STORE: a database of STORE no run has used.
fresh() {
	if [[ $1 == sqlite ]]; then
		echo "$WORK/llmfleet-$RANDOM$RANDOM.db"
		return
	fi
	local sep='?'
	[[ $PG == *\?* ]] && sep='&'
	echo "$PG${sep}search_path=bench_$(date +%s%N)"
}

# drop DB: drops a PostgreSQL DB's schema.
drop() {
	if [[ $1 == postgres* ]] && command -v psql >/dev/null; then
		psql "$PG" -qc "DROP SCHEMA ${1##*search_path=} CASCADE" >/dev/null 2>&1 || true
	fi
}

label() { [[ $1 == sqlite ]] && echo SQLite || echo PostgreSQL; }

echo "| store | replicas | accepted req/s | p50 | p99 | serve CPU per request | errors |"
echo "|---|---|---|---|---|---|---|"
if [[ -z ${LLMFLEET_BENCH_SERVE:-} ]]; then
	for store in $STORES; do
		ns=1
		[[ $store == postgres ]] && ns="1 2 3"
		for n in $ns; do
			db=$(fresh "$store")
			run "$(label "$store")" "$BIN" "$db" "$n"
			drop "$db"
		done
	done
	exit
fi

read -ra SERVES <<<"$LLMFLEET_BENCH_SERVE"
for r in $(seq "$ROUNDS"); do
	order=("${SERVES[@]}")
	if ((r % 2 == 0)); then # old, new, new, old, ...: neither always goes first
		order=()
		for s in "${SERVES[@]}"; do order=("$s" "${order[@]}"); done
	fi
	for store in $STORES; do
		for s in "${order[@]}"; do
			db=$(fresh "$store")
			run "$(label "$store") ${s%%=*} #$r" "${s#*=}" "$db" 1 | tee -a "$WORK/ab"
			drop "$db"
		done
	done
done
echo
echo "| store and serve | rounds | median req/s | median CPU per request |"
echo "|---|---|---|---|"
sed 's/ #[0-9]* |/ |/' "$WORK/ab" | awk -F' [|] ' '
	{ k = substr($1, 3); rps[k] = rps[k] " " $3; cpu[k] = cpu[k] " " $6 + 0; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
	function median(s,   a, m, i, j, t) {
		m = split(s, a, " ")
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	END { for (i = 1; i <= n; i++) { k = order[i]; printf "| %s | %d | %d | %.0f µs |\n", k, split(rps[k], x, " "), median(rps[k]), median(cpu[k]) } }'
