#!/usr/bin/env bash
# Dashboard check in a real browser: builds llmfleet, starts the emulator
# and the proxy on free loopback ports (with a database of their own),
# sends sync and batched traffic with 5-minute and 1-hour cache
# breakpoints, a budget miss and a batch left in flight, checks
# /llmfleet/v1/stats and /metrics, then clicks through the dashboard at
# /llmfleet/ in headless Chromium (e2e/dashboard.mjs: playwright-core,
# installed into e2e/out/pw unless PLAYWRIGHT_CORE_DIR names one; Debian's
# chromium package), checking the numbers it shows against
# /llmfleet/v1/stats (totals, by client, the prompt cache by route and
# model), and keeps the screenshot at e2e/out/dashboard.png. Two keys
# (alice's and bob's) send the traffic, so that the by-client breakdown
# has two rows. Prints one PASS/FAIL line per
# check and exits non-zero if any failed. .ci/run runs it after
# e2e/run.sh.
#
#	bash e2e/dashboard.sh
set -uo pipefail
cd "$(dirname "$0")"
E2E=$PWD
ROOT=$(cd .. && pwd)
OUT=$E2E/out/dashboard.png
NAME=dashboard
# shellcheck source=e2e/lib.sh
. "$E2E/lib.sh"

(cd "$ROOT" && go build -o "$WORK/llmfleet" ./cmd/llmfleet) || die "build llmfleet"

"$WORK/llmfleet" emulate --listen 127.0.0.1:0 --turnaround 1s --openai-addr 127.0.0.1:0 >"$WORK/emulator.out" 2>"$WORK/emulator.log" &
PIDS+=($!)
EMU=$(wait_addr "$WORK/emulator.out" "^emulator listening on") || die "emulator did not start"
OPENAI_EMU=$(wait_addr "$WORK/emulator.out" "openai emulator listening on") || die "the OpenAI emulator did not start"

# The admin key shows the per-request fields (the recent budget misses);
# the page is checked without it, then with it.
LLMFLEET_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') LLMFLEET_E2E_ADMIN=e2e-admin-key \
	"$WORK/llmfleet" serve --listen 127.0.0.1:0 --anthropic-url "$EMU" --openai-url "$OPENAI_EMU" --db "$WORK/llmfleet.db" \
	--admin-key-env LLMFLEET_E2E_ADMIN --batch-window 300ms --poll-interval 200ms --max-poll-interval 500ms \
	--turnaround-prior 2s --shutdown-timeout 1s --log-format json \
	>"$WORK/proxy.out" 2>"$WORK/proxy.log" &
PIDS+=($!)
PROXY=$(wait_addr "$WORK/proxy.out" "llmfleet serving on") || die "proxy did not start"
pass "proxy up at $PROXY (emulator $EMU)"

# message MODEL FLEET TEXT [CURL ARGS...]: one create-message call through
# the proxy, with a 1-hour breakpoint on a long system block and a
# 5-minute one on a shorter block (FLEET varies their text).
# The fleet's key: fleet a is alice's, the others bob's.
message() {
	local model=$1 fleet=$2 text=$3 key=sk-dashboard-bob
	[ "$fleet" = a ] && key=sk-dashboard-alice
	shift 3
	local long brief
	long=$(printf "Instructions of fleet $fleet. %.0s" $(seq 1 600))
	brief=$(printf "Briefing of fleet $fleet. %.0s" $(seq 1 300))
	curl -sS -o /dev/null -w '%{http_code}' "$PROXY/v1/messages" \
		-H "x-api-key: $key" -H "anthropic-version: 2023-06-01" \
		-H "content-type: application/json" "$@" \
		-d "{\"model\":\"$model\",\"max_tokens\":300,
		\"system\":[{\"type\":\"text\",\"text\":\"$long\",\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":\"1h\"}},
		            {\"type\":\"text\",\"text\":\"$brief\",\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":\"5m\"}}],
		\"messages\":[{\"role\":\"user\",\"content\":\"$text\"}]}"
}

# Sync calls: the first writes the cache, the next read it; one misses
# its 1 ms budget, a hard deadline (the proxy gives it up at the budget:
# 504 timeout_error; without llmfleet-deadline: hard it would be answered
# late).
codes=""
codes+=$(message claude-sonnet-4-6 a "first question")
codes+=$(message claude-sonnet-4-6 a "second question")
codes+=$(message claude-haiku-4-5 a "third question")
codes+=$(message claude-haiku-4-5 a "[slow:50ms] in a hurry" -H "llmfleet-latency-budget-ms: 1" -H "llmfleet-deadline: hard")
# An upstream error (529), which the proxy passes on and counts.
if [ "$(message claude-sonnet-4-6 a "[error:overloaded_error]")" = 529 ]; then
	pass "an overloaded upstream answered 529"
else
	fail "an overloaded upstream was not answered 529"
fi
# Batched calls, sent together so that their batches hold several.
tmp="$WORK/codes"
callers=()
for i in 1 2 3; do
	message claude-sonnet-4-6 b "batched question $i" -H "llmfleet-route: batch" >"$tmp.s$i" &
	callers+=($!)
	message claude-haiku-4-5 a "batched question $i" -H "llmfleet-route: batch" >"$tmp.h$i" &
	callers+=($!)
done
wait "${callers[@]}"
codes+=$(cat "$tmp".*)
if [ "$codes" = "200200200504$(printf '200%.0s' $(seq 1 6))" ]; then
	pass "4 sync calls (one cut at its 1 ms hard deadline) and 6 batched calls answered"
else
	fail "calls answered with $codes"
fi
# The OpenAI face: a flex call of alice's (batch prices, answered at once).
code=$(curl -sS -o /dev/null -w '%{http_code}' "$PROXY/openai/v1/chat/completions" \
	-H "authorization: Bearer sk-dashboard-alice" -H "content-type: application/json" -H "llmfleet-route: flex" \
	-d '{"model":"gpt-5-mini","messages":[{"role":"user","content":"a flex question"}]}')
if [ "$code" = 200 ]; then
	pass "a flex call through the OpenAI face answered 200"
else
	fail "a flex call through the OpenAI face answered $code"
fi
# A batch left in flight for the screenshot.
message claude-sonnet-4-6 c "[turnaround:10m] a long one" -H "llmfleet-route: batch" >/dev/null 2>&1 &
PIDS+=($!)

stats=$(curl -fsS "$PROXY/llmfleet/v1/stats")
for want in '"sync_calls":5' '"flex_calls":1' '"errors":1' '"batched_calls":6' '"budget_misses":1' '"claude-sonnet-4-6"' '"claude-haiku-4-5"' '"gpt-5-mini"' '"openai":{' \
	'"cache_hit_rate":0.' '"routing_miss_usd":' '"net_saved_usd":' '"by_route_model":{' '"rewrites":{' '"estimated":'; do
	if [[ "$stats" != *"$want"* ]]; then
		fail "/llmfleet/v1/stats lacks $want: $stats"
	fi
done
figures=$(grep -o '"cost_usd":[0-9.e-]*,"sync_equivalent_usd":[0-9.e-]*,"saved_usd":[0-9.e-]*' <<<"$stats" | head -n 1)
if [[ "$figures" =~ \"saved_usd\":0\.0*[1-9] ]]; then
	pass "/llmfleet/v1/stats: $figures"
else
	fail "/llmfleet/v1/stats: nothing saved: $stats"
fi

metrics=$(curl -fsS "$PROXY/metrics")
missing=""
for name in llmfleet_requests_total llmfleet_tokens_total llmfleet_cost_usd_total llmfleet_saved_usd_total \
	llmfleet_queue_depth llmfleet_batches_in_flight llmfleet_batch_turnaround_seconds \
	llmfleet_budget_misses_total llmfleet_upstream_errors_total llmfleet_net_saved_usd; do
	grep -q "^# TYPE $name " <<<"$metrics" || missing+=" $name"
done
if [ -z "$missing" ]; then
	pass "/metrics has the ten llmfleet metrics"
else
	fail "/metrics lacks$missing"
fi

clients=$(sed 's/.*"by_client":\(.*\),"recent_budget_misses".*/\1/' <<<"$stats" | grep -o '"cred_[0-9a-f]*":{"calls"' | sort -u | wc -l)
if [ "$clients" = 2 ]; then
	pass "/llmfleet/v1/stats: by_client has alice's and bob's key labels"
else
	fail "/llmfleet/v1/stats: by_client: $stats"
fi
if grep -q 'sk-dashboard' "$WORK/llmfleet.db" "$WORK/proxy.log" 2>/dev/null; then
	fail "a client key is in the database or the log"
fi

# Wait until the long batch is in flight, then click through the page.
for i in $(seq 1 50); do
	curl -fsS "$PROXY/llmfleet/v1/dashboard" | grep -q '"batches_in_flight":\[{' && break
	sleep 0.1
done
# The queue is sampled by the server every 5 s, no page open: two samples
# come within about ten seconds (reading the snapshot takes none).
samples=0
for i in $(seq 1 150); do
	# (A sample has a time; the snapshot's stats have the same two fields.)
	samples=$(curl -fsS "$PROXY/llmfleet/v1/dashboard" | grep -o '"time":"[^"]*","queue_depth":[0-9]*,"batches_in_flight"' | wc -l)
	[ "$samples" -ge 2 ] && break
	sleep 0.1
done
if [ "$samples" -ge 2 ]; then
	pass "queue depth sampled by the server with no page open ($samples samples)"
else
	fail "queue depth: $samples samples with no page open"
fi
PW=${PLAYWRIGHT_CORE_DIR:-}
if [ -z "$PW" ]; then
	PW=$E2E/out/pw/node_modules/playwright-core
	if [ ! -d "$PW" ]; then
		mkdir -p "$E2E/out/pw"
		npm install --prefix "$E2E/out/pw" --no-audit --no-fund --no-save playwright-core@1.64.1 >"$WORK/npm.log" 2>&1 ||
			die "npm install playwright-core"
	fi
fi
mkdir -p "$(dirname "$OUT")"
if PLAYWRIGHT_CORE_DIR=$PW node "$E2E/dashboard.mjs" "$PROXY" "$OUT" >"$WORK/browser.out" 2>&1; then
	cat "$WORK/browser.out"
else
	cat "$WORK/browser.out"
	fail "the dashboard in the browser"
fi

if [ $FAILED -ne 0 ]; then
	echo "--- proxy log (tail)"
	tail -n 40 "$WORK/proxy.log"
	echo "dashboard: FAIL ($FAILED failed)"
	exit 1
fi
echo "dashboard: PASS"
