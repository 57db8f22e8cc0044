#!/usr/bin/env bash
# Fails when generated code or CRDs differ from what hack/update-codegen.sh produces now.
# Runs the generators in a copy of the tree so that the working tree is never touched.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "${TMP}"' EXIT

GENERATED=(pkg/apis pkg/generated contrib/manifests contrib/charts/mysql-operator/crds)
mkdir -p "${TMP}/tree"
# Copy sources without build outputs; _output/bin is shared so tools are not rebuilt.
tar -C "${ROOT}" --exclude=./_output --exclude=./.git -cf - . | tar -C "${TMP}/tree" -xf -
mkdir -p "${ROOT}/_output/bin"
ln -s "${ROOT}/_output" "${TMP}/tree/_output"

"${TMP}/tree/hack/update-codegen.sh" >/dev/null

status=0
for d in "${GENERATED[@]}"; do
    if ! diff -Naupr "${ROOT}/${d}" "${TMP}/tree/${d}"; then
        status=1
    fi
done
if [ "${status}" -ne 0 ]; then
    echo "Generated files are stale: run hack/update-codegen.sh" >&2
    exit 1
fi
echo "Generated files are up to date."
