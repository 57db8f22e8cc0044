// Command devcluster gives a newcomer a cluster to try the operator on, on a machine with no
// Kubernetes: it starts the test framework's real control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) with kwok nodes, runs mysql-operator against it,
// applies an example MySQLCluster, waits until it is Healthy and prints how to look at it. It
// runs in the foreground; Ctrl-C (or SIGTERM) stops every process it started.
//
// kwok pods become Ready without running anything: this shows the operator's Kubernetes side
// (children, scaling, upgrades, status), not MySQL itself.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	"github.com/mysqlop/mysql-operator/test/framework"
)

func main() {
	example := flag.String("example", filepath.Join(framework.RepoRoot(), "docs", "examples", "mariadb-cluster.yaml"), "MySQLCluster manifest to apply")
	operator := flag.String("operator", filepath.Join(framework.BinDir(), "mysql-operator"), "mysql-operator binary")
	flag.Parse()
	if err := run(*example, *operator); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run(example, operatorBin string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	cp, err := framework.Start(framework.Options{KwokNodes: 3})
	if err != nil {
		return err
	}
	defer cp.Stop()
	// Keep the kubeconfig where the user can find it after we print it.
	kubeconfig := filepath.Join(framework.RepoRoot(), "_output", "dev-kubeconfig")
	b, err := os.ReadFile(cp.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		return err
	}
	defer os.Remove(kubeconfig)
	fmt.Printf("control plane %s up in %v\n", cp.Version, time.Since(start).Round(time.Millisecond))

	logPath := filepath.Join(framework.RepoRoot(), "_output", "dev-operator.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	op := exec.Command(operatorBin, "--kubeconfig", kubeconfig, "--leader-elect=false",
		"--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0",
		// kwok pods run no MySQL: there is nothing to replicate.
		"--clustering=false")
	op.Stdout, op.Stderr = logf, logf
	if err := framework.Spawn(op); err != nil {
		return fmt.Errorf("start %s (run make build first): %w", operatorBin, err)
	}
	defer func() { _ = op.Process.Signal(syscall.SIGTERM); _ = op.Wait() }()

	kubectl := func(args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, filepath.Join(framework.BinDir(), "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		return c
	}
	if err := kubectl("apply", "-n", "default", "-f", example).Run(); err != nil {
		return fmt.Errorf("apply %s: %w", example, err)
	}

	mysql, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := mysql.MysqlopV1alpha1().MySQLClusters("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false, nil
		}
		for _, c := range list.Items {
			if c.Status.Phase != v1alpha1.ClusterHealthy {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("example cluster not Healthy (operator log: %s): %w", logPath, err)
	}
	fmt.Printf("\nReady after %v.\n\n", time.Since(start).Round(time.Millisecond))
	_ = kubectl("get", "myc,statefulsets,services,pods", "-n", "default").Run()
	fmt.Printf(`
Try:
  export KUBECONFIG=%s
  %s/kubectl get myc -w
  %s/kubectl scale mysqlcluster/demo --replicas=5
  %s/kubectl patch mysqlcluster/demo --type merge -p '{"spec":{"version":"10.11.8"}}'
Operator log: %s
Pods are kwok pods (Ready without running MySQL). Press Ctrl-C to stop everything.
`, kubeconfig, framework.BinDir(), framework.BinDir(), framework.BinDir(), logPath)
	<-ctx.Done()
	fmt.Println("\nstopping")
	return nil
}
