#!/usr/bin/env bash
# Cross-builds the release archives of llmfleet into dist/ (CI runs this
# from .ci/run):
#
#   bash scripts/release.sh
#
# For each of linux and darwin on amd64 and arm64, a static binary
# (CGO_ENABLED=0) whose "llmfleet version" prints VERSION, packed with
# LICENSE and README.md in dist/llmfleet_VERSION_OS_ARCH.tar.gz, and the
# SHA-256 of every archive in dist/SHA256SUMS (check them with
# "sha256sum -c SHA256SUMS" in dist/).
#
# VERSION defaults to git describe --tags (a tag v1.2.0 on the commit:
# v1.2.0; later commits: v1.2.0-3-gabc1234; -dirty for uncommitted
# changes). PLATFORMS (default "linux/amd64 linux/arm64 darwin/amd64
# darwin/arm64") picks others. Archives are reproducible: their files
# are dated SOURCE_DATE_EPOCH (default: the commit's time), owned by 0.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${VERSION:-$(git describe --tags --always --dirty)}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
export SOURCE_DATE_EPOCH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p dist
rm -f dist/llmfleet_*.tar.gz dist/SHA256SUMS

for platform in $PLATFORMS; do
	os=${platform%/*} arch=${platform#*/}
	name=llmfleet_${VERSION}_${os}_${arch}
	mkdir -p "$work/$name"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
		-ldflags "-s -w -X main.version=$VERSION" -o "$work/$name/llmfleet" ./cmd/llmfleet
	cp LICENSE README.md "$work/$name/"
	tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner \
		--mtime="@$SOURCE_DATE_EPOCH" -cf - "$name" | gzip -n -9 >"dist/$name.tar.gz"
	# The binary of this machine's platform says the version it was given.
	if [ "$platform" = "$(go env GOHOSTOS)/$(go env GOHOSTARCH)" ]; then
		got=$("$work/$name/llmfleet" version)
		case "$got" in
		"llmfleet $VERSION "*) echo "release.sh: $name: $got" ;;
		*) echo "release.sh: $name prints \"$got\", not version $VERSION" >&2; exit 1 ;;
		esac
	fi
done
(cd dist && sha256sum llmfleet_*.tar.gz >SHA256SUMS && sha256sum -c --quiet SHA256SUMS)
ls -l dist/llmfleet_*.tar.gz dist/SHA256SUMS
