#!/usr/bin/env bash
# End-to-end check with real clients: builds llmfleet, starts the emulator
# (its OpenAI listener too) and the proxy on free loopback ports, installs
# the official TypeScript SDKs (@anthropic-ai/sdk, openai, @google/genai) and the Claude
# Code CLI from npm (versions pinned in e2e/package.json and
# e2e/package-lock.json, cached under e2e/.npm and e2e/node_modules), and
# drives them through the proxy (openai through its /openai/v1 face). It
# also installs the latest Claude Code release
# (@anthropic-ai/claude-code@latest, into e2e/.latest, not the lockfile) and
# runs it too, since that is what a new user gets; if the
# latest cannot be installed that fails under CI=true and is skipped with a
# message otherwise. Prints one PASS/FAIL line per check and
# exits non-zero if any check failed. .ci/run runs it after the Go tests.
#
#	bash e2e/run.sh
set -uo pipefail
cd "$(dirname "$0")"
E2E=$PWD
NAME=e2e
# shellcheck source=e2e/lib.sh
. "$E2E/lib.sh"

# --- build and start the emulator and the proxy -------------------------
(cd .. && go build -o "$WORK/llmfleet" ./cmd/llmfleet) || die "build llmfleet"
pass "build llmfleet"

# The emulator's batch cache reads what batch requests wrote 9 times in 10,
# and the proxy's cost model is told so (--cache-batch-rate-prior, as a
# deployment sets it from its own usage): a patient conversation's first
# turn is then cheaper batched, whatever its turns to come.
"$WORK/llmfleet" emulate --listen 127.0.0.1:0 --turnaround 1s --cache-batch-hit-rate 0.9 --openai-addr 127.0.0.1:0 --openai-turnaround 1s \
	--gemini-addr 127.0.0.1:0 --gemini-turnaround 45s -v \
	>"$WORK/emulator.out" 2>"$WORK/emulator.log" &
PIDS+=($!)
EMU=$(wait_addr "$WORK/emulator.out" "^emulator listening on") || die "emulator did not start"
OPENAI_EMU=$(wait_addr "$WORK/emulator.out" "openai emulator listening on") || die "the OpenAI emulator did not start"
GEMINI_EMU=$(wait_addr "$WORK/emulator.out" "gemini emulator listening on") || die "the Gemini emulator did not start"

"$WORK/llmfleet" serve --listen 127.0.0.1:0 --anthropic-url "$EMU" --openai-url "$OPENAI_EMU" --gemini-url "$GEMINI_EMU" --db "$WORK/llmfleet.db" \
	--batch-window 500ms --poll-interval 200ms --max-poll-interval 500ms \
	--turnaround-prior 2s --ping-interval 250ms --cache-batch-rate-prior 0.9 -v \
	>"$WORK/proxy.out" 2>"$WORK/proxy.log" &
PIDS+=($!)
PROXY=$(wait_addr "$WORK/proxy.out" "llmfleet serving on") || die "proxy did not start"
if curl -fsS "$PROXY/healthz" >/dev/null; then
	pass "proxy up at $PROXY (emulator $EMU)"
else
	die "proxy /healthz"
fi

# --- install the real clients ---------------------------------------------
if npm install --no-audit --no-fund --cache "$E2E/.npm" >"$WORK/npm.log" 2>&1; then
	pass "npm install @anthropic-ai/sdk openai @google/genai @anthropic-ai/claude-code"
else
	die "npm install (see $WORK/npm.log)"
fi
# use_claude DIR: sets CLAUDE to the Claude Code CLI installed under
# DIR/node_modules.
use_claude() {
	CLAUDE=("$1/node_modules/.bin/claude")
	if ! "${CLAUDE[@]}" --version >/dev/null 2>&1; then
		# The package's postinstall did not put the native binary in place;
		# its wrapper finds the platform package itself.
		CLAUDE=(node "$1/node_modules/@anthropic-ai/claude-code/cli-wrapper.cjs")
	fi
}
use_claude "$E2E"
PINNED_VERSION=$("${CLAUDE[@]}" --version 2>&1 | head -n 1)
echo "claude code (pinned): $PINNED_VERSION"

# The latest release, as "npm install" gives a new user today.
LATEST_DIR=$E2E/.latest
mkdir -p "$LATEST_DIR"
[ -f "$LATEST_DIR/package.json" ] || echo '{"name":"llmfleet-e2e-latest","private":true}' >"$LATEST_DIR/package.json"
LATEST_VERSION=
if npm install --no-audit --no-fund --no-package-lock --cache "$E2E/.npm" --prefix "$LATEST_DIR" \
	@anthropic-ai/claude-code@latest >"$WORK/npm-latest.log" 2>&1; then
	use_claude "$LATEST_DIR"
	LATEST_VERSION=$("${CLAUDE[@]}" --version 2>&1 | head -n 1)
	pass "npm install @anthropic-ai/claude-code@latest: $LATEST_VERSION"
	LATEST_CLAUDE=("${CLAUDE[@]}")
elif [ "${CI:-}" = true ]; then
	fail "npm install @anthropic-ai/claude-code@latest (CI=true): $(tail -n 3 "$WORK/npm-latest.log")"
else
	echo "SKIP claude code @latest: npm install failed (npm unreachable?): $(tail -n 1 "$WORK/npm-latest.log")"
fi
use_claude "$E2E"
PINNED_CLAUDE=("${CLAUDE[@]}")

# --- (a) the TypeScript SDKs ----------------------------------------------
PROXY_URL=$PROXY node "$E2E/sdk.mjs" || FAILED=$((FAILED + 1))
PROXY_URL=$PROXY OPENAI_EMU_URL=$OPENAI_EMU node "$E2E/openai.mjs" || FAILED=$((FAILED + 1))
PROXY_URL=$PROXY node "$E2E/gemini.mjs" || FAILED=$((FAILED + 1))

# --- (b) Claude Code, headless --------------------------------------------
# counts prints "<sync /v1/messages calls> <batch submissions>" as the
# emulator has seen them: a request the proxy answered by the sync route
# reached the emulator's /v1/messages, a batched one was submitted in a
# batch.
counts() {
	curl -fsS "$EMU/emulator/v1/stats" | node -e '
let s = "";
process.stdin.on("data", (d) => (s += d)).on("end", () => {
  const st = JSON.parse(s);
  console.log((st.calls || {}).messages || 0, (st.submissions || []).length);
});'
}

# claude_p NAME BUDGET_MS WANT_ROUTE: runs `claude -p "say hello"` with
# ANTHROPIC_BASE_URL on a /budget/<ms> prefix and checks its answer and
# the route its requests took.
claude_p() {
	local name=$1 budget=$2 want=$3 home="$WORK/home-$1"
	mkdir -p "$home"
	local s0 b0 s1 b1 out rc
	read -r s0 b0 < <(counts)
	out=$(cd "$home" && env HOME="$home" XDG_CONFIG_HOME="$home/.config" \
		ANTHROPIC_BASE_URL="$PROXY/budget/$budget" ANTHROPIC_API_KEY=test-claude-code \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
		DISABLE_ERROR_REPORTING=1 CI=1 \
		timeout 120 "${CLAUDE[@]}" -p "say hello" --model claude-sonnet-4-5 --max-turns 1 \
		--output-format text </dev/null 2>"$WORK/claude-$name.log")
	rc=$?
	read -r s1 b1 < <(counts)
	echo "$out" >"$WORK/claude-$name.out"
	local ds=$((s1 - s0)) db=$((b1 - b0))
	# The emulator answers "Answer to: " and the text of the last user
	# message, which Claude Code sends as its context reminders followed by
	# the prompt.
	if [ $rc -ne 0 ]; then
		fail "claude -p ($name): exit $rc: $(tail -n 5 "$WORK/claude-$name.log")"
	elif [[ "$out" != "Answer to: "* || "$out" != *"say hello" ]]; then
		fail "claude -p ($name): unexpected answer: $(echo "$out" | head -c 300)"
	elif [ "$want" = batch ] && { [ "$db" -lt 1 ] || [ "$ds" -ne 0 ]; }; then
		fail "claude -p ($name): want the batch route; the emulator got $ds sync calls and $db batched requests"
	elif [ "$want" = sync ] && { [ "$ds" -lt 1 ] || [ "$db" -ne 0 ]; }; then
		fail "claude -p ($name): want the sync route; the emulator got $ds sync calls and $db batched requests"
	else
		pass "claude -p ($name, budget ${budget}ms): answered by the $want route (emulator: $ds sync calls, $db batched requests)"
	fi
}
CLAUDE=("${PINNED_CLAUDE[@]}")
echo "--- claude code $PINNED_VERSION (pinned)"
claude_p pinned-patient 600000 batch
claude_p pinned-tight 1000 sync
if [ -n "$LATEST_VERSION" ]; then
	CLAUDE=("${LATEST_CLAUDE[@]}")
	echo "--- claude code $LATEST_VERSION (latest)"
	claude_p latest-patient 600000 batch
	claude_p latest-tight 1000 sync
fi
echo "claude code versions run: pinned $PINNED_VERSION, latest ${LATEST_VERSION:-(skipped)}"

if [ $FAILED -ne 0 ]; then
	echo "--- proxy log (tail)"
	tail -n 40 "$WORK/proxy.log"
	echo "e2e: FAIL ($FAILED failed)"
	exit 1
fi
echo "e2e: PASS"
