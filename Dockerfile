# syntax=docker/dockerfile:1
#
# The llmfleet container image: llmfleet serve as a static binary on an
# empty base, run as a non-root user, its SQLite state in the /data volume.
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t llmfleet .
#   docker run -p 8787:8787 -v llmfleet-data:/data llmfleet
#
# CI builds the same image without a Docker daemon: scripts/image.sh lays
# out what the build stage below produces and scripts/ociimage carries out
# the final stage's instructions (this file is read, so the two cannot
# drift), then runs the image. docs/operations.md#deploying says more.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=
# CGO_ENABLED=0: a static binary (the SQLite driver, modernc.org/sqlite,
# is pure Go). healthprobe is the HEALTHCHECK: the image has no curl.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
		-o /out/llmfleet ./cmd/llmfleet \
	&& CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
		-o /out/healthprobe ./internal/healthprobe \
	&& mkdir -p /out/data /out/tmp && chmod 1777 /out/tmp

FROM scratch
# Root certificates for the HTTPS calls to the providers.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/tmp /tmp
COPY --from=build /out/llmfleet /out/healthprobe /usr/local/bin/
COPY --from=build --chown=65532:65532 /out/data /data
# Listen on every interface (the default, 127.0.0.1, is unreachable from
# outside a container); the database, and the secret file beside it
# unless LLMFLEET_SECRET is given, in the volume.
ENV LLMFLEET_LISTEN=0.0.0.0:8787 LLMFLEET_DB=/data/llmfleet.db
USER 65532:65532
VOLUME ["/data"]
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
	CMD ["/usr/local/bin/healthprobe", "http://127.0.0.1:8787/readyz"]
# SIGTERM drains for up to --shutdown-timeout (30s): docker stop -t 40.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/llmfleet"]
CMD ["serve"]
