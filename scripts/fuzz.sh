#!/usr/bin/env bash
# fuzz.sh: run every fuzz target of the module for a short while each:
# FUZZTIME (a go test -fuzztime value, default 3s). The targets are found
# with go test -list; the script fails if any package's tests do not build
# or any target fails. A failing input is kept by go test under the
# package's testdata/fuzz/<target>/, where it becomes a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-3s}

# go test -list prints a package's matching names, then its "ok" line.
if ! listing=$(go test -list '^Fuzz' ./... 2>&1); then
	printf '%s\n' "$listing"
	echo "fuzz.sh: listing the fuzz targets failed" >&2
	exit 1
fi
targets=()
names=()
while IFS= read -r line; do
	case $line in
	Fuzz*) names+=("$line") ;;
	ok*)
		pkg=$(awk '{print $2}' <<<"$line")
		for n in ${names[@]+"${names[@]}"}; do
			targets+=("$pkg $n")
		done
		names=()
		;;
	esac
done <<<"$listing"
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz.sh: no fuzz targets found" >&2
	exit 1
fi

# fuzz runs one target, printing its output. The Go fuzzing engine itself
# sometimes ends a run at its -fuzztime with "context deadline exceeded"
# and no failing input: that run is made again, up to three runs in all
# (it has ended so on one target in most CI runs); a failing input
# ("Failing input written to") fails at once.
fuzz() {
	local pkg=$1 name=$2 out
	for attempt in 1 2 3; do
		if out=$(go test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" "$pkg" 2>&1); then
			printf '%s\n' "$out"
			return 0
		fi
		printf '%s\n' "$out"
		if [ "$attempt" = 3 ] || [[ "$out" == *"Failing input written to"* ]] || [[ "$out" != *"context deadline exceeded"* ]]; then
			return 1
		fi
		echo "fuzz.sh: $name ended with the fuzzing engine's own deadline error and no failing input: again"
	done
}

failed=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "== $name ($pkg, $fuzztime)"
	if ! fuzz "$pkg" "$name"; then
		failed+=("$name ($pkg)")
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz.sh: failed: %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz.sh: ${#targets[@]} fuzz targets passed"
