#!/usr/bin/env bash
# Checks the Helm chart deploy/helm/llmfleet (CI runs this from .ci/run):
# helm lint, then helm template with the values a user would give, each
# rendering checked for what it must (and must not) hold.
#
# helm comes from the Go module proxy, built once (some 3 minutes of CPU
# cold) into ${XDG_CACHE_HOME:-~/.cache}/llmfleet/tools and reused after.
set -euo pipefail
cd "$(dirname "$0")/.."
HELM_VERSION=v3.22.0
tools=${XDG_CACHE_HOME:-$HOME/.cache}/llmfleet/tools/helm@$HELM_VERSION
helm=$tools/helm
if [ ! -x "$helm" ]; then
	echo "helm.sh: building helm $HELM_VERSION into $tools"
	(cd / && GOBIN=$tools GOFLAGS= go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")
fi
chart=deploy/helm/llmfleet
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pg=(--set postgres.url=postgres://llmfleet@db:5432/llmfleet --set secrets.sealingSecret=0123456789abcdef0123456789abcdef)

"$helm" lint --strict "$chart"
"$helm" lint --strict "$chart" --set replicaCount=3 "${pg[@]}" --set serviceMonitor.enabled=true

# render NAME [helm template flags...]: the manifests into $out/NAME.yaml.
render() {
	local name=$1
	shift
	"$helm" template demo "$chart" --namespace ai "$@" >"$out/$name.yaml"
}
# has NAME PATTERN / lacks NAME PATTERN: a rendering holds (or not) a line.
has() { grep -qE -- "$2" "$out/$1.yaml" || { echo "helm.sh: $1: no line matches $2" >&2; exit 1; }; }
lacks() { ! grep -qE -- "$2" "$out/$1.yaml" || { echo "helm.sh: $1: a line matches $2" >&2; exit 1; }; }

# Defaults: one replica on SQLite in a volume, probes, a non-root pod.
render default
for want in 'kind: Deployment' 'kind: Service$' 'kind: Secret' 'kind: PersistentVolumeClaim' \
	'type: Recreate' 'path: /healthz' 'path: /readyz' 'runAsNonRoot: true' \
	'claimName: demo-llmfleet' 'value: "0.0.0.0:8787"' 'image: "llmfleet:devel"'; do
	has default "$want"
done
lacks default 'kind: ServiceMonitor'
lacks default 'LLMFLEET_DB'

# Several replicas without PostgreSQL: refused, saying why.
if "$helm" template demo "$chart" --set replicaCount=2 >"$out/refused.txt" 2>&1; then
	echo "helm.sh: replicaCount=2 without postgres.url rendered" >&2
	exit 1
fi
grep -q 'replicaCount > 1 needs postgres.url' "$out/refused.txt"
# PostgreSQL without the sealing secret: refused.
if "$helm" template demo "$chart" --set postgres.url=postgres://db/x >"$out/refused.txt" 2>&1; then
	echo "helm.sh: postgres.url without secrets.sealingSecret rendered" >&2
	exit 1
fi
grep -q 'secrets.sealingSecret is required' "$out/refused.txt"

# Three replicas on PostgreSQL: the URL and secret in the Secret, no
# volume claim, rolling updates; the ServiceMonitor when asked.
render fleet --set replicaCount=3 "${pg[@]}" --set serviceMonitor.enabled=true \
	--set secrets.upstream.ANTHROPIC_API_KEY=sk-test --set config.upstream-api-key-env=ANTHROPIC_API_KEY \
	--set 'config.client-keys.alice=0000000000000000000000000000000000000000000000000000000000000000'
for want in 'replicas: 3' 'type: RollingUpdate' 'LLMFLEET_DB: "?postgres://' 'LLMFLEET_SECRET: "?0123' \
	'ANTHROPIC_API_KEY: "?sk-test"?$' 'kind: ServiceMonitor' 'path: /metrics' 'kind: ConfigMap' \
	'upstream-api-key-env: ANTHROPIC_API_KEY' 'value: /etc/llmfleet/config.yaml'; do
	has fleet "$want"
done
lacks fleet 'kind: PersistentVolumeClaim'

# A Secret of the user's: the chart makes none and reads that one.
render existing --set replicaCount=2 --set secrets.existingSecret=mine --set postgres.urlInExistingSecret=true
lacks existing 'kind: Secret'
has existing 'name: mine'
echo "helm.sh: chart $chart: lint and 4 renderings OK ($("$helm" version --short))"
