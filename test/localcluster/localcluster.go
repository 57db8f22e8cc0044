// Package localcluster starts a local cluster whose pods really run: the test framework's
// control plane bound to a pod bridge, and local-kubelet serving its nodes. It backs
// `make local-up` and the end-to-end suite.
package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	"github.com/mysqlop/mysql-operator/test/framework"
	"github.com/mysqlop/mysql-operator/test/localkubelet"
	"github.com/mysqlop/mysql-operator/test/proc"
)

// Options configure a local cluster.
type Options struct {
	// Instance prefixes the runtime's namespaces and links (at most 3 characters); Bridge and
	// CIDR are the pod network. Two clusters on one machine need different values of all three.
	Instance, Bridge, CIDR string
	// Nodes is the number of nodes local-kubelet serves.
	Nodes int
	// ExtraImages maps image name:tag to a binary, for a second build (such as a new operator
	// version) next to the default one.
	ExtraImages map[string]string
}

// Binaries the cluster runs, from framework.BinDir().
var Binaries = []string{"mysql-operator", "mysql-agent", "local-kubelet"}

// Cluster is a running local cluster.
type Cluster struct {
	CP *framework.ControlPlane
	// StateDir holds local-kubelet's pod state (see localkubelet.PIDFile) and its log.
	StateDir string
	Opts     Options

	kubelet *exec.Cmd
	done    chan struct{}
}

// Start starts the cluster; on error what was started is stopped.
func Start(o Options) (c *Cluster, err error) {
	for _, b := range Binaries {
		if _, err := os.Stat(filepath.Join(framework.BinDir(), b)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make build`", b, framework.BinDir())
		}
	}
	gw, _, err := localkubelet.Gateway(o.CIDR)
	if err != nil {
		return nil, err
	}
	_ = localkubelet.Sweep(o.Instance)
	if err := localkubelet.EnsureBridge(o.Bridge, o.CIDR); err != nil {
		return nil, err
	}
	c = &Cluster{Opts: o}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	if c.CP, err = framework.Start(framework.Options{APIServerAddress: gw.String()}); err != nil {
		return c, err
	}
	if c.StateDir, err = os.MkdirTemp("", "mysqlop-local-"); err != nil {
		return c, err
	}
	// Containers run as non-root users: they must reach the binaries.
	if err := os.Chmod(c.StateDir, 0o755); err != nil {
		return c, err
	}
	bin := filepath.Join(c.StateDir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return c, err
	}
	for _, b := range Binaries {
		if err := copyFile(filepath.Join(framework.BinDir(), b), filepath.Join(bin, b)); err != nil {
			return c, err
		}
	}
	u, err := url.Parse(c.CP.Config.Host)
	if err != nil {
		return c, err
	}
	var nodes []string
	for i := 0; i < max(o.Nodes, 1); i++ {
		nodes = append(nodes, fmt.Sprintf("local-%d", i))
	}
	logf, err := os.Create(filepath.Join(c.StateDir, "local-kubelet.log"))
	if err != nil {
		return c, err
	}
	images := []string{"mysql-operator=" + filepath.Join(bin, "mysql-operator")}
	for image, from := range o.ExtraImages {
		to := filepath.Join(bin, strings.NewReplacer(":", "-", "/", "-").Replace(image))
		if err := copyFile(from, to); err != nil {
			return c, err
		}
		images = append(images, image+"="+to)
	}
	c.kubelet = exec.Command(filepath.Join(bin, "local-kubelet"), "--kubeconfig", c.CP.Kubeconfig,
		"--nodes", strings.Join(nodes, ","), "--instance", o.Instance, "--bridge", o.Bridge, "--cidr", o.CIDR,
		"--state-dir", c.StateDir, "--apiserver-host", u.Hostname(), "--apiserver-port", u.Port(),
		"--client-ca-file", c.CP.KubeletClientCAFile,
		"--images", strings.Join(images, ","),
		"--commands", "/mysql-agent="+filepath.Join(bin, "mysql-agent")+",/mysql-operator="+filepath.Join(bin, "mysql-operator"))
	c.kubelet.Stdout, c.kubelet.Stderr = logf, logf
	if err := proc.Start(c.kubelet); err != nil {
		logf.Close()
		return c, fmt.Errorf("start local-kubelet: %w", err)
	}
	c.done = make(chan struct{})
	go func() { _ = c.kubelet.Wait(); logf.Close(); close(c.done) }()
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-c.done:
			b, _ := os.ReadFile(logf.Name())
			return false, fmt.Errorf("local-kubelet exited; its log:\n%s", b)
		default:
		}
		list, err := c.CP.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range list.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == len(nodes), nil
	})
	if err != nil {
		return c, fmt.Errorf("nodes not ready: %w", err)
	}
	return c, nil
}

// Stop stops local-kubelet (which stops every pod process and removes its namespaces and
// links), the control plane and the bridge, and removes the state directory.
func (c *Cluster) Stop() {
	if c.kubelet != nil && c.kubelet.Process != nil {
		_ = c.kubelet.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(90 * time.Second):
			_ = c.kubelet.Process.Kill()
			<-c.done
		}
	}
	if c.CP != nil {
		c.CP.Stop()
	}
	_ = localkubelet.Sweep(c.Opts.Instance)
	_ = localkubelet.RemoveBridge(c.Opts.Bridge)
	if c.StateDir != "" {
		_ = os.RemoveAll(c.StateDir)
	}
}

// Kubectl runs kubectl against the cluster and returns its combined output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	out, err := c.KubectlCommand(ctx, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// KubectlCommand is kubectl with args against the cluster, not started: for a caller that
// streams its input or output.
func (c *Cluster) KubectlCommand(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, filepath.Join(framework.BinDir(), "kubectl"), append([]string{"--kubeconfig", c.CP.Kubeconfig}, args...)...)
}

// InstallOperator installs the chart as release mysql-operator in namespace, with extra
// --set values, and waits for the operator Deployment to be available. The namespace enforces
// the restricted Pod Security profile, as a careful cluster admin's would.
func (c *Cluster) InstallOperator(ctx context.Context, namespace string, set ...string) error {
	if err := c.RestrictNamespace(ctx, namespace); err != nil {
		return err
	}
	args := []string{"upgrade", "--install", "mysql-operator", filepath.Join(framework.RepoRoot(), "contrib", "charts", "mysql-operator"),
		"--kubeconfig", c.CP.Kubeconfig, "--namespace", namespace, "--create-namespace", "--wait=false"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := exec.CommandContext(ctx, filepath.Join(framework.BinDir(), "helm"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("helm install: %w: %s", err, out)
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := c.CP.Kube.AppsV1().Deployments(namespace).Get(ctx, "mysql-operator", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return d.Status.AvailableReplicas >= 1 && d.Status.UpdatedReplicas == d.Status.Replicas, nil
	})
}

// RestrictNamespace creates namespace when it is missing and labels it to enforce the
// restricted Pod Security profile (framework.RestrictedLabels): the API server then refuses
// any pod in it that is not hardened.
func (c *Cluster) RestrictNamespace(ctx context.Context, namespace string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: framework.RestrictedLabels}}
	_, err := c.CP.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create namespace %s: %w", namespace, err)
		}
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": framework.RestrictedLabels}})
	if err != nil {
		return err
	}
	if _, err := c.CP.Kube.CoreV1().Namespaces().Patch(ctx, namespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label namespace %s restricted: %w", namespace, err)
	}
	return nil
}

// PID is the pid of a container's current process.
func (c *Cluster) PID(pod *corev1.Pod, container string) (int, error) {
	b, err := os.ReadFile(localkubelet.PIDFile(c.StateDir, string(pod.UID), container))
	if err != nil {
		return 0, err
	}
	var pid int
	_, err = fmt.Sscan(string(b), &pid)
	return pid, err
}

// Log is a container's log.
func (c *Cluster) Log(pod *corev1.Pod, container string) string {
	b, _ := os.ReadFile(localkubelet.LogFile(c.StateDir, string(pod.UID), container))
	return string(b)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// SetNetwork cuts (up false) or restores the pod's network: the host end of its veth pair goes
// down or up, so the pod reaches nothing and nothing reaches it, while its processes run on.
func (c *Cluster) SetNetwork(pod *corev1.Pod, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	link := localkubelet.HostLink(c.Opts.Instance, string(pod.UID))
	if out, err := exec.Command("ip", "link", "set", link, state).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set %s %s: %w: %s", link, state, err, out)
	}
	return nil
}

// SetRoutes cuts (cut true) or restores the pod's routes to the given pod IPs: blackhole
// routes in its network namespace drop what it sends them, so no connection between them
// works while each still reaches every other address.
func (c *Cluster) SetRoutes(pod *corev1.Pod, ips []string, cut bool) error {
	verb := "del"
	if cut {
		verb = "add"
	}
	ns := localkubelet.Netns(c.Opts.Instance, string(pod.UID))
	for _, ip := range ips {
		out, err := exec.Command("ip", "netns", "exec", ns, "ip", "route", verb, "blackhole", ip+"/32").CombinedOutput()
		if err != nil && (cut || !strings.Contains(string(out), "No such process")) {
			return fmt.Errorf("ip route %s blackhole %s in %s: %w: %s", verb, ip, ns, err, out)
		}
	}
	return nil
}

// OperatorNamespace is where the suites install the operator.
const OperatorNamespace = "mysqlop-system"

// StartWithOperator starts a cluster (Start) and installs the operator's chart into
// OperatorNamespace with the client rate the suites use, and returns a client of the
// operator's API; on error what was started is stopped.
func StartWithOperator(o Options) (*Cluster, versioned.Interface, error) {
	c, err := Start(o)
	if err != nil {
		return nil, nil, fmt.Errorf("start local cluster: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.InstallOperator(ctx, OperatorNamespace, "kubeAPI.qps=100", "kubeAPI.burst=200"); err != nil {
		c.Stop()
		return nil, nil, err
	}
	client, err := versioned.NewForConfig(c.CP.Config)
	if err != nil {
		c.Stop()
		return nil, nil, err
	}
	return c, client, nil
}

// DumpFailure writes the control plane's logs and the last lines (0: all) of the operator's
// (there is no kubelet API for kubectl logs: the runtime keeps container logs in files).
func (c *Cluster) DumpFailure(w io.Writer, lines int) {
	c.CP.DumpLogs(w, 30)
	pods, _ := c.CP.Kube.CoreV1().Pods(OperatorNamespace).List(context.Background(), metav1.ListOptions{})
	for i := range pods.Items {
		log := c.Log(&pods.Items[i], "operator")
		if all := strings.Split(strings.TrimRight(log, "\n"), "\n"); lines > 0 && len(all) > lines {
			log = strings.Join(all[len(all)-lines:], "\n")
		}
		fmt.Fprintf(w, "===== operator log (%s) =====\n%s\n", pods.Items[i].Name, log)
	}
}
