#!/usr/bin/env bash
# Fails when the operator binary links a package of the agent's side (the agent's server
# pkg/agent, the toolbox or the backup executors) or a test helper (test/..., the controllers'
# unit fixtures). The operator talks to agents only through pkg/agentapi; this keeps its binary
# small and its attack surface without the backup tools.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mod=github.com/mysqlop/mysql-operator
bad=$(go list -deps ./cmd/mysql-operator | grep -E "^${mod}/(pkg/(agent|toolbox|backup/executor|controllers/internal/fixture)|test)(/|$)" || true)
if [ -n "${bad}" ]; then
    echo "cmd/mysql-operator links agent-side packages (use pkg/agentapi) or test helpers:" >&2
    echo "${bad}" >&2
    exit 1
fi
echo "cmd/mysql-operator links no agent-side package and no test helper"
