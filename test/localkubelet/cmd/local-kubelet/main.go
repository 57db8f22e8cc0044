// Command local-kubelet runs the pods bound to its nodes as processes on this machine (see
// package localkubelet). It needs root. `local-kubelet exec-container SPEC` is its internal
// helper that becomes a container's process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/test/localkubelet"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "exec-container" {
		err := localkubelet.ExecContainer(os.Args[2])
		fmt.Fprintln(os.Stderr, "local-kubelet exec-container:", err)
		os.Exit(127)
	}
	var (
		kubeconfig = flag.String("kubeconfig", "", "kubeconfig of the cluster")
		nodes      = flag.String("nodes", "local-0", "comma-separated node names to serve")
		instance   = flag.String("instance", "lk", "prefix of the namespaces and links this runtime creates (at most 3 characters)")
		bridge     = flag.String("bridge", "mysqlop0", "bridge the pods join")
		cidr       = flag.String("cidr", "10.244.0.0/16", "pod address range; its first address is the bridge's")
		stateDir   = flag.String("state-dir", "", "directory of pod volumes, logs and pid files")
		apiHost    = flag.String("apiserver-host", "", "in-cluster API host given to containers")
		apiPort    = flag.String("apiserver-port", "443", "in-cluster API port given to containers")
		images     = flag.String("images", "", "image=binary pairs, comma-separated: what a container of that image without a command runs")
		commands   = flag.String("commands", "", "command=binary pairs, comma-separated: the binary here of a command path in an image")
		clientCA   = flag.String("client-ca-file", "", "serve the kubelet API (logs, exec, port-forward) to clients with a certificate under this CA (the API server's)")
		apiPortF   = flag.Int("port", 0, "kubelet API port on the pod network's gateway (0: any free port)")
		sweep      = flag.Bool("sweep", false, "only remove what a runtime of this instance left behind, then exit")
	)
	klog.InitFlags(nil)
	flag.Parse()
	if *sweep {
		if err := localkubelet.Sweep(*instance); err != nil {
			klog.ErrorS(err, "Sweep")
			os.Exit(1)
		}
		return
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.ErrorS(err, "Load kubeconfig")
		os.Exit(1)
	}
	cfg.QPS, cfg.Burst = 100, 200
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		klog.ErrorS(err, "Client")
		os.Exit(1)
	}
	r, err := localkubelet.New(kube, localkubelet.Options{
		Nodes: strings.Split(*nodes, ","), Instance: *instance, Bridge: *bridge, CIDR: *cidr, StateDir: *stateDir,
		APIServerHost: *apiHost, APIServerPort: *apiPort, Images: pairs(*images), Commands: pairs(*commands),
		ClientCAFile: *clientCA, APIPort: *apiPortF,
	})
	if err != nil {
		klog.ErrorS(err, "Options")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := r.Run(ctx); err != nil {
		klog.ErrorS(err, "Run")
		os.Exit(1)
	}
}

func pairs(s string) map[string]string {
	m := map[string]string{}
	for _, p := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(p, "="); ok {
			m[k] = v
		}
	}
	return m
}
