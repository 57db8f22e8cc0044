// Package localkubelet is a pod runtime for tests and the local cluster: it registers nodes
// and runs the pods bound to them as processes on this machine. Each pod gets a network
// namespace (a veth pair on a bridge, an address from a private range, /etc/hosts naming every
// pod by hostname.subdomain), and each container a mount namespace with the pod's volumes at
// their paths, the pod's hostname and the container's user. Images are ignored: commands run
// from this machine, with a mapping for the project's own binaries. Init containers, restart
// policies, probes, graceful termination and pod status follow the kubelet's rules closely
// enough for an operator to be tested against them; cgroups (resources) are not applied.
//
// It needs root and ip(8). It is a test tool, not a kubelet: see docs/testing.md.
package localkubelet

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Options configure a Runtime.
type Options struct {
	// Nodes are the names of the nodes this runtime registers and serves.
	Nodes []string
	// Instance (two lowercase letters or digits) prefixes every namespace and link the runtime
	// creates, so that two runtimes can share a machine and Sweep finds their leftovers.
	Instance string
	// Bridge is the bridge the pods' veth pairs join; CIDR its range (the first address is
	// the bridge's own, pods get addresses from .10 up).
	Bridge string
	CIDR   string
	// StateDir holds the pods' volumes (except claims), logs and pid files.
	StateDir string
	// Images maps an image name (last path element, with or without its tag) to the binary
	// a container of that image without a command runs; Commands maps a command path used in images to
	// its binary here.
	Images   map[string]string
	Commands map[string]string
	// APIServerHost and APIServerPort are the in-cluster API address given to containers.
	APIServerHost, APIServerPort string
	// Self is this program's path: containers start through its exec-container subcommand.
	Self string
	// ClientCAFile, when set, turns on the kubelet API (logs, exec, port-forward) for clients
	// with a certificate under this CA (the API server's --kubelet-client-certificate).
	ClientCAFile string
	// APIPort is the kubelet API's port on the gateway (0: any free port).
	APIPort int
}

// Runtime runs the pods of its nodes.
type Runtime struct {
	opts    Options
	kube    kubernetes.Interface
	gateway net.IP
	cidr    *net.IPNet
	ipam    *ipam
	pods    corelisters.PodLister
	// apiPort is the kubelet API's port the nodes report (0: not served).
	apiPort int32

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	// mountPoints are the host paths containers mount volumes on.
	mountPoints *mountPoints
}

// New checks opts and returns a Runtime.
func New(kube kubernetes.Interface, opts Options) (*Runtime, error) {
	gw, n, err := Gateway(opts.CIDR)
	if err != nil {
		return nil, err
	}
	if len(opts.Nodes) == 0 || opts.Instance == "" || len(opts.Instance) > 3 {
		return nil, fmt.Errorf("need nodes and an instance name of at most 3 characters")
	}
	if opts.Self == "" {
		if opts.Self, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	return &Runtime{opts: opts, kube: kube, gateway: gw, cidr: n, ipam: newIPAM(n),
		workers: map[types.UID]*podWorker{}, mountPoints: &mountPoints{dir: mountPointsDir}}, nil
}

// Run serves the nodes until ctx ends, then stops every pod process and removes every
// namespace, link and file it created. Pod objects are left as they are.
func (r *Runtime) Run(ctx context.Context) error {
	if err := Sweep(r.opts.Instance); err != nil {
		return err
	}
	if err := EnsureBridge(r.opts.Bridge, r.opts.CIDR); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(r.opts.StateDir, "pods"), 0o755); err != nil {
		return err
	}
	defer r.shutdown()
	api, err := r.listenAPI()
	if err != nil {
		return err
	}
	// Retried: a freshly started API server may refuse the first requests.
	var regErr error
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if regErr = r.registerNodes(ctx); regErr != nil {
			klog.InfoS("Node registration failed, retrying", "err", regErr)
			return false, nil
		}
		return true, nil
	}); err != nil {
		return fmt.Errorf("register nodes: %w (last error: %v)", err, regErr)
	}
	go r.heartbeat(ctx)

	factory := informers.NewSharedInformerFactory(r.kube, 0)
	inf := factory.Core().V1().Pods()
	r.pods = inf.Lister()
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.sync(ctx, obj) },
		UpdateFunc: func(_, obj any) { r.sync(ctx, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				r.mu.Lock()
				w := r.workers[p.UID]
				r.mu.Unlock()
				if w != nil {
					w.stop(0)
				}
			}
		},
	})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if api != nil {
		go r.serveAPI(ctx, api)
	}
	klog.InfoS("Local kubelet serving", "nodes", r.opts.Nodes, "cidr", r.opts.CIDR)
	<-ctx.Done()
	factory.Shutdown()
	return nil
}

func (r *Runtime) ours(node string) bool {
	for _, n := range r.opts.Nodes {
		if n == node {
			return true
		}
	}
	return false
}

func (r *Runtime) sync(ctx context.Context, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || !r.ours(p.Spec.NodeName) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed && p.DeletionTimestamp == nil {
		return
	}
	r.mu.Lock()
	w, ok := r.workers[p.UID]
	if !ok && p.DeletionTimestamp == nil {
		w = newPodWorker(r, p.DeepCopy())
		r.workers[p.UID] = w
		go w.run(ctx)
	}
	r.mu.Unlock()
	if w == nil {
		// Deleted before it ever ran here: nothing to stop, let the object go.
		r.finalDelete(ctx, p)
		return
	}
	if p.DeletionTimestamp == nil {
		w.update(p)
		return
	}
	{
		grace := int64(30)
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		w.stop(time.Duration(grace) * time.Second)
	}
}

func (r *Runtime) forget(w *podWorker) {
	r.mu.Lock()
	delete(r.workers, w.pod.UID)
	r.mu.Unlock()
	r.writeHosts()
}

// shutdown stops every pod at exit.
func (r *Runtime) shutdown() {
	r.mu.Lock()
	ws := make([]*podWorker, 0, len(r.workers))
	for _, w := range r.workers {
		ws = append(ws, w)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.stop(10 * time.Second)
			<-w.done
		}()
	}
	wg.Wait()
	r.mountPoints.release()
	// Also removes /etc/netns once empty.
	_ = Sweep(r.opts.Instance)
}

// writeHosts rewrites every pod's /etc/hosts in place (bind mounts pin the inode): its own
// names first, then every pod with a subdomain under its DNS names, standing in for cluster
// DNS.
func (r *Runtime) writeHosts() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []string
	for _, w := range r.workers {
		if n := w.hostsEntry(); n != "" {
			all = append(all, n)
		}
	}
	sort.Strings(all)
	api := fmt.Sprintf("%s kubernetes kubernetes.default kubernetes.default.svc kubernetes.default.svc.cluster.local\n", r.gateway)
	for _, w := range r.workers {
		pn := w.network()
		if pn == nil {
			continue
		}
		content := "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n" +
			fmt.Sprintf("%s %s\n", pn.IP, strings.Join(w.names(), " ")) + api + strings.Join(all, "")
		_ = os.WriteFile(filepath.Join("/etc/netns", pn.Namespace, "hosts"), []byte(content), 0o644)
	}
}
