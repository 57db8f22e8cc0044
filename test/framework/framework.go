// Package framework starts a real Kubernetes control plane for the integration and end-to-end
// suites: etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from source by
// hack/build-tools.sh, optionally kwok with fake nodes, and an in-process volume provisioner.
//
// One control plane serves a whole test binary (start it from TestMain). Every process runs in a
// temporary directory on free loopback ports, logs to a file there, and is stopped by pid in
// Stop. Processes are also started through package proc, so the kernel kills them if the test
// binary dies (a panic or a timeout) before Stop runs.
package framework

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/test/proc"
)

// Options say what to start besides etcd, the apiserver, the controller manager and the scheduler.
type Options struct {
	// KwokNodes is the number of fake nodes kwok manages; 0 starts no kwok. Pods scheduled onto
	// them become Running and Ready without running anything.
	KwokNodes int
	// PodCIDR is the range kwok gives pod IPs from.
	PodCIDR string
	// APIServerAddress is the address kube-apiserver binds to and advertises; 127.0.0.1
	// unless pods in their own network namespaces must reach it (then the pod bridge's).
	APIServerAddress string
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Dir holds data, logs, keys and the kubeconfig; Stop removes it.
	Dir string
	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	// Config is an admin client configuration.
	Config *rest.Config
	// Kube is an admin client.
	Kube kubernetes.Interface
	// Version is the apiserver's version.
	Version string
	// KubeletClientCAFile is the CA of the certificate the API server presents to kubelets
	// (for logs, exec and port-forward): a kubelet that serves those verifies it.
	KubeletClientCAFile string

	procs  []*process
	cancel context.CancelFunc
}

type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// RepoRoot is the repository root, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BinDir is where the control-plane binaries are: $MYSQLOP_BIN_DIR or _output/bin.
func BinDir() string {
	if d := os.Getenv("MYSQLOP_BIN_DIR"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "_output", "bin")
}

// Start starts a control plane and installs the repository's CRDs. On error everything started
// so far is stopped.
func Start(o Options) (cp *ControlPlane, err error) {
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		if _, err := os.Stat(filepath.Join(BinDir(), b)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make tools` (hack/build-tools.sh)", b, BinDir())
		}
	}
	dir, err := os.MkdirTemp("", "mysqlop-cp-")
	if err != nil {
		return nil, fmt.Errorf("make control plane dir: %w", err)
	}
	cp = &ControlPlane{Dir: dir}
	defer func() {
		if err != nil {
			cp.DumpLogs(os.Stderr, 40)
			cp.Stop()
			cp = nil
		}
	}()

	ports, err := proc.FreePorts(5)
	if err != nil {
		return cp, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if err := cp.run("etcd", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"--initial-cluster", fmt.Sprintf("default=http://127.0.0.1:%d", ports[1]),
		"--unsafe-no-fsync", "--quota-backend-bytes", "8589934592"); err != nil {
		return cp, err
	}
	if err := waitHTTP(etcdURL+"/health", nil, 30*time.Second); err != nil {
		return cp, fmt.Errorf("etcd: %w", err)
	}

	token, err := cp.writeCredentials()
	if err != nil {
		return cp, err
	}
	addr := o.APIServerAddress
	if addr == "" {
		addr = "127.0.0.1"
	}
	server := fmt.Sprintf("https://%s", net.JoinHostPort(addr, fmt.Sprint(ports[2])))
	if err := cp.run("kube-apiserver",
		"--etcd-servers", etcdURL, "--secure-port", fmt.Sprint(ports[2]),
		"--bind-address", addr, "--advertise-address", addr,
		// The default reconciler refuses a loopback advertise address.
		"--endpoint-reconciler-type", "none",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--cert-dir", filepath.Join(dir, "certs"),
		"--authorization-mode", "Node,RBAC",
		"--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--max-requests-inflight", "2000", "--max-mutating-requests-inflight", "1000",
		// kubectl logs/exec/port-forward: the API server dials a node's InternalIP (local
		// node names do not resolve) and presents this certificate; it does not verify the
		// kubelet's (no --kubelet-certificate-authority), as by default.
		"--kubelet-preferred-address-types", "InternalIP",
		"--kubelet-client-certificate", filepath.Join(dir, "kubelet-client.crt"),
		"--kubelet-client-key", filepath.Join(dir, "kubelet-client.key")); err != nil {
		return cp, err
	}
	cp.Config = &rest.Config{Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 500, Burst: 1000}
	if err := waitHTTP(server+"/readyz", cp.Config, 60*time.Second); err != nil {
		return cp, fmt.Errorf("kube-apiserver: %w", err)
	}
	if err := cp.writeKubeconfig(server, token); err != nil {
		return cp, err
	}
	if cp.Kube, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return cp, fmt.Errorf("admin client: %w", err)
	}
	v, err := cp.Kube.Discovery().ServerVersion()
	if err != nil {
		return cp, fmt.Errorf("server version: %w", err)
	}
	cp.Version = v.GitVersion

	// CRDs go in before the controller manager starts, so that its garbage collector watches
	// MySQLClusters from the start instead of after its next rediscovery.
	if err := InstallCRDs(context.Background(), cp.Config, filepath.Join(RepoRoot(), "contrib", "manifests", "crds")); err != nil {
		return cp, err
	}
	if err := cp.run("kube-controller-manager", "--kubeconfig", cp.Kubeconfig,
		"--service-account-private-key-file", filepath.Join(dir, "sa.key"),
		"--root-ca-file", filepath.Join(dir, "certs", "apiserver.crt"),
		"--leader-elect=false", "--use-service-account-credentials=false", "--controllers=*",
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(ports[3]),
		"--kube-api-qps", "1000", "--kube-api-burst", "2000",
		"--concurrent-statefulset-syncs", "20", "--concurrent-gc-syncs", "50"); err != nil {
		return cp, err
	}
	if err := cp.writeSchedulerConfig(); err != nil {
		return cp, err
	}
	if err := cp.run("kube-scheduler", "--config", filepath.Join(dir, "scheduler.yaml"),
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(ports[4])); err != nil {
		return cp, err
	}

	ctx, cancel := context.WithCancel(context.Background())
	cp.cancel = cancel
	if err := startProvisioner(ctx, cp.Kube, filepath.Join(dir, "volumes")); err != nil {
		return cp, err
	}
	if o.KwokNodes > 0 {
		if err := cp.startKwok(ctx, o); err != nil {
			return cp, err
		}
	}
	return cp, nil
}

// Stop stops every process (SIGTERM, then SIGKILL after 10 s) in reverse start order and
// removes Dir. It is safe to call more than once.
func (cp *ControlPlane) Stop() {
	if cp.cancel != nil {
		cp.cancel()
	}
	for i := len(cp.procs) - 1; i >= 0; i-- {
		proc.Terminate(cp.procs[i].cmd.Process, cp.procs[i].done, 10*time.Second)
	}
	cp.procs = nil
	if cp.Dir != "" {
		_ = os.RemoveAll(cp.Dir)
	}
}

// DumpLogs writes the last n lines of every component's log to w.
func (cp *ControlPlane) DumpLogs(w io.Writer, n int) {
	for _, p := range cp.procs {
		b, err := os.ReadFile(p.log)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(w, "===== last %d lines of %s (%s) =====\n%s\n", len(lines), p.name, p.log, strings.Join(lines, "\n"))
	}
}

// Pid returns the pid of the named component, or 0.
func (cp *ControlPlane) Pid(name string) int {
	for _, p := range cp.procs {
		if p.name == name {
			return p.cmd.Process.Pid
		}
	}
	return 0
}

// run starts BinDir()/name with args, logging to Dir/name.log.
func (cp *ControlPlane) run(name string, args ...string) error {
	log := filepath.Join(cp.Dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return fmt.Errorf("create %s log: %w", name, err)
	}
	cmd := exec.Command(filepath.Join(BinDir(), name), args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = cp.Dir
	if err := proc.Start(cmd); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	cp.procs = append(cp.procs, p)
	return nil
}

// Spawn starts cmd with the same guarantees as the control plane's own processes: it is killed
// when the test binary dies. The caller waits for and stops it.
func Spawn(cmd *exec.Cmd) error { return proc.Start(cmd) }

func (cp *ControlPlane) writeCredentials() (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("generate service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", fmt.Errorf("encode service account key: %w", err)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	token := hex.EncodeToString(b)
	files := map[string][]byte{
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"sa.pub":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		"tokens.csv": []byte(token + `,admin,admin,"system:masters"` + "\n"),
	}
	// The API server's client certificate towards kubelets, under a CA of its own.
	ca, err := pki.NewCA("kubelet client CA", time.Now(), 10*365*24*time.Hour)
	if err != nil {
		return "", fmt.Errorf("kubelet client CA: %w", err)
	}
	client, err := pki.Issue(ca, pki.Request{CommonName: "kube-apiserver-kubelet-client", Lifetime: 10 * 365 * 24 * time.Hour}, time.Now())
	if err != nil {
		return "", fmt.Errorf("kubelet client certificate: %w", err)
	}
	files["kubelet-client-ca.crt"], files["kubelet-client.crt"], files["kubelet-client.key"] = ca.CertPEM, client.CertPEM, client.KeyPEM
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(cp.Dir, name), data, 0o600); err != nil {
			return "", fmt.Errorf("write %s: %w", name, err)
		}
	}
	cp.KubeletClientCAFile = filepath.Join(cp.Dir, "kubelet-client-ca.crt")
	return token, nil
}

func (cp *ControlPlane) writeKubeconfig(server, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	cfg.CurrentContext = "local"
	cp.Kubeconfig = filepath.Join(cp.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, cp.Kubeconfig); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

func (cp *ControlPlane) writeSchedulerConfig() error {
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
`, cp.Kubeconfig)
	return os.WriteFile(filepath.Join(cp.Dir, "scheduler.yaml"), []byte(cfg), 0o600)
}

// waitHTTP polls url until it answers 200. With cfg, it authenticates as cfg does.
func waitHTTP(url string, cfg *rest.Config, timeout time.Duration) error {
	client := http.DefaultClient
	if cfg != nil {
		rt, err := rest.TransportFor(cfg)
		if err != nil {
			return err
		}
		client = &http.Client{Transport: rt, Timeout: 5 * time.Second}
	}
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %s", url, resp.Status)
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return errors.Join(fmt.Errorf("%s not ready after %v", url, timeout), last)
}
