// Command localup is `make local-up` and `make local-down`: it starts a local cluster whose pods
// really run (package localcluster), installs the operator with its Helm chart (the operator
// runs in-cluster, as a pod), applies the example three-member MariaDB cluster and waits for
// it to be Healthy; then it prints how to reach it and returns, leaving a background
// supervisor that `localup down` stops. Everything lives under _output/local.
//
//	localup up     start (in the background) and wait until Ready
//	localup down   stop, and check that no process, namespace or link is left
//	localup serve  the supervisor itself (foreground)
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	"github.com/mysqlop/mysql-operator/test/framework"
	"github.com/mysqlop/mysql-operator/test/localcluster"
)

// The local cluster's network: distinct from the e2e suite's, so both can run at once.
var opts = localcluster.Options{Instance: "lu", Bridge: "mysqlop-lu", CIDR: "10.244.0.0/16", Nodes: 3}

const operatorNamespace = "mysqlop-system"

// ensureAppSecret creates the Secret the example's MySQLUser names, with a random password
// (kept when it exists: a re-run must not change the account's password under an application).
func ensureAppSecret(ctx context.Context, c *localcluster.Cluster) error {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-app-password", Namespace: "default"},
		StringData: map[string]string{"password": base64.RawURLEncoding.EncodeToString(b)}}
	_, err := c.CP.Kube.CoreV1().Secrets("default").Create(ctx, sec, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create secret demo-app-password: %w", err)
	}
	return nil
}

func dir() string { return filepath.Join(framework.RepoRoot(), "_output", "local") }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: localup up|down|serve")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "up":
		err = up()
	case "down":
		err = down()
	case "serve":
		err = serve()
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localup:", err)
		os.Exit(1)
	}
}

func pidFile() string   { return filepath.Join(dir(), "localup.pid") }
func readyFile() string { return filepath.Join(dir(), "ready") }
func logFile() string   { return filepath.Join(dir(), "localup.log") }

func up() error {
	if pid, ok := running(); ok {
		return fmt.Errorf("a local cluster runs already (pid %d): make local-down first", pid)
	}
	if err := os.MkdirAll(dir(), 0o755); err != nil {
		return err
	}
	_ = os.Remove(readyFile())
	logf, err := os.Create(logFile())
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "serve")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: the supervisor outlives this command and the terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start supervisor: %w", err)
	}
	if err := os.WriteFile(pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fmt.Printf("starting (log: %s) ...\n", logFile())
	deadline := time.After(15 * time.Minute)
	for {
		if b, err := os.ReadFile(readyFile()); err == nil {
			fmt.Print(string(b))
			return nil
		}
		select {
		case err := <-exited:
			_ = os.Remove(pidFile())
			b, _ := os.ReadFile(logFile())
			return fmt.Errorf("supervisor exited (%v); its log:\n%s", err, tail(string(b), 40))
		case <-deadline:
			return fmt.Errorf("not ready after 15 minutes; see %s, then make local-down", logFile())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func running() (int, bool) {
	b, err := os.ReadFile(pidFile())
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	return pid, true
}

func down() error {
	if pid, ok := running(); ok {
		fmt.Printf("stopping supervisor %d ...\n", pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 240 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(500 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// Whatever a killed supervisor left behind.
	cmd := exec.Command(filepath.Join(framework.BinDir(), "local-kubelet"), "--sweep", "--instance", opts.Instance)
	if out, err := cmd.CombinedOutput(); err != nil && !errors.Is(err, exec.ErrNotFound) {
		fmt.Fprintf(os.Stderr, "sweep: %v: %s\n", err, out)
	}
	if _, err := net.InterfaceByName(opts.Bridge); err == nil {
		_ = exec.Command("ip", "link", "del", opts.Bridge).Run()
	}
	_ = os.Remove(pidFile())
	_ = os.Remove(readyFile())
	_ = os.Remove(filepath.Join(dir(), "kubeconfig"))
	return leftovers()
}

// leftovers fails when a namespace, link or process of the local cluster is still there.
func leftovers() error {
	var left []string
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "mlk"+opts.Instance+"-") {
			left = append(left, "netns "+strings.Fields(l)[0])
		}
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if i.Name == opts.Bridge || strings.HasPrefix(i.Name, "mk"+opts.Instance) {
			left = append(left, "link "+i.Name)
		}
	}
	etc, _ := filepath.Glob("/etc/netns/mlk" + opts.Instance + "-*")
	for _, d := range etc {
		left = append(left, "file "+d)
	}
	out, _ = exec.Command("pgrep", "-f", "mysqlop-local-|mysqlop-cp-").Output()
	for _, p := range strings.Fields(string(out)) {
		left = append(left, "process "+p)
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind: %s", strings.Join(left, ", "))
	}
	fmt.Println("stopped; no process, namespace or link left")
	return nil
}

func serve() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	c, err := localcluster.Start(opts)
	if err != nil {
		return err
	}
	defer c.Stop()
	fmt.Printf("control plane and %d nodes up in %v\n", opts.Nodes, time.Since(start).Round(time.Millisecond))
	kubeconfig := filepath.Join(dir(), "kubeconfig")
	b, err := os.ReadFile(c.CP.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		return err
	}
	if err := c.InstallOperator(ctx, operatorNamespace); err != nil {
		return err
	}
	fmt.Printf("operator installed with helm and available after %v\n", time.Since(start).Round(time.Millisecond))
	example := filepath.Join(framework.RepoRoot(), "docs", "examples", "mariadb-cluster.yaml")
	// The example's application account takes its password from this Secret.
	if err := ensureAppSecret(ctx, c); err != nil {
		return err
	}
	applied := time.Now()
	out, err := c.Kubectl(ctx, "apply", "-n", "default", "-f", example)
	if err != nil {
		return err
	}
	fmt.Print(out)
	mysql, err := versioned.NewForConfig(c.CP.Config)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		cl, err := mysql.MysqlopV1alpha1().MySQLClusters("default").Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return cl.Status.Phase == v1alpha1.ClusterHealthy && cl.Status.ReadyMembers == cl.Spec.Members, nil
	})
	if err != nil {
		return fmt.Errorf("example cluster not Healthy: %w (pods: %s)", err, c.StateDir)
	}
	toReady := time.Since(applied).Round(time.Millisecond)
	// The application account is what the printed commands use: wait for it too.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := mysql.MysqlopV1alpha1().MySQLUsers("default").Get(ctx, "demo-app", metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(u.Status.Conditions, v1alpha1.ConditionReady), nil
	})
	if err != nil {
		return fmt.Errorf("example MySQLUser demo-app not Ready: %w", err)
	}
	kubectl := filepath.Join(framework.BinDir(), "kubectl")
	msg := fmt.Sprintf(`
Ready: MySQLCluster default/demo, 3 MariaDB members, apply to Ready in %[1]v (everything in %[2]v).
The pods are real processes; the operator runs in-cluster (namespace %[3]s).

  export KUBECONFIG=%[4]s
  alias kubectl=%[5]s
  kubectl get myc,myu,mydb,pods -o wide

Connect as the example's application account (MySQLUser demo-app: user app, schema app, TLS
required, password from Secret demo-app-password), to the primary:

  PRIMARY=$(kubectl get pod -l %[6]s=demo,%[7]s=%[8]s -o jsonpath='{.items[0].status.podIP}')
  PW=$(kubectl get secret demo-app-password -o jsonpath='{.data.password}' | base64 -d)
  MYSQL_PWD="$PW" mariadb --ssl -h "$PRIMARY" -u app app -e 'SELECT @@hostname, @@global.read_only'

or from inside the primary's pod: kubectl exec -it "$(kubectl get pod -l %[6]s=demo,%[7]s=%[8]s -o name)" -c mysqld -- mariadb --ssl -h 127.0.0.1 -u app -p app
Logs: kubectl logs demo-0 -c mysqld (or -c agent; --previous after a restart).
Stop everything with: make local-down
`, toReady, time.Since(start).Round(time.Millisecond), operatorNamespace, kubeconfig, kubectl,
		v1alpha1.LabelCluster, v1alpha1.LabelRole, v1alpha1.RolePrimary)
	if err := os.WriteFile(readyFile(), []byte(msg), 0o644); err != nil {
		return err
	}
	fmt.Print(msg)
	<-ctx.Done()
	fmt.Println("stopping")
	return nil
}
