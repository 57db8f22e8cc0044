// Package chaos injects real faults into a MariaDB cluster on a local cluster whose pods run
// as processes (package localcluster), under a writer that records every acknowledged commit,
// while a monitor asserts the clustering invariants every 100 ms. After each fault heals the
// cluster must be Healthy with every member ready, with no action of the suite's, and every
// member must hold every acknowledged write with equal table checksums. It needs root and the
// binaries of make build. CHAOS_ROUNDS (default 1) sets how often each fault kind runs;
// make chaos and make bench-chaos run more, and the suite prints a table of figures per
// fault kind (docs/benchmarks.md).
package chaos

import (
	"fmt"
	"os"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	"github.com/mysqlop/mysql-operator/test/localcluster"
)

const operatorNamespace = localcluster.OperatorNamespace

var (
	lc    *localcluster.Cluster
	mysql versioned.Interface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "chaos: needs root (network namespaces, bind mounts); skipping the suite")
		return 0
	}
	// Its own instance, bridge and range: the suite can run next to make local-up and e2e.
	var err error
	lc, mysql, err = localcluster.StartWithOperator(localcluster.Options{Instance: "ch", Bridge: "mysqlop-ch", CIDR: "10.246.0.0/16", Nodes: 3})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	defer lc.Stop()
	code := m.Run()
	if code != 0 {
		lc.DumpFailure(os.Stderr, 0)
	}
	return code
}
