#!/usr/bin/env bash
# screenshot.sh URL OUT.png [WIDTHxHEIGHT]
#
# Opens the llmfleet dashboard at URL in headless Chromium (Debian's
# chromium package) and saves a screenshot to OUT.png once the page has
# polled its JSON endpoints. Chromium is kept off the network except for
# URL itself: no background, component or sync traffic.
set -euo pipefail

if [ $# -lt 2 ]; then
	echo "usage: $0 URL OUT.png [WIDTHxHEIGHT]" >&2
	exit 2
fi
url=$1
out=$2
size=${3:-1400x1000}
browser=${CHROMIUM:-}
if [ -z "$browser" ]; then
	for b in chromium chromium-browser google-chrome; do
		if command -v "$b" >/dev/null 2>&1; then
			browser=$b
			break
		fi
	done
fi
if [ -z "$browser" ]; then
	echo "$0: no chromium found (apt-get install -y chromium)" >&2
	exit 1
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
mkdir -p "$(dirname "$out")"
rm -f "$out"

# --virtual-time-budget lets the page's first polls and drawing finish
# before the shot is taken.
timeout 90 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--disable-default-apps --disable-extensions --hide-scrollbars --mute-audio \
	--user-data-dir="$profile" --window-size="${size/x/,}" \
	--virtual-time-budget=4000 --screenshot="$out" "$url" >"$profile/log" 2>&1 || {
	cat "$profile/log" >&2
	exit 1
}
if [ ! -s "$out" ]; then
	cat "$profile/log" >&2
	echo "$0: no screenshot written" >&2
	exit 1
fi
echo "$out"
