// Command reconcile measures how the Cluster controller scales. For each client QPS setting and
// each cluster count it starts a fresh control plane (with kwok nodes), runs the real
// mysql-operator binary against it, creates N MySQLClusters of 3 members at once (16 creates
// in flight) and reports, from the first create:
//
//   - the time until every cluster's StatefulSet exists, and until every StatefulSet has 3
//     ready replicas (kwok pods),
//   - the time until every cluster has all its children and a written status, and until
//     every cluster is Healthy,
//   - the operator's CPU seconds (from /proc) and API requests per cluster (its own
//     mysqlop_api_requests_total, by method) at that point, its failed requests (answered
//     with a 4xx or 5xx code, or not at all) by code, and its peak RSS (VmHWM),
//   - the control plane's CPU seconds over the run (etcd, API server, controller manager,
//     scheduler and kwok; from /proc), and the API server's share.
//
// For each cluster count it also measures the control plane's own floor: on another fresh
// control plane it creates the same N StatefulSets (the operator's, built by the same code)
// directly, at the same concurrency, and nothing else; "StatefulSets ready / floor" compares
// the two. With -floor-objects it also creates, without the operator, every object a cluster
// has (its Secrets, ConfigMap, StatefulSet, Services, PodDisruptionBudget and NetworkPolicy, in
// the operator's order): what the control plane needs for the object set alone, so that the
// rest of an operator run's time is the operator's.
//
// With -tls on,off it repeats each run with the clusters' TLS on (the default: the operator
// issues a CA and a server certificate per cluster, three more Secrets) and off
// (spec.tls.disabled), so the cost of certificates shows in the same table.
//
// Usage: go run ./test/bench/reconcile -clusters 10,100,500 -qps 0,20 [-tls on,off] [-floor=false] [-floor-objects] [-workers n] [-operator-flags '...'] [-logs dir]   (or make bench)
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	mysqlinformers "github.com/mysqlop/mysql-operator/pkg/generated/informers/externalversions"
	"github.com/mysqlop/mysql-operator/test/framework"
	"github.com/mysqlop/mysql-operator/test/proc"
)

// cpuProfileSeconds is how much of a run's start the operator's CPU profile (-logs) covers.
const cpuProfileSeconds = 90

// inFlight is how many creates the benchmark keeps in flight, for clusters and for the floor's
// StatefulSets alike.
const inFlight = 16

type result struct {
	qps   int
	tls   bool
	floor bool
	// objects marks a floor run that created every object of a cluster, not just the
	// StatefulSet.
	objects  bool
	clusters int
	// Times from the first create.
	stsExist, stsReady, children, healthy time.Duration
	cpuSeconds                            float64
	// planeCPU and apiserverCPU are the control plane's CPU seconds (etcd, API server,
	// controller manager, scheduler and kwok) and the API server's share, from the first
	// create to the end of the run (all ready; for the operator's runs, all Healthy).
	planeCPU, apiserverCPU float64
	requests               map[string]float64 // by method
	// failed counts the operator's requests answered with an error (HTTP 4xx/5xx, or none),
	// by code.
	failed     map[string]float64
	peakRSSMiB float64
	err        error
}

func main() {
	clusters := flag.String("clusters", "10,100,500", "comma-separated cluster counts")
	qpsList := flag.String("qps", "0,20", "comma-separated --kube-api-qps settings (burst is twice the QPS; 0: no client-side limit, the operator's default)")
	nodes := flag.Int("nodes", 10, "kwok nodes")
	timeout := flag.Duration("timeout", 20*time.Minute, "limit for one run")
	tlsList := flag.String("tls", "on", "comma-separated TLS settings of the clusters: on (the default spec) and/or off (spec.tls.disabled)")
	floor := flag.Bool("floor", true, "also measure the control plane's floor: the same StatefulSets created directly")
	floorObjects := flag.Bool("floor-objects", false, "also measure the floor with every object of a cluster created directly (no operator)")
	logs := flag.String("logs", "", "directory to keep each run's operator log, API server load and the operator's heap and CPU (first 90 s) profiles in")
	workers := flag.Int("workers", 0, "--cluster-workers of the operator (0: its default)")
	operatorFlags := flag.String("operator-flags", "", "more flags for the operator, space-separated (e.g. --kube-api-compression=true)")
	flag.Parse()
	extra := strings.Fields(*operatorFlags)
	if *workers > 0 {
		extra = append(extra, "--cluster-workers", strconv.Itoa(*workers))
	}
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
	for _, n := range ints(*clusters) {
		if n == 0 {
			continue
		}
		if *floor {
			fmt.Fprintf(os.Stderr, "run: floor clusters=%d\n", n)
			r := runFloor(n, *nodes, *timeout, *logs, false)
			report(r)
			results = append(results, r)
		}
		if *floorObjects {
			fmt.Fprintf(os.Stderr, "run: floor with every object, clusters=%d\n", n)
			r := runFloor(n, *nodes, *timeout, *logs, true)
			report(r)
			results = append(results, r)
		}
		for _, q := range ints(*qpsList) {
			for _, tls := range tlsModes {
				fmt.Fprintf(os.Stderr, "run: qps=%d clusters=%d tls=%s\n", q, n, onOff(tls))
				r := runOnce(bin, q, n, *nodes, tls, *timeout, *logs, extra)
				report(r)
				results = append(results, r)
			}
		}
	}
	fmt.Printf("\n| run | clusters | TLS | all StatefulSets exist | all StatefulSets ready | ready / floor | all children + status | all Healthy | operator CPU | control plane CPU (API server) | API requests / cluster | failed requests | operator peak RSS |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	floors := map[int]time.Duration{}
	for _, r := range results {
		if r.floor && !r.objects && r.err == nil {
			floors[r.clusters] = r.stsReady
		}
	}
	for _, r := range results {
		fmt.Println(row(r, floors[r.clusters]))
	}
}

func report(r result) {
	if r.err != nil {
		fmt.Fprintf(os.Stderr, "  failed: %v\n", r.err)
		return
	}
	fmt.Fprintln(os.Stderr, "  "+row(r, 0))
}

// row is one line of the table.
func row(r result, floor time.Duration) string {
	name := "QPS " + rate(r.qps)
	if r.floor {
		name = "floor: the StatefulSets alone"
		if r.objects {
			name = "floor: every object of a cluster, no operator"
		}
	}
	if r.err != nil {
		return fmt.Sprintf("| %s | %d | %s | failed: %v | | | | | | | | | |", name, r.clusters, onOff(r.tls), r.err)
	}
	ratio := ""
	if floor > 0 {
		ratio = fmt.Sprintf("%.2f", r.stsReady.Seconds()/floor.Seconds())
	}
	if r.floor {
		if !r.objects {
			ratio = "1"
		}
		return fmt.Sprintf("| %s | %d | | %.1f s | %.1f s | %s | | | | %.0f s (%.0f s) | | | |", name, r.clusters, r.stsExist.Seconds(), r.stsReady.Seconds(), ratio,
			r.planeCPU, r.apiserverCPU)
	}
	return fmt.Sprintf("| %s | %d | %s | %.1f s | %.1f s | %s | %.1f s | %.1f s | %.1f s | %.0f s (%.0f s) | %s | %s | %.0f MiB |", name, r.clusters, onOff(r.tls),
		r.stsExist.Seconds(), r.stsReady.Seconds(), ratio, r.children.Seconds(), r.healthy.Seconds(), r.cpuSeconds, r.planeCPU, r.apiserverCPU,
		perCluster(r.requests, r.clusters), failures(r.failed), r.peakRSSMiB)
}

// failures is the count of failed requests and their split by code.
func failures(byCode map[string]float64) string {
	var total float64
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(byCode)) {
		total += byCode[c]
		parts = append(parts, fmt.Sprintf("%s: %.0f", c, byCode[c]))
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%.0f (%s)", total, strings.Join(parts, ", "))
}

// perCluster is the total of requests per cluster and its split by method.
func perCluster(byMethod map[string]float64, n int) string {
	var total float64
	var methods []string
	for m, v := range byMethod {
		total += v
		methods = append(methods, m)
	}
	sort.Strings(methods)
	var parts []string
	for _, m := range methods {
		parts = append(parts, fmt.Sprintf("%s %.1f", m, byMethod[m]/float64(n)))
	}
	return fmt.Sprintf("%.1f (%s)", total/float64(n), strings.Join(parts, ", "))
}

// rate is a --kube-api-qps setting as the table shows it: QPS/burst, or "none" for 0 (no
// client-side limit).
func rate(qps int) string {
	if qps == 0 {
		return "none (0)"
	}
	return fmt.Sprintf("%d/%d", qps, 2*qps)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// watcher follows what the benchmark measures through informers (one list and a watch per
// kind), so that polling does not load the API server it measures.
type watcher struct {
	sets                                cache.Indexer
	secrets, configMaps, services, pdbs cache.Indexer
	clusters                            cache.Indexer
	stop                                chan struct{}
}

// watch starts the informers: StatefulSets, with children the kinds of a cluster's other
// children too (the floor with every object watches them as an operator run does, so that
// the benchmark's own load is the same), and with mysql the clusters.
func watch(cp *framework.ControlPlane, mysql versioned.Interface, ns string, children bool) (*watcher, error) {
	w := &watcher{stop: make(chan struct{})}
	kf := kubeinformers.NewSharedInformerFactoryWithOptions(cp.Kube, 0, kubeinformers.WithNamespace(ns))
	w.sets = kf.Apps().V1().StatefulSets().Informer().GetIndexer()
	if children {
		w.secrets = kf.Core().V1().Secrets().Informer().GetIndexer()
		w.configMaps = kf.Core().V1().ConfigMaps().Informer().GetIndexer()
		w.services = kf.Core().V1().Services().Informer().GetIndexer()
		w.pdbs = kf.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer()
	}
	if mysql != nil {
		mf := mysqlinformers.NewSharedInformerFactoryWithOptions(mysql, 0, mysqlinformers.WithNamespace(ns))
		w.clusters = mf.Mysqlop().V1alpha1().MySQLClusters().Informer().GetIndexer()
		mf.Start(w.stop)
		for t, ok := range mf.WaitForCacheSync(w.stop) {
			if !ok {
				return nil, fmt.Errorf("cache of %v did not sync", t)
			}
		}
	}
	kf.Start(w.stop)
	for t, ok := range kf.WaitForCacheSync(w.stop) {
		if !ok {
			return nil, fmt.Errorf("cache of %v did not sync", t)
		}
	}
	return w, nil
}

func has(idx cache.Indexer, ns, name string) bool {
	_, ok, _ := idx.GetByKey(ns + "/" + name)
	return ok
}

// progress counts StatefulSets that exist and that have their 3 replicas ready and, when
// children are watched, clusters with all their children (seven, ten with TLS: the CA key, the
// servers' certificate and the CA bundle) and a written status, and Healthy clusters.
func (w *watcher) progress(ns string, tls bool) (exist, ready, done, healthy int) {
	for _, o := range w.sets.List() {
		exist++
		if s := o.(*appsv1.StatefulSet); s.Status.ReadyReplicas == 3 {
			ready++
		}
	}
	if w.clusters == nil {
		return exist, ready, 0, 0
	}
	for _, o := range w.clusters.List() {
		c := o.(*v1alpha1.MySQLCluster)
		n := c.Name
		if c.Status.ObservedGeneration >= 1 && has(w.secrets, ns, n+"-credentials") && has(w.configMaps, ns, n+"-config") &&
			has(w.services, ns, n+"-headless") && has(w.services, ns, n+"-primary") && has(w.services, ns, n+"-replicas") &&
			has(w.pdbs, ns, n) && has(w.sets, ns, n) &&
			(!tls || has(w.secrets, ns, n+"-ca-key") && has(w.secrets, ns, n+"-tls") && has(w.secrets, ns, n+"-ca")) {
			done++
		}
		if c.Status.Phase == v1alpha1.ClusterHealthy && c.Status.ReadyMembers == 3 {
			healthy++
		}
	}
	return exist, ready, done, healthy
}

// createAll runs create for 0..n-1 with inFlight calls at a time and returns the first error.
func createAll(n int, create func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, inFlight)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := create(i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// ns is the namespace every run creates its objects in.
const ns = "bench"

// startRun starts a fresh control plane with kwok nodes and creates ns in it. stop ends the
// control plane and ctx, which ends after timeout.
func startRun(nodes int, timeout time.Duration) (cp *framework.ControlPlane, ctx context.Context, stop func(), err error) {
	cp, err = framework.Start(framework.Options{KwokNodes: nodes})
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	stop = func() { cancel(); cp.Stop() }
	if _, err := cp.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		stop()
		return nil, nil, nil, fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return cp, ctx, stop, nil
}

// runFloor creates the StatefulSets the operator would make for n clusters, and nothing else;
// with objects, every object of each cluster (see clusterObjects).
func runFloor(n, nodes int, timeout time.Duration, logs string, objects bool) (r result) {
	r = result{floor: true, objects: objects, clusters: n}
	cp, ctx, stop, err := startRun(nodes, timeout)
	if err != nil {
		r.err = err
		return r
	}
	defer stop()
	w, err := watch(cp, nil, ns, objects)
	if err != nil {
		r.err = err
		return r
	}
	defer close(w.stop)
	var tlsPEM tlsFiles
	if objects {
		if tlsPEM, err = newTLSFiles(); err != nil {
			r.err = err
			return r
		}
	}
	planeStart := controlPlaneCPU(cp)
	start := time.Now()
	err = createAll(n, func(i int) error {
		c := cluster(ns, fmt.Sprintf("c%04d", i), true)
		v1alpha1.SetClusterDefaults(c)
		if objects {
			return createObjects(ctx, cp.Kube, c, tlsPEM)
		}
		_, err := cp.Kube.AppsV1().StatefulSets(ns).Create(ctx, floorStatefulSet(c), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		r.err = fmt.Errorf("create statefulsets: %w", err)
		return r
	}
	for r.stsReady == 0 {
		if ctx.Err() != nil {
			r.err = fmt.Errorf("timed out after %v", timeout)
			return r
		}
		time.Sleep(200 * time.Millisecond)
		exist, ready, _, _ := w.progress(ns, false)
		if r.stsExist == 0 && exist == n {
			r.stsExist = time.Since(start)
		}
		if ready == n {
			r.stsReady = time.Since(start)
		}
	}
	r.planeCPU, r.apiserverCPU = controlPlaneCPU(cp).since(planeStart)
	if logs != "" {
		name := fmt.Sprintf("floor-n%d.apiserver", n)
		if objects {
			name = fmt.Sprintf("floor-objects-n%d.apiserver", n)
		}
		apiserverLoad(ctx, cp, filepath.Join(logs, name))
	}
	return r
}

// runOnce measures the operator (bin, with extra flags) on n new clusters.
func runOnce(bin string, qps, n, nodes int, tls bool, timeout time.Duration, logs string, extra []string) (r result) {
	r = result{qps: qps, clusters: n, tls: tls}
	cp, ctx, stop, err := startRun(nodes, timeout)
	if err != nil {
		r.err = err
		return r
	}
	defer stop()
	mysql, err := versioned.NewForConfig(cp.Config)
	if err != nil {
		r.err = err
		return r
	}
	w, err := watch(cp, mysql, ns, true)
	if err != nil {
		r.err = err
		return r
	}
	defer close(w.stop)

	port, err := proc.FreePort()
	if err != nil {
		r.err = err
		return r
	}
	logPath := filepath.Join(cp.Dir, "operator.log")
	if logs != "" {
		logPath = filepath.Join(logs, fmt.Sprintf("operator-qps%d-n%d-tls%s.log", qps, n, onOff(tls)))
	}
	logf, err := os.Create(logPath)
	if err != nil {
		r.err = err
		return r
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--kubeconfig", cp.Kubeconfig, "--namespace", ns, "--leader-elect=false",
		"--kube-api-qps", strconv.Itoa(qps), "--kube-api-burst", strconv.Itoa(max(2*qps, 1)),
		"--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port), "--health-addr", "0", "--clustering=false")
	cmd.Args = append(cmd.Args, extra...)
	if logs != "" {
		cmd.Args = append(cmd.Args, "--profiling")
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := framework.Spawn(cmd); err != nil {
		r.err = err
		return r
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	if _, _, err := scrape(ctx, metricsURL, true); err != nil {
		r.err = err
		return r
	}

	profiled := make(chan struct{})
	if logs != "" {
		// The operator's CPU over the busiest part of the run, for `go tool pprof`.
		go func() {
			defer close(profiled)
			cpu := strings.Replace(metricsURL, "/metrics", fmt.Sprintf("/debug/pprof/profile?seconds=%d", cpuProfileSeconds), 1)
			if err := download(ctx, cpu, strings.TrimSuffix(logPath, ".log")+".cpu"); err != nil {
				fmt.Fprintf(os.Stderr, "  cpu profile: %v\n", err)
			}
		}()
	} else {
		close(profiled)
	}
	planeStart := controlPlaneCPU(cp)
	start := time.Now()
	err = createAll(n, func(i int) error {
		_, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Create(ctx, cluster(ns, fmt.Sprintf("c%04d", i), tls), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		r.err = fmt.Errorf("create clusters: %w", err)
		return r
	}

	for r.healthy == 0 || r.stsReady == 0 || r.children == 0 {
		if ctx.Err() != nil {
			r.err = fmt.Errorf("timed out after %v (StatefulSets exist %v, ready %v; children %v)", timeout, r.stsExist, r.stsReady, r.children)
			return r
		}
		time.Sleep(200 * time.Millisecond)
		exist, ready, done, healthy := w.progress(ns, tls)
		now := time.Since(start)
		for _, m := range []struct {
			d     *time.Duration
			count int
		}{{&r.stsExist, exist}, {&r.stsReady, ready}, {&r.children, done}, {&r.healthy, healthy}} {
			if *m.d == 0 && m.count == n {
				*m.d = now
			}
		}
	}
	if r.requests, r.failed, err = scrape(ctx, metricsURL, false); err != nil {
		r.err = err
		return r
	}
	if r.cpuSeconds, err = cpuSeconds(cmd.Process.Pid); err != nil {
		r.err = err
		return r
	}
	r.planeCPU, r.apiserverCPU = controlPlaneCPU(cp).since(planeStart)
	if logs != "" {
		apiserverLoad(ctx, cp, strings.TrimSuffix(logPath, ".log")+".apiserver")
		// The heap at the end, for `go tool pprof`.
		heap := strings.Replace(metricsURL, "/metrics", "/debug/pprof/heap", 1)
		if err := download(ctx, heap, strings.TrimSuffix(logPath, ".log")+".heap"); err != nil {
			fmt.Fprintf(os.Stderr, "  heap profile: %v\n", err)
		}
		<-profiled
	}
	r.peakRSSMiB, r.err = peakRSS(cmd.Process.Pid)
	return r
}

// apiserverLoad writes what the API server served in the run, by resource and verb, busiest
// first (every client's requests: the operator's, the controller manager's, kwok's, ...).
func apiserverLoad(ctx context.Context, cp *framework.ControlPlane, path string) {
	raw, err := cp.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "  API server metrics: %v\n", err)
		return
	}
	counts := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			continue
		}
		k := label(line, "verb") + " " + label(line, "resource")
		if sub := label(line, "subresource"); sub != "" {
			k += "/" + sub
		}
		counts[k] += v
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%10.0f %s\n", counts[k], k)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "  API server metrics: %v\n", err)
	}
}

func download(ctx context.Context, url, path string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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

// scrape returns mysqlop_api_requests_total by method, and its failed requests (a code of
// 400 or more, or none) by code; with wait it retries until the endpoint answers.
func scrape(ctx context.Context, url string, wait bool) (byMethod, failed map[string]float64, err error) {
	for {
		byMethod, failed, err = scrapeOnce(ctx, url)
		if err == nil || !wait || ctx.Err() != nil {
			return byMethod, failed, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func scrapeOnce(ctx context.Context, url string) (map[string]float64, map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	total, failed := map[string]float64{}, map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "mysqlop_api_requests_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			continue
		}
		total[label(line, "method")] += v
		// client-go reports "<error>" for a request that got no answer.
		if code := label(line, "code"); v > 0 && !strings.HasPrefix(code, "2") && !strings.HasPrefix(code, "3") {
			failed[code] += v
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return total, failed, sc.Err()
}

// label is the value of label name in a metric line of the text format.
func label(line, name string) string {
	i := strings.Index(line, name+`="`)
	if i < 0 {
		return ""
	}
	v := line[i+len(name)+2:]
	return v[:strings.IndexByte(v, '"')]
}

// planeCPU is the CPU seconds each control plane component used so far, by name.
type planeCPU map[string]float64

// controlPlaneCPU reads the CPU seconds of cp's components (a component it cannot read counts
// 0: the column is informative, not a reason to fail the run).
func controlPlaneCPU(cp *framework.ControlPlane) planeCPU {
	out := planeCPU{}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if pid := cp.Pid(name); pid > 0 {
			out[name], _ = cpuSeconds(pid)
		}
	}
	return out
}

// since returns the CPU seconds used since start, in all and by the API server.
func (now planeCPU) since(start planeCPU) (total, apiserver float64) {
	for name, s := range now {
		total += s - start[name]
	}
	return total, now["kube-apiserver"] - start["kube-apiserver"]
}

// cpuSeconds is the user and system CPU time pid used so far.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command (which may hold spaces) start after its ')'; utime and
	// stime are fields 14 and 15 of the line, in clock ticks (100 per second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: %q %q", pid, f[11], f[12])
	}
	return (utime + stime) / 100, nil
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

// ints parses a comma-separated list of non-negative integers.
func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	return out
}
