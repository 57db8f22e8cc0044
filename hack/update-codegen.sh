#!/usr/bin/env bash
# Regenerates everything generated in this repository: deepcopy functions, the typed clientset,
# listers, informers and apply configurations (code-generator's kube_codegen.sh), and the CRDs
# (controller-gen, from the kubebuilder markers in pkg/apis).
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
MODULE=github.com/mysqlop/mysql-operator
TOOLS="${ROOT}/hack/tools"
BIN="${ROOT}/_output/bin"
mkdir -p "${BIN}"

# go list reports no directory for a module not yet in the module cache: download it first.
(cd "${TOOLS}" && go mod download k8s.io/code-generator)
CODEGEN_PKG=$(cd "${TOOLS}" && go list -m -f '{{.Dir}}' k8s.io/code-generator)
# kube_codegen.sh installs its generators into GOBIN; keep them out of the user's GOPATH/bin.
export GOBIN="${BIN}"
# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --output-dir "${ROOT}/pkg/generated" \
    --output-pkg "${MODULE}/pkg/generated" \
    --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
    "${ROOT}/pkg/apis"

(cd "${TOOLS}" && go build -o "${BIN}/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen)
rm -rf "${ROOT}/contrib/manifests/crds"
"${BIN}/controller-gen" crd:crdVersions=v1,maxDescLen=400 \
    paths=./pkg/apis/... \
    output:crd:dir=./contrib/manifests/crds
