#!/usr/bin/env bash
# Builds the binaries the test suites run, from source, into _output/bin: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kubectl (pinned in hack/kube-tools), and kwok,
# helm and versitygw (pinned below), staticcheck for `make lint`, and promtool and prometheus (monitoring tests) when asked for by name. Nothing is downloaded but Go modules. A binary is rebuilt
# only when it is missing or its pin changed (a stamp file records what built it).
#
# Usage: hack/build-tools.sh [name ...]   (default: all)
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="${ROOT}/_output/bin"
mkdir -p "${BIN}"

KUBE_VERSION=v1.37.2
KWOK_VERSION=v0.8.0
HELM_VERSION=v3.22.0
VERSITYGW_VERSION=v1.8.0
STATICCHECK_VERSION=v0.8.2
PROMETHEUS_VERSION=v0.316.0 # the Go module's version of Prometheus 3.x

KUBE_LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    KUBE_LDFLAGS+=" -X ${pkg}.gitVersion=${KUBE_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=37 -X ${pkg}.gitTreeState=clean"
done
KUBE_PIN=$(cat "${ROOT}/hack/kube-tools/go.mod" "${ROOT}/hack/kube-tools/go.sum" | sha256sum | cut -c1-16)

# fresh NAME PIN: true when BIN/NAME exists and was built from PIN.
fresh() { [ -x "${BIN}/$1" ] && [ "$(cat "${BIN}/.$1.pin" 2>/dev/null)" = "$2" ]; }
stamp() { echo "$2" > "${BIN}/.$1.pin"; }

build_kube() { # NAME PACKAGE
    local name=$1 pkg=$2
    fresh "${name}" "${KUBE_PIN}" && return 0
    echo "building ${name} ${KUBE_VERSION}" >&2
    (cd "${ROOT}/hack/kube-tools" && go build -trimpath -ldflags "${KUBE_LDFLAGS}" -o "${BIN}/${name}" "${pkg}")
    stamp "${name}" "${KUBE_PIN}"
}

install_module() { # NAME MODULE_PATH VERSION PACKAGE
    local name=$1 module=$2 version=$3 pkg=$4
    fresh "${name}" "${module}@${version}" && return 0
    echo "building ${name} ${version}" >&2
    GOBIN="${BIN}" GOFLAGS=-trimpath go install "${pkg}@${version}"
    stamp "${name}" "${module}@${version}"
}

kwok_stages() {
    local dir
    dir=$(go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
    local out="${BIN}/kwok-stages.yaml"
    : > "${out}.tmp"
    for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml pod/fast/pod-ready.yaml \
             pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
        cat "${dir}/kustomize/stage/${f}" >> "${out}.tmp"
        printf '\n---\n' >> "${out}.tmp"
    done
    mv "${out}.tmp" "${out}"
}

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok helm versitygw)
for t in "${want[@]}"; do
    case "${t}" in
        etcd) build_kube etcd go.etcd.io/etcd/server/v3 ;;
        kube-apiserver|kube-controller-manager|kube-scheduler|kubectl) build_kube "${t}" "k8s.io/kubernetes/cmd/${t}" ;;
        kwok) install_module kwok sigs.k8s.io/kwok "${KWOK_VERSION}" sigs.k8s.io/kwok/cmd/kwok; kwok_stages ;;
        helm) install_module helm helm.sh/helm/v3 "${HELM_VERSION}" helm.sh/helm/v3/cmd/helm ;;
        versitygw) install_module versitygw github.com/versity/versitygw "${VERSITYGW_VERSION}" github.com/versity/versitygw/cmd/versitygw ;;
        promtool|prometheus) install_module "${t}" github.com/prometheus/prometheus "${PROMETHEUS_VERSION}" "github.com/prometheus/prometheus/cmd/${t}" ;;
        staticcheck) install_module staticcheck honnef.co/go/tools "${STATICCHECK_VERSION}" honnef.co/go/tools/cmd/staticcheck ;;
        *) echo "unknown tool ${t}" >&2; exit 2 ;;
    esac
done
