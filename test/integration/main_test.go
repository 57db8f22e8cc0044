// Package integration runs the real operator wiring (pkg/operator, in process) against a real
// etcd, kube-apiserver, kube-controller-manager and kube-scheduler, with kwok nodes whose pods
// turn Ready without running anything. Where the operator must talk to MySQL (clustering, users,
// databases), real MariaDB servers on loopback stand for the members' mysqld.
package integration

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	"github.com/mysqlop/mysql-operator/pkg/operator"
	"github.com/mysqlop/mysql-operator/pkg/options"
	"github.com/mysqlop/mysql-operator/test/framework"
)

var (
	cp    *framework.ControlPlane
	mysql versioned.Interface
	// operatorBinary is a fresh build of cmd/mysql-operator, for the tests that need a process
	// they can SIGKILL.
	operatorBinary string
	// operatorLog is the file the in-process operators log to.
	operatorLog string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	logDir, err := os.MkdirTemp("", "mysqlop-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(logDir)
	// The in-process operators log to a file, shown only when a test fails.
	opLog := filepath.Join(logDir, "operator.log")
	operatorLog = opLog
	if err := redirectKlog(opLog); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	start := time.Now()
	cp, err = framework.Start(framework.Options{KwokNodes: 3})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start control plane:", err)
		return 1
	}
	defer cp.Stop()
	fmt.Printf("control plane: kube-apiserver %s ready in %v (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok from %s)\n",
		cp.Version, time.Since(start).Round(time.Millisecond), framework.BinDir())
	if mysql, err = versioned.NewForConfig(cp.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	operatorBinary = filepath.Join(logDir, "mysql-operator")
	build := exec.Command("go", "build", "-o", operatorBinary, "./cmd/mysql-operator")
	build.Dir = framework.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build mysql-operator: %v\n%s", err, out)
		return 1
	}

	code := m.Run()
	if code != 0 {
		cp.DumpLogs(os.Stderr, 60)
		klog.Flush()
		if b, err := os.ReadFile(opLog); err == nil {
			fmt.Fprintf(os.Stderr, "===== in-process operator log (last 16 KiB) =====\n%s\n", tail(b, 16<<10))
		}
	}
	return code
}

func redirectKlog(path string) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Parse([]string{"-logtostderr=false", "-alsologtostderr=false", "-stderrthreshold=FATAL", "-v=2"}); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	klog.SetOutput(f)
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// startOperator runs the operator's own wiring in process, watching ns, until the test ends
// or the returned stop function is called (which waits for it to return).
func startOperator(t *testing.T, ns string, mutate ...func(*options.Options)) (stop func()) {
	t.Helper()
	return startOperatorAs(t, cp.Config, ns, mutate...)
}

// startOperatorAs is startOperator with the client configuration cfg (for example one that
// impersonates the Helm chart's ServiceAccount).
func startOperatorAs(t *testing.T, cfg *rest.Config, ns string, mutate ...func(*options.Options)) (stop func()) {
	t.Helper()
	o := options.New()
	o.Namespaces = []string{ns}
	o.LeaderElect = false
	o.MetricsAddr, o.HealthAddr = "0", "0"
	o.ResyncPeriod = time.Minute
	o.AgentImage = "mysqlop/mysql-agent:test"
	o.OperatorVersion = "v0.0.1-test"
	// kwok pods run no MySQL; the clustering suite turns it on with local servers.
	o.Clustering = false
	for _, m := range mutate {
		m(o)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().WithValues("operator", o.OperatorVersion, "ns", ns)))
	done := make(chan error, 1)
	go func() { done <- operator.RunWithConfig(ctx, o, cfg) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("operator returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("operator did not stop within 30s")
		}
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls cond every 100 ms until it returns true or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, cond)
	if err != nil {
		t.Fatalf("%s: not within %v: %v", what, timeout, err)
	}
}

func newCluster(ns, name string, members int32, version string) *v1alpha1.MySQLCluster {
	return &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.MySQLClusterSpec{
			Flavor: v1alpha1.FlavorMariaDB, Members: members, Version: version,
			// kwok places pods on fake nodes; no real resources are involved.
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")}},
			},
		},
	}
}

func createCluster(t *testing.T, c *v1alpha1.MySQLCluster) *v1alpha1.MySQLCluster {
	t.Helper()
	got, err := mysql.MysqlopV1alpha1().MySQLClusters(c.Namespace).Create(context.Background(), c, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create cluster: %v", err)
	}
	return got
}

func getCluster(t *testing.T, ns, name string) *v1alpha1.MySQLCluster {
	t.Helper()
	c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get cluster: %v", err)
	}
	return c
}

// editCluster applies mutate to the latest version of the cluster, retrying on conflicts.
func editCluster(t *testing.T, ns, name string, mutate func(*v1alpha1.MySQLCluster)) {
	t.Helper()
	eventually(t, 10*time.Second, "update cluster", func(ctx context.Context) (bool, error) {
		c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mutate(c)
		_, err = mysql.MysqlopV1alpha1().MySQLClusters(ns).Update(ctx, c, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

// waitHealthy waits until the cluster reports every member ready on the current template.
func waitHealthy(t *testing.T, ns, name string, members int32, timeout time.Duration) *v1alpha1.MySQLCluster {
	t.Helper()
	var c *v1alpha1.MySQLCluster
	eventually(t, timeout, "cluster "+name+" healthy", func(ctx context.Context) (bool, error) {
		var err error
		c, err = mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return c.Status.ObservedGeneration == c.Generation && c.Status.Phase == v1alpha1.ClusterHealthy &&
			c.Status.ReadyMembers == members && meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady), nil
	})
	return c
}

// events returns the reasons of the events recorded for object name in ns.
// event waits for an event with reason on the object name and returns its message. Events
// are recorded asynchronously by the broadcaster, so one may land after the status write
// a test has just seen; a missing event after eventWait is a failure.
func event(t *testing.T, ns, name, reason string) (string, bool) {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, eventWait, true, func(ctx context.Context) (bool, error) {
		list, err := cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, fmt.Errorf("list events: %w", err)
		}
		for _, e := range list.Items {
			if e.Reason == reason {
				msg = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	return msg, err == nil
}

// eventWait bounds how long event waits for the broadcaster.
const eventWait = 15 * time.Second
