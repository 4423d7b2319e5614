#!/usr/bin/env bash
# demo.sh: run the fleet example against a local emulator, once with a
# patient budget (every turn is batched) and once with a tight one (every
# turn goes sync). Needs only Go.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'kill $emu 2>/dev/null || true; rm -rf "$bin"' EXIT
go build -o "$bin/llmfleet" ./cmd/llmfleet
go build -o "$bin/fleet" ./examples/fleet
addr=127.0.0.1:${EMULATOR_PORT:-18788}
"$bin/llmfleet" emulate --listen "$addr" >"$bin/emulator.log" 2>&1 &
emu=$!
for _ in $(seq 50); do curl -fs "http://$addr/emulator/v1/stats" >/dev/null 2>&1 && break; sleep 0.1; done
export ANTHROPIC_API_KEY=demo-key
echo "== 40 agents x 2 turns, budget 10m, window 1s (batched; takes about ten seconds: results are delivered within one poll interval of their batch's end)"
"$bin/fleet" -anthropic-url "http://$addr" -n 40 -budget 10m -window 1s
echo "== 40 agents x 2 turns, budget 1s (sync)"
"$bin/fleet" -anthropic-url "http://$addr" -n 40 -budget 1s -window 1s
