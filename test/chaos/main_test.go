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
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	"github.com/mysqlop/mysql-operator/test/localcluster"
)

const operatorNamespace = "mysqlop-system"

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
	lc, err = localcluster.Start(localcluster.Options{Instance: "ch", Bridge: "mysqlop-ch", CIDR: "10.246.0.0/16", Nodes: 3})
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos: start local cluster:", err)
		return 1
	}
	defer lc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := lc.InstallOperator(ctx, operatorNamespace, "kubeAPI.qps=100", "kubeAPI.burst=200"); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	if mysql, err = versioned.NewForConfig(lc.CP.Config); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		lc.CP.DumpLogs(os.Stderr, 30)
		pods, _ := lc.CP.Kube.CoreV1().Pods(operatorNamespace).List(context.Background(), metav1.ListOptions{})
		for i := range pods.Items {
			fmt.Fprintf(os.Stderr, "===== operator log (%s) =====\n%s\n", pods.Items[i].Name, lc.Log(&pods.Items[i], "operator"))
		}
	}
	return code
}
