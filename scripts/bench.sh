#!/usr/bin/env bash
# Runs `llmfleet-bench` with the Portkey gateway (npm @portkey-ai/gateway,
# pinned below, installed once into ~/.cache/llmfleet/portkey) measured as
# a fourth target beside the upstream (HTTPS), a bare httputil.ReverseProxy
# and llmfleet serve. Extra arguments go to llmfleet-bench (e.g. -duration
# 3s). Without Node.js, run llmfleet-bench alone (see docs/benchmarks.md).
# Needs Go, Node.js and npm.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PORTKEY_VERSION=1.15.2
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/llmfleet/portkey-$PORTKEY_VERSION
SERVER=$CACHE/node_modules/@portkey-ai/gateway/build/start-server.js
if [[ ! -f $SERVER ]]; then
	mkdir -p "$CACHE"
	npm install --prefix "$CACHE" --no-audit --no-fund --no-save "@portkey-ai/gateway@$PORTKEY_VERSION" >"$CACHE/npm.log" 2>&1 ||
		{ cat "$CACHE/npm.log"; exit 1; }
fi
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
(cd "$ROOT" && go build -o "$BIN/" ./cmd/llmfleet ./cmd/llmfleet-bench)
"$BIN/llmfleet-bench" -portkey "$SERVER" "$@"
