// Package e2e proves the user journeys on a local cluster whose pods really run: the operator
// installed by its Helm chart and running in-cluster, MariaDB members as processes in their
// own network namespaces (package localcluster). It needs root and the binaries of make build.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	"github.com/mysqlop/mysql-operator/test/framework"
	"github.com/mysqlop/mysql-operator/test/localcluster"
)

const (
	operatorNamespace = localcluster.OperatorNamespace
	// nextVersion is the version of the second operator build the upgrade journey moves to.
	nextVersion = "v0.1.1-e2e"
)

var (
	lc    *localcluster.Cluster
	mysql versioned.Interface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "e2e: needs root (network namespaces, bind mounts); skipping the suite")
		return 0
	}
	// A second operator build, for the operator upgrade journey.
	dir, err := os.MkdirTemp("", "mysqlop-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	next := filepath.Join(dir, "mysql-operator")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-X github.com/mysqlop/mysql-operator/pkg/version.Version="+nextVersion, "-o", next, "./cmd/mysql-operator")
	build.Dir, build.Env = framework.RepoRoot(), append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: build the next operator version: %v: %s\n", err, out)
		return 1
	}
	// Its own instance, bridge and range: the suite can run next to make local-up.
	lc, mysql, err = localcluster.StartWithOperator(localcluster.Options{Instance: "e2", Bridge: "mysqlop-e2", CIDR: "10.245.0.0/16", Nodes: 3,
		ExtraImages: map[string]string{"mysql-operator:" + nextVersion: next}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer lc.Stop()
	apps = lc.Pools(ns, "app", appPassword)
	apps.MaxOpen = 2
	defer apps.Close()
	code := m.Run()
	if code != 0 {
		lc.DumpFailure(os.Stderr, 60)
	}
	return code
}

// eventually polls cond every 200 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("%s: not within %v: %v", what, timeout, err)
	}
}
