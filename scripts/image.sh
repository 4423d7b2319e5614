#!/usr/bin/env bash
# Builds the container image of the Dockerfile without a Docker daemon and
# runs it (CI runs this from .ci/run):
#
#   bash scripts/image.sh        # writes dist/image (OCI layout) and dist/llmfleet-image.tar
#
# It does what the Dockerfile's build stage does (the static binaries,
# the empty /data and /tmp, the root certificates) into a directory, then
# scripts/ociimage carries out the Dockerfile's final stage with that
# directory as the build stage: one layer per COPY, the config from its
# ENV, USER, VOLUME, EXPOSE, HEALTHCHECK, STOPSIGNAL, ENTRYPOINT and CMD.
# Then it extracts the image and runs it: the entrypoint with --version
# (which must print VERSION), and, as root, the default command (serve)
# chrooted as the image's user, in a network namespace of its own, until
# the image's HEALTHCHECK passes and /data holds its database.
#
# VERSION (default: git describe) is the image's tag and the binary's
# version; GOARCH (default: this machine's) its architecture. Load the
# tarball with "docker load -i dist/llmfleet-image.tar", or copy the
# layout to a registry with "skopeo copy oci:dist/image docker://...".
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
ARCH=${GOARCH:-$(go env GOARCH)}
# The date of the image and of its files: the commit's (reproducible).
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
export SOURCE_DATE_EPOCH
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# The build stage of the Dockerfile.
CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH go build -trimpath \
	-ldflags "-s -w -X main.version=$VERSION" -o "$stage/out/llmfleet" ./cmd/llmfleet
CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH go build -trimpath \
	-ldflags "-s -w" -o "$stage/out/healthprobe" ./internal/healthprobe
mkdir -p "$stage/out/data" "$stage/out/tmp" && chmod 1777 "$stage/out/tmp"
install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$stage/etc/ssl/certs/ca-certificates.crt"

# The final stage, then the image run.
(cd scripts/ociimage && go vet . && go test . >/dev/null && go build -o "$stage/ociimage" .)
mkdir -p dist
"$stage/ociimage" build -dockerfile Dockerfile -stage "build=$stage" -arch "$ARCH" \
	-tag "llmfleet:$VERSION" -oci dist/image -tar dist/llmfleet-image.tar
if [ "$ARCH" != "$(go env GOHOSTARCH)" ]; then
	echo "image.sh: a $ARCH image is not run on this $(go env GOHOSTARCH) machine"
	exit 0
fi
smoke=("$stage/ociimage" smoke -oci dist/image -version "$VERSION")
# A network namespace of its own: serve takes the image's port, 8787,
# whatever else this machine runs.
if [ "$(id -u)" = 0 ] && unshare --net true 2>/dev/null && command -v ip >/dev/null; then
	unshare --net sh -c 'ip link set lo up && exec "$@"' sh "${smoke[@]}"
else
	"${smoke[@]}"
fi
