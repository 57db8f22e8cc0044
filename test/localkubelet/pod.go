package localkubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// podWorker runs one pod: it sets the pod up, runs its init containers in order and then its
// containers, reports status, and tears everything down when the pod is deleted.
type podWorker struct {
	r   *Runtime
	pod *corev1.Pod
	dir string

	mu         sync.Mutex
	net        *podNetwork
	volumes    map[string]string
	inits      []*container
	containers []*container
	started    time.Time
	initDone   bool
	message    string
	conds      map[corev1.PodConditionType]corev1.PodCondition
	phase      corev1.PodPhase

	// stopping is closed when the pod is to stop.
	stopping chan struct{}
	stopOnce sync.Once
	// kicked asks the status loop to report.
	kicked chan struct{}
	done   chan struct{}
}

func newPodWorker(r *Runtime, p *corev1.Pod) *podWorker {
	w := &podWorker{r: r, pod: p, dir: filepath.Join(r.opts.StateDir, "pods", string(p.UID)),
		conds: map[corev1.PodConditionType]corev1.PodCondition{}, phase: corev1.PodPending,
		stopping: make(chan struct{}), kicked: make(chan struct{}, 1), done: make(chan struct{})}
	for i := range p.Spec.InitContainers {
		w.inits = append(w.inits, &container{w: w, spec: &p.Spec.InitContainers[i], init: true})
	}
	for i := range p.Spec.Containers {
		w.containers = append(w.containers, &container{w: w, spec: &p.Spec.Containers[i]})
	}
	return w
}

func (w *podWorker) log() klog.Logger { return klog.Background().WithValues("pod", klog.KObj(w.pod)) }

// stop asks the pod to stop, giving its containers grace before SIGKILL. A later, shorter
// grace (a force delete) still applies: each call signals the running processes.
func (w *podWorker) stop(grace time.Duration) {
	w.stopOnce.Do(func() { close(w.stopping) })
	for _, c := range w.all() {
		c.terminate(grace)
	}
}

// update applies an in-place change of the pod: a container whose image changed restarts onto
// the new spec, as the kubelet does (the operator moves agents to a new build this way).
func (w *podWorker) update(p *corev1.Pod) {
	for i := range p.Spec.Containers {
		next := p.Spec.Containers[i].DeepCopy()
		for _, c := range w.all() {
			c.mu.Lock()
			if c.init || c.spec.Name != next.Name {
				c.mu.Unlock()
				continue
			}
			changed := c.spec.Image != next.Image && (c.next == nil || c.next.Image != next.Image)
			if changed {
				c.next = next
			}
			c.mu.Unlock()
			if changed {
				w.log().Info("Container image changed: restarting it", "container", next.Name, "image", next.Image)
				c.terminate(time.Duration(w.graceSeconds()) * time.Second)
			}
		}
	}
}

func (w *podWorker) all() []*container {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append(append([]*container{}, w.inits...), w.containers...)
}

func (w *podWorker) isStopping() bool {
	select {
	case <-w.stopping:
		return true
	default:
		return false
	}
}

// kick asks the status loop for a report.
func (w *podWorker) kick() {
	select {
	case w.kicked <- struct{}{}:
	default:
	}
}

func (w *podWorker) hostname() string {
	if w.pod.Spec.Hostname != "" {
		return w.pod.Spec.Hostname
	}
	return w.pod.Name
}

// names are the pod's own names in its hosts file.
func (w *podWorker) names() []string {
	h := w.hostname()
	if w.pod.Spec.Subdomain == "" {
		return []string{h}
	}
	base := fmt.Sprintf("%s.%s.%s", h, w.pod.Spec.Subdomain, w.pod.Namespace)
	return []string{base + ".svc.cluster.local", base + ".svc", base, h + "." + w.pod.Spec.Subdomain, h}
}

func (w *podWorker) network() *podNetwork {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.net
}

func (w *podWorker) hostsEntry() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.net == nil || w.pod.Spec.Subdomain == "" || w.isStopping() {
		return ""
	}
	n := w.names()
	return fmt.Sprintf("%s %s\n", w.net.IP, strings.Join(n[:len(n)-1], " "))
}

func (w *podWorker) run(ctx context.Context) {
	defer close(w.done)
	statusDone := make(chan struct{})
	statusCtx, stopStatus := context.WithCancel(ctx)
	go func() { defer close(statusDone); w.statusLoop(statusCtx) }()
	defer func() {
		stopStatus()
		<-statusDone
		w.teardown()
		if ctx.Err() == nil {
			w.r.finalDelete(ctx, w.pod)
		}
		w.r.forget(w)
	}()

	w.mu.Lock()
	w.started = time.Now()
	w.mu.Unlock()
	w.kick()
	if !w.setup(ctx) {
		return
	}
	for _, c := range w.inits {
		if !c.runInit(ctx) {
			return
		}
	}
	w.mu.Lock()
	w.initDone = true
	w.mu.Unlock()
	w.kick()
	refreshCtx, stopRefresh := context.WithCancel(ctx)
	refreshDone := make(chan struct{})
	go func() { defer close(refreshDone); w.refreshVolumes(refreshCtx) }()
	var wg sync.WaitGroup
	for _, c := range w.containers {
		wg.Add(1)
		go func() { defer wg.Done(); c.supervise(ctx) }()
	}
	wg.Wait()
	// The pod's directory is removed at teardown: no refresh may write into it then.
	stopRefresh()
	<-refreshDone
	// Containers that will not restart ended the pod; it stays until deleted.
	if !w.isStopping() {
		w.kick()
		select {
		case <-w.stopping:
		case <-ctx.Done():
		}
	}
}

// setup makes the network and volumes, retrying until they are ready or the pod stops.
func (w *podWorker) setup(ctx context.Context) bool {
	for attempt := 0; ; attempt++ {
		err := w.trySetup(ctx)
		if err == nil {
			return true
		}
		w.mu.Lock()
		w.message = err.Error()
		w.mu.Unlock()
		w.kick()
		if attempt%10 == 0 {
			w.log().Info("Pod setup waits", "err", err)
		}
		select {
		case <-w.stopping:
			return false
		case <-ctx.Done():
			return false
		case <-time.After(time.Second):
		}
	}
}

func (w *podWorker) trySetup(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(w.dir, "logs"), 0o755); err != nil {
		return err
	}
	w.mu.Lock()
	haveNet := w.net != nil
	w.mu.Unlock()
	if !haveNet {
		addr, err := w.r.ipam.allocate()
		if err != nil {
			return err
		}
		pn, err := setupPodNetwork(w.r.opts.Instance, string(w.pod.UID), w.r.opts.Bridge, addr, w.r.gateway, w.r.cidr)
		if err != nil {
			w.r.ipam.release(addr)
			return fmt.Errorf("pod network: %w", err)
		}
		etc := filepath.Join("/etc/netns", pn.Namespace)
		if err := os.MkdirAll(etc, 0o755); err != nil {
			return err
		}
		for name, content := range map[string]string{"hosts": "", "resolv.conf": "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"} {
			if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
				return err
			}
		}
		w.mu.Lock()
		w.net = pn
		w.mu.Unlock()
		w.r.writeHosts()
		w.kick()
	}
	vols, err := w.prepareVolumes(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.volumes, w.message = vols, ""
	w.mu.Unlock()
	return nil
}

func (w *podWorker) teardown() {
	w.mu.Lock()
	pn := w.net
	w.mu.Unlock()
	if pn != nil {
		killNamespace(pn.Namespace)
		pn.teardown()
		removeEtcNetns(pn.Namespace)
		w.r.ipam.release(pn.IP)
	}
	// Claims live outside the pod directory, so this removes only emptyDirs, files and logs.
	_ = os.RemoveAll(w.dir)
}

func removeEtcNetns(ns string) { _ = os.RemoveAll(filepath.Join("/etc/netns", ns)) }

// finalDelete removes the pod object once its processes are gone, as the kubelet does.
func (r *Runtime) finalDelete(ctx context.Context, p *corev1.Pod) {
	if p.DeletionTimestamp == nil {
		cur, err := r.pods.Pods(p.Namespace).Get(p.Name)
		if err != nil || cur.UID != p.UID || cur.DeletionTimestamp == nil {
			return
		}
	}
	err := r.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		klog.ErrorS(err, "Delete terminated pod", "pod", klog.KObj(p))
	}
}
