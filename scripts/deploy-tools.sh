#!/usr/bin/env bash
# The tools test/deploy needs to check the Helm chart and the alert rules without a cluster: helm,
# kubeconform, promtool, and the JSON schemas kubeconform validates against, all offline. Installed
# once into the cache scripts/infra.sh uses (outside the repository), as it installs Kafka and MinIO.
#
# Usage: scripts/deploy-tools.sh [install|env|promtool]
#   install  install what is missing, then print the env lines (stdout)
#   env      print the env lines of what is installed; exit 1 if something is missing
#   promtool install promtool alone if missing, then print its PROMTOOL line (the metrics tests need
#            nothing else, and helm takes long to build)
#
# Env lines: HELM=<binary> KUBECONFORM=<binary> PROMTOOL=<binary>
#   KUBE_SCHEMA_LOCATIONS=<kubeconform -schema-location templates, separated by spaces>
#   KUBE_VERSIONS=<Kubernetes versions the schemas cover, separated by spaces>
#
# Where each comes from (only package registries are reachable where this project is built):
#   helm, kubeconform, controller-gen: `go install` from the Go module proxy.
#   promtool: Debian's prometheus package.
#   Kubernetes schemas: the PyPI package kubernetes-validate, which ships them per Kubernetes version
#     (kubeconform would fetch them from GitHub).
#   ServiceMonitor and PrometheusRule schemas: CRDs generated with controller-gen from the Go module
#     of prometheus-operator's API types (the CRD files themselves are not in a served module).
#
# Environment: GATEWAY_INFRA_CACHE (default ~/.cache/evidence-gateway-infra), as scripts/infra.sh.
# Needs: bash, go, python3 with pip, apt-get and dpkg-deb, node (with the repository's npm
# dependencies installed).
set -euo pipefail

HELM_VERSION=v4.3.2
KUBECONFORM_VERSION=v0.8.0
CONTROLLER_GEN_VERSION=v0.23.0
PROMETHEUS_OPERATOR_VERSION=v0.86.0
KUBERNETES_VALIDATE_VERSION=1.37.0
# The chart's kubeVersion floor and the newest Kubernetes the package covers.
KUBE_VERSIONS="1.30.0 1.37.0"

SCRIPT_NAME=deploy-tools
# shellcheck source=scripts/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

HELM_HOME="$CACHE/helm-$HELM_VERSION"
KUBECONFORM_HOME="$CACHE/kubeconform-$KUBECONFORM_VERSION"
PROMTOOL_HOME="$CACHE/promtool-debian"
KUBE_SCHEMAS_HOME="$CACHE/kube-schemas-$KUBERNETES_VALIDATE_VERSION"
CRD_SCHEMAS_HOME="$CACHE/crd-schemas-$PROMETHEUS_OPERATOR_VERSION"


# cached NAME HOME BUILD: run BUILD TMP into a folder beside HOME and move it into place with a
# .complete marker, under the cache's lock (the one scripts/infra.sh takes), so concurrent runs build
# once and a half-built folder is never taken for a complete one.
cached() {
  local name="$1" home="$2" build="$3" tmp
  [[ -f "$home/.complete" ]] && return 0
  mkdir -p "$CACHE"
  exec 8>"$CACHE/.install.lock"
  flock 8
  if [[ ! -f "$home/.complete" ]]; then
    tmp="$(dirname "$home")/.tmp-$(basename "$home")"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    log "installing $name into $home"
    "$build" "$tmp"
    touch "$tmp/.complete"
    rm -rf "$home"
    mv "$tmp" "$home"
  fi
  exec 8>&-
}

# go_install TMP MODULE@VERSION: a static binary into TMP/bin, outside any module so the
# repository's files cannot interfere.
go_install() {
  need go "the tools are built with 'go install'"
  mkdir -p "$1/bin"
  if ! (cd "$1" && GOBIN="$1/bin" CGO_ENABLED=0 GOWORK=off GOFLAGS=-buildvcs=false go install "$2") >"$1/build.log" 2>&1; then
    tail -n 30 "$1/build.log" >&2
    die "go install $2 failed (log: $1/build.log)"
  fi
}

build_helm() { go_install "$1" "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"; }
build_kubeconform() { go_install "$1" "github.com/yannh/kubeconform/cmd/kubeconform@$KUBECONFORM_VERSION"; }
# promtool from Debian's prometheus package, unpacked, not installed (that would start a Prometheus).
# From the Go module it is the slowest tool of all to build (it compiles every service discovery's
# cloud SDK) and `go install` refuses it (its go.mod replaces a dependency); the rules it checks are
# the same.
build_promtool() {
  local tmp="$1" deb
  need apt-get "promtool comes from Debian's prometheus package"
  if ! (cd "$tmp" && apt-get download prometheus) >"$tmp/apt.log" 2>&1; then
    apt-get update >>"$tmp/apt.log" 2>&1 || true
    (cd "$tmp" && apt-get download prometheus) >>"$tmp/apt.log" 2>&1 \
      || { tail -n 20 "$tmp/apt.log" >&2; die "apt-get download prometheus failed (log: $tmp/apt.log)"; }
  fi
  deb="$(echo "$tmp"/prometheus_*.deb)"
  dpkg-deb -x "$deb" "$tmp/deb"
  mkdir -p "$tmp/bin"
  mv "$tmp/deb/usr/bin/promtool" "$tmp/bin/promtool"
  dpkg-deb -f "$deb" Version >"$tmp/VERSION"
  rm -rf "$tmp/deb" "$deb"
}

# The package's strict schemas name themselves by https://kubernetes.io/... ($id) and refer to their
# shared definitions by an absolute path (/api/_definitions.json), which resolve only through the
# package's own loader: without $id and with a relative path, kubeconform finds them as files.
build_kube_schemas() {
  local tmp="$1" v
  need python3 "pip downloads the kubernetes-validate package"
  python3 -m pip download --quiet --no-deps --dest "$tmp/wheel" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" >&2 \
    || die "pip could not download kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  for v in $KUBE_VERSIONS; do
    python3 - "$tmp"/wheel/*.whl "v$v-local-strict" "$tmp/v$v-strict" <<'EOF'
import json, os, sys, zipfile
wheel, folder, out = sys.argv[1:]
prefix = f'kubernetes_validate/kubernetes-json-schema/{folder}/'
os.makedirs(out)
count = 0
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and name.endswith('.json'):
            schema = json.loads(z.read(name).decode('utf-8').replace('"/api/_definitions.json#', '"_definitions.json#'))
            schema.pop('$id', None)
            with open(os.path.join(out, name[len(prefix):]), 'w') as f:
                json.dump(schema, f)
            count += 1
if count == 0:
    sys.exit(f'no schemas under {prefix} in {wheel}')
EOF
  done
  rm -rf "$tmp/wheel"
}

# ServiceMonitor and PrometheusRule as prometheus-operator generates them, each version's
# openAPIV3Schema written where kubeconform's template below looks (strict: no unknown fields).
build_crd_schemas() {
  local tmp="$1" src
  go_install "$tmp" "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION"
  src="$(cd "$tmp" && GOWORK=off GOFLAGS=-mod=mod go mod download -json \
    "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring@$PROMETHEUS_OPERATOR_VERSION" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')" \
    || die "could not download prometheus-operator's API module $PROMETHEUS_OPERATOR_VERSION"
  cp -r "$src" "$tmp/api"
  chmod -R u+w "$tmp/api"
  if ! (cd "$tmp/api" && GOWORK=off GOFLAGS=-mod=mod "$tmp/bin/controller-gen" crd:crdVersions=v1,maxDescLen=0 \
        paths=./v1/... output:crd:dir="$tmp/crds") >"$tmp/crd.log" 2>&1; then
    tail -n 30 "$tmp/crd.log" >&2
    die "controller-gen could not generate prometheus-operator's CRDs (log: $tmp/crd.log)"
  fi
  node "$ROOT/scripts/crd-schemas.mjs" "$tmp/crds" "$tmp/schemas"
  rm -rf "$tmp/api" "$tmp/crds" "$tmp/bin"
}

install() {
  cached helm "$HELM_HOME" build_helm
  cached kubeconform "$KUBECONFORM_HOME" build_kubeconform
  cached promtool "$PROMTOOL_HOME" build_promtool
  cached "Kubernetes schemas" "$KUBE_SCHEMAS_HOME" build_kube_schemas
  cached "prometheus-operator schemas" "$CRD_SCHEMAS_HOME" build_crd_schemas
}

print_env() {
  local home
  for home in "$HELM_HOME" "$KUBECONFORM_HOME" "$PROMTOOL_HOME" "$KUBE_SCHEMAS_HOME" "$CRD_SCHEMAS_HOME"; do
    [[ -f "$home/.complete" ]] || die "$home is missing ('$0 install' installs it)"
  done
  # shellcheck disable=SC2016 # kubeconform's templates, not shell expansions
  cat <<EOF
HELM=$HELM_HOME/bin/helm
KUBECONFORM=$KUBECONFORM_HOME/bin/kubeconform
PROMTOOL=$PROMTOOL_HOME/bin/promtool
KUBE_SCHEMA_LOCATIONS=$KUBE_SCHEMAS_HOME/{{.NormalizedKubernetesVersion}}{{.StrictSuffix}}/{{.ResourceKind}}{{.KindSuffix}}.json $CRD_SCHEMAS_HOME/schemas/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json
KUBE_VERSIONS=$KUBE_VERSIONS
EOF
}

case "${1:-install}" in
  install) install; print_env ;;
  env) print_env ;;
  promtool) cached promtool "$PROMTOOL_HOME" build_promtool; echo "PROMTOOL=$PROMTOOL_HOME/bin/promtool" ;;
  *) echo "usage: $0 [install|env|promtool]" >&2; exit 2 ;;
esac
