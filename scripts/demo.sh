#!/usr/bin/env bash
# demo.sh: what llmfleet is for, in one command (needs only Go and curl).
#
# It starts the emulator of the Anthropic API (llmfleet emulate) and the
# proxy in front of it (llmfleet serve), runs a fleet of agents through the
# proxy twice (a patient budget: every turn is batched at half price; a
# tight one: every turn goes sync), prints what was paid, what the same
# traffic would have cost sync, and what batching saved: on the patient
# traffic, and on both together.
#
# It takes about 15 s once built; the first run compiles llmfleet first
# (about 3 minutes on 2 cores). From a terminal it keeps the proxy running
# after the fleet ends, prints the dashboard's address and waits for
# Ctrl-C; otherwise (CI, or DEMO_KEEP=0) it exits after printing, and
# names no dashboard that would be gone.
#
# Environment: EMULATOR_PORT (18788), SERVE_PORT (18787), DEMO_AGENTS (40),
# DEMO_TURNAROUND (the emulator's batch turnaround, 2s-6s), DEMO_KEEP
# (1 keeps the proxy up, 0 exits; default: 1 on a terminal).
set -euo pipefail
cd "$(dirname "$0")/.."

emu_port=${EMULATOR_PORT:-18788}
serve_port=${SERVE_PORT:-18787}
agents=${DEMO_AGENTS:-40}
turnaround=${DEMO_TURNAROUND:-2s-6s}
window=1s
poll=1s
keep=${DEMO_KEEP:-}
if [[ -z $keep ]]; then
	if [[ -t 0 && -t 1 ]]; then keep=1; else keep=0; fi
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_up() { # url name log
	for _ in $(seq 100); do
		curl -fs -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "demo: $2 did not start; its log:" >&2
	cat "$3" >&2
	exit 1
}

echo "== building llmfleet and the fleet example (a first, cold build takes about 3 minutes; later ones seconds)"
go build -o "$tmp/llmfleet" ./cmd/llmfleet
go build -o "$tmp/fleet" ./examples/fleet

emu=http://127.0.0.1:$emu_port
srv=http://127.0.0.1:$serve_port
"$tmp/llmfleet" emulate --listen "127.0.0.1:$emu_port" --turnaround "$turnaround" >"$tmp/emulate.log" 2>&1 &
pids+=($!)
wait_up "$emu/emulator/v1/stats" "llmfleet emulate" "$tmp/emulate.log"
LLMFLEET_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') \
	"$tmp/llmfleet" serve --listen "127.0.0.1:$serve_port" --anthropic-url "$emu" --db "$tmp/llmfleet.db" \
	--batch-window "$window" --poll-interval "$poll" --max-poll-interval "$poll" >"$tmp/serve.log" 2>&1 &
pids+=($!)
wait_up "$srv/llmfleet/v1/stats" "llmfleet serve" "$tmp/serve.log"
echo "   emulator $emu (batch turnaround $turnaround), proxy $srv (batch window $window, poll interval $poll)"

export ANTHROPIC_API_KEY=demo-key
elapsed_s() { # a fleet JSON line -> its elapsed time in seconds
	sed -n 's/.*"elapsed":"\([^"]*\)".*/\1/p' <<<"$1" | awk '
		/ms$/ {sub(/ms$/, ""); print $0/1000; next}
		/m/ {split($0, a, "m"); sub(/s$/, "", a[2]); print a[1]*60 + a[2]; next}
		{sub(/s$/, ""); print $0 + 0}'
}

echo
echo "== $agents agents x 2 dependent turns through the proxy, budget 10m: every turn is batched"
out=$("$tmp/fleet" -via proxy -anthropic-url "$srv" -n "$agents" -budget 10m)
echo "   $out"
batched=$(elapsed_s "$out")
awk -v t="$batched" -v ta="$turnaround" -v w="$window" -v p="$poll" 'BEGIN {
	printf "   observed: %.1fs per batched turn (batch window %s + emulated turnaround %s + up to one poll interval %s)\n", t/2, w, ta, p }'
echo "   Real Message Batches take minutes to hours (often 1-3 minutes for small batches, up to 24h);"
echo "   the emulator compresses that to $turnaround so the demo ends quickly. With serve's default"
echo "   --batch-window 30s, a lone batched request also waits up to 30s for others to pool with."

# What the patient traffic paid, before the tight traffic joins it.
num() { grep -o "\"$1\":[-0-9.e+]*" <<<"$2" | head -1 | cut -d: -f2; } # the first: the total
patient=$(curl -fs "$srv/llmfleet/v1/stats")

echo
echo "== $agents agents x 2 dependent turns through the proxy, budget 1s: every turn goes sync"
out=$("$tmp/fleet" -via proxy -anthropic-url "$srv" -n "$agents" -budget 1s)
echo "   $out"

echo
echo "== what the fleet paid, what the same traffic would have cost sync, and what batching saved"
"$tmp/llmfleet" stats --url "$srv" --since 0
stats=$(curl -fs "$srv/llmfleet/v1/stats")
headline() { # label stats-json
	awk -v label="$1" -v paid="$(num cost_usd "$2")" -v would="$(num sync_equivalent_usd "$2")" -v saved="$(num saved_usd "$2")" 'BEGIN {
		printf "%-44s saved %3.0f%%: paid $%.6f of $%.6f at sync prices (saved $%.6f)\n", label, (would > 0 ? 100*saved/would : 0), paid, would, saved }'
}
echo
headline "batching, on the patient traffic (budget 10m):" "$patient"
headline "on all the traffic (patient + tight):" "$stats"

if [[ $keep == 1 ]]; then
	echo
	echo "dashboard: $srv/llmfleet/"
	echo "(the proxy and the emulator keep running; Ctrl-C to stop)"
	wait "${pids[@]}"
fi
