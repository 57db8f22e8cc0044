package options

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func TestDefaultsAreValid(t *testing.T) {
	if err := New().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFlags(t *testing.T) {
	o := New()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	err := fs.Parse([]string{"--namespace=a", "--namespace=b", "--kube-api-qps=50", "--cluster-workers=8",
		"--leader-elect=false", "--resync-period=1m", "--agent-image=x:1", "--target-selector=team=a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Namespaces) != 2 || o.KubeAPIQPS != 50 || o.ClusterWorkers != 8 || o.LeaderElect || o.ResyncPeriod != time.Minute || o.AgentImage != "x:1" || o.TargetSelector != "team=a" {
		t.Errorf("parsed %+v", o)
	}
}

func TestValidate(t *testing.T) {
	for name, mutate := range map[string]func(*Options){
		"--kube-api-qps":                   func(o *Options) { o.KubeAPIQPS = -1 },
		"--cluster-workers":                func(o *Options) { o.ClusterWorkers = 0 },
		"--user-workers":                   func(o *Options) { o.UserWorkers = 0 },
		"--target-selector":                func(o *Options) { o.TargetSelector = "a in (" },
		"--agent-image":                    func(o *Options) { o.AgentImage = "" },
		"renew-deadline":                   func(o *Options) { o.RenewDeadline = o.LeaseDuration },
		"--failover-after":                 func(o *Options) { o.FailoverAfter = o.ClusteringInterval / 2 },
		"--network-policy-operator-labels": func(o *Options) { o.NetworkPolicyOperatorLabels = "app in (a)" },
		"--operator-namespace": func(o *Options) {
			o.NetworkPolicyOperatorLabels, o.OperatorNamespace = "app=op", ""
		},
		"--network-policy-metrics-from": func(o *Options) {
			o.NetworkPolicyOperatorLabels, o.NetworkPolicyMetricsFrom = "app=op", "a in ("
		},
	} {
		o := New()
		mutate(o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

func TestNetworkPolicy(t *testing.T) {
	o := New()
	if op, err := o.NetworkPolicy(); op != nil || err != nil {
		t.Errorf("no labels: %+v, %v; want no NetworkPolicies", op, err)
	}
	o.NetworkPolicyOperatorLabels, o.OperatorNamespace = "app.kubernetes.io/name=mysql-operator,app.kubernetes.io/instance=r", "ops"
	o.NetworkPolicyMetricsFrom = "kubernetes.io/metadata.name=monitoring"
	op, err := o.NetworkPolicy()
	if err != nil || op == nil {
		t.Fatalf("NetworkPolicy: %+v, %v", op, err)
	}
	if op.Namespace != "ops" || op.PodLabels["app.kubernetes.io/instance"] != "r" || len(op.PodLabels) != 2 ||
		op.MetricsFrom == nil || op.MetricsFrom.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
		t.Errorf("NetworkPolicy: %+v", op)
	}
}

// With no client-side limit the API server paces the operator: a 429 with Retry-After is
// waited out and the request retried, for reads and for creates.
func TestRESTConfigWaitsOutTooManyRequests(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%2 == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429}`, http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"a"}}`)
	}))
	defer srv.Close()
	o := New()
	o.Master, o.KubeAPIQPS = srv.URL, 0
	cfg, err := o.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS >= 0 {
		t.Errorf("QPS %v: client-go would apply its default limit", cfg.QPS)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := kube.CoreV1().Namespaces().Get(context.Background(), "a", metav1.GetOptions{}); err != nil {
		t.Fatalf("get after a 429: %v", err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after a 429: %v", err)
	}
	if n, d := calls.Load(), time.Since(start); n != 4 || d < 2*time.Second {
		t.Errorf("%d requests in %v; want each refused once and retried after Retry-After's second", n, d)
	}
}

func TestRESTConfigAsksForCompressionOnlyWhenTold(t *testing.T) {
	for _, compression := range []bool{false, true} {
		var accept atomic.Value
		// TLS, as every API server speaks: over plain HTTP client-go uses Go's default
		// transport, which ignores DisableCompression.
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			accept.Store(r.Header.Get("Accept-Encoding"))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"a"}}`)
		}))
		o := New()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse([]string{"--master=" + srv.URL, fmt.Sprintf("--kube-api-compression=%v", compression)}); err != nil {
			t.Fatal(err)
		}
		cfg, err := o.RESTConfig()
		if err != nil {
			t.Fatal(err)
		}
		cfg.TLSClientConfig.CAData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kube.CoreV1().Namespaces().Get(context.Background(), "a", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		if got := strings.Contains(accept.Load().(string), "gzip"); got != compression {
			t.Errorf("--kube-api-compression=%v: Accept-Encoding %q", compression, accept.Load())
		}
	}
}
