// Command local measures, on a local cluster whose pods really run (package localcluster), the
// time from `kubectl apply` of a three-member MariaDB MySQLCluster to Healthy, and failover:
// the primary's mysqld SIGKILLed each time it restarts (a crash-looping primary), with a writer
// committing through the application account, until the first write acknowledged by the new
// primary. Each run uses a fresh cluster in its own namespace. It prints a table.
//
// With -burst N each failover happens while N other three-member clusters are being created
// (16 creates in flight; the crash loop starts once half were sent): the operator is busy
// making their children while it fails the measured cluster over. Their pods never start (a
// node selector no node matches, a storage class that does not exist), so the machine's cores
// go to the operator and the control plane, as with a burst on a large cluster.
//
// Usage: go run ./test/bench/local -runs 5 [-burst 500]   (or make bench-local; needs root and make build)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/test/localcluster"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

const appPassword = "bench-app-Pa55"

func main() {
	runs := flag.Int("runs", 5, "clusters to create, each failed over once")
	burst := flag.Int("burst", 0, "other clusters created during each failover")
	flag.Parse()
	if err := run(*runs, *burst); err != nil {
		fmt.Fprintln(os.Stderr, "bench-local:", err)
		os.Exit(1)
	}
}

type result struct {
	ready, promoted, firstWrite time.Duration
	acked, lost                 int
	// burstSent is how many of the burst's clusters were created when the failover was seen
	// in status, burstSets how many of their StatefulSets the operator had made by then.
	burstSent, burstSets int
}

func run(runs, burst int) error {
	lc, err := localcluster.Start(localcluster.Options{Instance: "bl", Bridge: "mysqlop-bl", CIDR: "10.246.0.0/16", Nodes: 3})
	if err != nil {
		return err
	}
	defer lc.Stop()
	ctx := context.Background()
	if err := lc.InstallOperator(ctx, "mysqlop-system"); err != nil {
		return err
	}
	mysql, err := versioned.NewForConfig(lc.CP.Config)
	if err != nil {
		return err
	}
	var results []result
	for i := range runs {
		r, err := once(ctx, lc, mysql, fmt.Sprintf("bench-%d", i), burst)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		fmt.Fprintf(os.Stderr, "run %d: apply to Healthy %v; failover: new primary in status %v, first acknowledged write %v; %d acknowledged, %d lost; burst: %d of %d created, %d StatefulSets\n",
			i+1, r.ready.Round(time.Millisecond), r.promoted.Round(time.Millisecond), r.firstWrite.Round(time.Millisecond), r.acked, r.lost, r.burstSent, burst, r.burstSets)
		results = append(results, r)
	}
	col := func(f func(result) time.Duration) (p50, max time.Duration) {
		var v []time.Duration
		for _, r := range results {
			v = append(v, f(r))
		}
		slices.Sort(v)
		return v[len(v)/2].Round(time.Millisecond), v[len(v)-1].Round(time.Millisecond)
	}
	acked, lost := 0, 0
	for _, r := range results {
		acked, lost = acked+r.acked, lost+r.lost
	}
	r50, rmax := col(func(r result) time.Duration { return r.ready })
	p50, pmax := col(func(r result) time.Duration { return r.promoted })
	w50, wmax := col(func(r result) time.Duration { return r.firstWrite })
	fmt.Printf("\n| runs | clusters created during the failover | apply to Healthy (3 members) p50 / max | SIGKILL to new primary in status p50 / max | SIGKILL to first acknowledged write p50 / max | acknowledged writes | lost |\n|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %d | %d | %v / %v | %v / %v | %v / %v | %d | %d |\n", len(results), burst, r50, rmax, p50, pmax, w50, wmax, acked, lost)
	if lost > 0 {
		return fmt.Errorf("%d acknowledged writes lost", lost)
	}
	return nil
}

func once(ctx context.Context, lc *localcluster.Cluster, mysql versioned.Interface, ns string, burst int) (r result, err error) {
	if _, err := lc.Kubectl(ctx, "create", "namespace", ns); err != nil {
		return r, err
	}
	manifest := localcluster.ClusterManifest("db", appPassword)
	dir, err := os.MkdirTemp("", "mysqlop-bench-local-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		return r, err
	}
	start := time.Now()
	if _, err := lc.Kubectl(ctx, "apply", "-n", ns, "-f", path); err != nil {
		return r, err
	}
	clusters := mysql.MysqlopV1alpha1().MySQLClusters(ns)
	status := func() *v1alpha1.MySQLCluster {
		c, err := clusters.Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return &v1alpha1.MySQLCluster{}
		}
		return c
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		c := status()
		return c.Status.Phase == v1alpha1.ClusterHealthy && c.Status.ReadyMembers == 3, nil
	})
	if err != nil {
		return r, fmt.Errorf("not Healthy: %w", err)
	}
	r.ready = time.Since(start)

	pools := lc.Pools(ns, "app", appPassword)
	defer pools.Close()
	db := pools.Get
	primary := status().Status.Primary
	// The user and the schema are ready shortly after the cluster.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		d, err := db(primary)
		if err != nil {
			return false, nil
		}
		_, err = d.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS app.t (id INT PRIMARY KEY, v TEXT)")
		return err == nil, nil
	})
	if err != nil {
		return r, fmt.Errorf("create app.t: %w", err)
	}
	w := localcluster.StartWriter(db, func() string { return status().Status.Primary })
	time.Sleep(2 * time.Second)
	victim, err := lc.CP.Kube.CoreV1().Pods(ns).Get(ctx, primary, metav1.GetOptions{})
	if err != nil {
		w.Stop()
		return r, err
	}
	var b *burster
	if burst > 0 {
		if b, err = startBurst(ctx, lc, mysql, ns+"-burst", burst); err != nil {
			w.Stop()
			return r, err
		}
		defer func() {
			if e := b.remove(ctx); err == nil {
				err = e
			}
		}()
	}
	killed := time.Now()
	var next string
	ok := lc.CrashLoop(victim, resources.ContainerMySQL, 2*time.Minute, func() bool {
		next = status().Status.Primary
		return next != "" && next != primary
	})
	if !ok {
		w.Stop()
		return r, fmt.Errorf("no failover from %s", primary)
	}
	r.promoted = time.Since(killed)
	if b != nil {
		r.burstSent, r.burstSets = b.progress(ctx)
	}
	r.firstWrite = w.FirstAckAfter(killed, next, 30*time.Second)
	acked := w.Stop()
	d, err := db(next)
	if err != nil {
		return r, err
	}
	lost, err := mariadb.Lost(ctx, d, acked)
	if err != nil {
		return r, err
	}
	r.acked, r.lost = len(acked), len(lost)
	// Free the machine for the next run.
	if err := clusters.Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		return r, err
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		pods, err := lc.CP.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
	return r, err
}
