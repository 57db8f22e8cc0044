// Command reconcile measures how the Cluster controller scales. For each client QPS setting and
// each cluster count it starts a fresh control plane (with kwok nodes), runs the real
// mysql-operator binary against it, creates N MySQLClusters of 3 members at once and reports:
//
//   - the time until every cluster has all seven children and a written status,
//   - the time until every cluster is Healthy (its kwok pods ready),
//   - the operator's API requests per cluster (its own mysqlop_api_requests_total),
//   - the operator's peak RSS (VmHWM).
//
// With -tls on,off it repeats each run with the clusters' TLS on (the default: the operator
// issues a CA and a server certificate per cluster, three more Secrets) and off
// (spec.tls.disabled), so the cost of certificates shows in the same table.
//
// Usage: go run ./test/bench/reconcile -clusters 10,100,500 -qps 20,100 [-tls on,off]   (or make bench)
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	"github.com/mysqlop/mysql-operator/test/framework"
	"github.com/mysqlop/mysql-operator/test/proc"
)

type result struct {
	qps                int
	tls                bool
	clusters           int
	children, ready    time.Duration
	requestsPerCluster float64
	peakRSSMiB         float64
	err                error
}

func main() {
	clusters := flag.String("clusters", "10,100,500", "comma-separated cluster counts")
	qpsList := flag.String("qps", "20,100", "comma-separated --kube-api-qps settings (burst is twice the QPS)")
	nodes := flag.Int("nodes", 10, "kwok nodes")
	timeout := flag.Duration("timeout", 20*time.Minute, "limit for one run")
	tlsList := flag.String("tls", "on", "comma-separated TLS settings of the clusters: on (the default spec) and/or off (spec.tls.disabled)")
	flag.Parse()
	var tlsModes []bool
	for _, m := range strings.Split(*tlsList, ",") {
		switch strings.TrimSpace(m) {
		case "on":
			tlsModes = append(tlsModes, true)
		case "off":
			tlsModes = append(tlsModes, false)
		default:
			fmt.Fprintf(os.Stderr, "-tls: %q is neither on nor off\n", m)
			os.Exit(2)
		}
	}

	bin, err := buildOperator()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(filepath.Dir(bin))

	var results []result
	for _, q := range ints(*qpsList) {
		for _, n := range ints(*clusters) {
			for _, tls := range tlsModes {
				fmt.Fprintf(os.Stderr, "run: qps=%d clusters=%d tls=%s\n", q, n, onOff(tls))
				r := runOnce(bin, q, n, *nodes, tls, *timeout)
				if r.err != nil {
					fmt.Fprintf(os.Stderr, "  failed: %v\n", r.err)
				}
				results = append(results, r)
			}
		}
	}
	fmt.Printf("\n| QPS/burst | clusters | TLS | all children + status | all Ready | API requests / cluster | operator peak RSS |\n")
	fmt.Printf("|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		if r.err != nil {
			fmt.Printf("| %d/%d | %d | %s | failed: %v | | | |\n", r.qps, 2*r.qps, r.clusters, onOff(r.tls), r.err)
			continue
		}
		fmt.Printf("| %d/%d | %d | %s | %.1f s | %.1f s | %.1f | %.0f MiB |\n", r.qps, 2*r.qps, r.clusters, onOff(r.tls),
			r.children.Seconds(), r.ready.Seconds(), r.requestsPerCluster, r.peakRSSMiB)
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func runOnce(bin string, qps, n, nodes int, tls bool, timeout time.Duration) (r result) {
	r = result{qps: qps, clusters: n, tls: tls}
	cp, err := framework.Start(framework.Options{KwokNodes: nodes})
	if err != nil {
		r.err = err
		return r
	}
	defer cp.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	const ns = "bench"
	if _, err := cp.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		r.err = err
		return r
	}
	mysql, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		r.err = err
		return r
	}

	port, err := proc.FreePort()
	if err != nil {
		r.err = err
		return r
	}
	logf, err := os.Create(filepath.Join(cp.Dir, "operator.log"))
	if err != nil {
		r.err = err
		return r
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--kubeconfig", cp.Kubeconfig, "--namespace", ns, "--leader-elect=false",
		"--kube-api-qps", strconv.Itoa(qps), "--kube-api-burst", strconv.Itoa(2*qps),
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port), "--health-addr", "0", "--clustering=false")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := framework.Spawn(cmd); err != nil {
		r.err = err
		return r
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	if _, err := scrape(ctx, metricsURL, true); err != nil {
		r.err = err
		return r
	}

	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Create(ctx, cluster(ns, fmt.Sprintf("c%04d", i), tls), metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		r.err = fmt.Errorf("create clusters: %w", err)
		return r
	}

	for r.ready == 0 {
		if ctx.Err() != nil {
			r.err = fmt.Errorf("timed out after %v (children done: %v)", timeout, r.children)
			return r
		}
		time.Sleep(500 * time.Millisecond)
		done, ready, err := progress(ctx, cp, mysql, ns, tls)
		if err != nil {
			continue
		}
		if r.children == 0 && done == n {
			r.children = time.Since(start)
		}
		if ready == n {
			r.ready = time.Since(start)
		}
	}
	total, err := scrape(ctx, metricsURL, false)
	if err != nil {
		r.err = err
		return r
	}
	r.requestsPerCluster = total / float64(n)
	r.peakRSSMiB, r.err = peakRSS(cmd.Process.Pid)
	return r
}

func cluster(ns, name string, tls bool) *v1alpha1.MySQLCluster {
	c := &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.MySQLClusterSpec{Flavor: v1alpha1.FlavorMariaDB, Members: 3, Version: "10.11.6",
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			}},
	}
	if !tls {
		c.Spec.TLS = v1alpha1.TLSSpec{Disabled: true}
	}
	return c
}

// progress counts clusters with all their children (seven, ten with TLS: the CA key, the
// servers' certificate and the CA bundle) and a written status, and Healthy clusters.
func progress(ctx context.Context, cp *framework.ControlPlane, mysql versioned.Interface, ns string, tls bool) (done, ready int, err error) {
	names := map[string]bool{}
	add := func(kind, name string) { names[kind+"/"+name] = true }
	secrets, err := cp.Kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	for _, o := range secrets.Items {
		add("secret", o.Name)
	}
	cms, err := cp.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	for _, o := range cms.Items {
		add("configmap", o.Name)
	}
	svcs, err := cp.Kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	for _, o := range svcs.Items {
		add("service", o.Name)
	}
	pdbs, err := cp.Kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	for _, o := range pdbs.Items {
		add("pdb", o.Name)
	}
	sets, err := cp.Kube.AppsV1().StatefulSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	for _, o := range sets.Items {
		add("statefulset", o.Name)
	}
	clusters, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	for _, c := range clusters.Items {
		n := c.Name
		if c.Status.ObservedGeneration >= 1 && names["secret/"+n+"-credentials"] && names["configmap/"+n+"-config"] &&
			names["service/"+n+"-headless"] && names["service/"+n+"-primary"] && names["service/"+n+"-replicas"] &&
			names["pdb/"+n] && names["statefulset/"+n] &&
			(!tls || names["secret/"+n+"-ca-key"] && names["secret/"+n+"-tls"] && names["secret/"+n+"-ca"]) {
			done++
		}
		if c.Status.Phase == v1alpha1.ClusterHealthy && c.Status.ReadyMembers == 3 {
			ready++
		}
	}
	return done, ready, nil
}

// scrape returns the sum of mysqlop_api_requests_total; with wait it retries until the
// endpoint answers.
func scrape(ctx context.Context, url string, wait bool) (float64, error) {
	for {
		total, err := scrapeOnce(ctx, url)
		if err == nil || !wait || ctx.Err() != nil {
			return total, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func scrapeOnce(ctx context.Context, url string) (float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var total float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "mysqlop_api_requests_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			total += v
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return total, sc.Err()
}

func peakRSS(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", pid)
}

func buildOperator() (string, error) {
	dir, err := os.MkdirTemp("", "mysqlop-bench-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "mysql-operator")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/mysql-operator")
	cmd.Dir = framework.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build operator: %v\n%s", err, out)
	}
	return bin, nil
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}
