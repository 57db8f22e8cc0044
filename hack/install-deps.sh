#!/usr/bin/env bash
# Installs the Debian packages the tests and the local cluster run, when they are missing:
# MariaDB (server, client, backup tool) for the real-server suites and the local cluster's
# members, iproute2 and util-linux for local-kubelet's network namespaces and exec probes, and
# the zstd command line tool for the backup benchmark's floor column.
# The MariaDB service itself is not started: tests and local-kubelet run their own servers.
set -o errexit -o nounset -o pipefail

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }

missing=()
have mariadbd || missing+=(mariadb-server)
have mariadb || missing+=(mariadb-client)
have mariadb-backup || missing+=(mariadb-backup)
have ip || missing+=(iproute2)
have nsenter || missing+=(util-linux)
have zstd || missing+=(zstd)
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "missing packages: ${missing[*]} (as root: apt-get install -y ${missing[*]})" >&2
    exit 1
fi
echo "installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
