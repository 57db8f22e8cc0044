package networkpolicy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

// peer is a pod that might send traffic: its namespace's labels and its own.
type peer struct {
	nsName   string
	nsLabels map[string]string
	labels   map[string]string
}

// allowed evaluates p's ingress rules as a NetworkPolicy implementation does for a pod in the
// policy's namespace ns: whether from may reach port.
func allowed(p *networkingv1.NetworkPolicy, ns string, from peer, port int32) bool {
	matches := func(sel *metav1.LabelSelector, set map[string]string) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		return err == nil && s.Matches(labels.Set(set))
	}
	nsLabels := map[string]string{corev1.LabelMetadataName: from.nsName}
	for k, v := range from.nsLabels {
		nsLabels[k] = v
	}
	for _, r := range p.Spec.Ingress {
		portOK := len(r.Ports) == 0
		for _, rp := range r.Ports {
			portOK = portOK || rp.Port.IntVal == port
		}
		if !portOK {
			continue
		}
		if len(r.From) == 0 {
			return true
		}
		for _, f := range r.From {
			nsOK := f.NamespaceSelector == nil && from.nsName == ns || f.NamespaceSelector != nil && matches(f.NamespaceSelector, nsLabels)
			podOK := f.PodSelector == nil || matches(f.PodSelector, from.labels)
			if nsOK && podOK {
				return true
			}
		}
	}
	return false
}

func TestWhoReachesWhichPort(t *testing.T) {
	c := testutil.Cluster("shop", "db")
	other := testutil.Cluster("shop", "other")
	opLabels := map[string]string{"app.kubernetes.io/name": "mysql-operator", "app.kubernetes.io/instance": "mysqlop"}
	monitoring := map[string]string{"monitoring": "true"}
	for _, tc := range []struct {
		name        string
		metricsFrom *metav1.LabelSelector
		from        peer
		mysql       bool
		agent       bool
		metrics     bool
	}{
		{"a member of the cluster", nil, peer{"shop", nil, resources.SelectorLabels(c)}, true, true, true},
		{"the operator", nil, peer{"mysqlop-system", nil, opLabels}, true, true, true},
		{"an application pod in the namespace", nil, peer{"shop", nil, map[string]string{"app": "web"}}, true, false, true},
		{"a member of another cluster", nil, peer{"shop", nil, resources.SelectorLabels(other)}, true, false, true},
		{"a pod with the operator's labels elsewhere", nil, peer{"shop", nil, opLabels}, true, false, true},
		{"a pod of the operator's namespace without its labels", nil, peer{"mysqlop-system", nil, map[string]string{"app": "x"}}, true, false, true},
		{"metrics restricted: a monitoring namespace", &metav1.LabelSelector{MatchLabels: monitoring}, peer{"prom", monitoring, nil}, true, false, true},
		{"metrics restricted: anyone else", &metav1.LabelSelector{MatchLabels: monitoring}, peer{"shop", nil, map[string]string{"app": "web"}}, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(c, "v1", Operator{Namespace: "mysqlop-system", PodLabels: opLabels, MetricsFrom: tc.metricsFrom})
			if got := allowed(p, "shop", tc.from, resources.PortMySQL); got != tc.mysql {
				t.Errorf("MySQL port: %v, want %v", got, tc.mysql)
			}
			if got := allowed(p, "shop", tc.from, resources.PortAgent); got != tc.agent {
				t.Errorf("agent port: %v, want %v", got, tc.agent)
			}
			if got := allowed(p, "shop", tc.from, resources.PortMetrics); got != tc.metrics {
				t.Errorf("metrics port: %v, want %v", got, tc.metrics)
			}
		})
	}
}

func TestSelectsTheMembersOnly(t *testing.T) {
	c := testutil.Cluster("shop", "db")
	p := New(c, "v1", Operator{Namespace: "op", PodLabels: map[string]string{"a": "b"}})
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(resources.SelectorLabels(c))) || sel.Matches(labels.Set(resources.SelectorLabels(testutil.Cluster("shop", "other")))) {
		t.Errorf("pod selector %v", p.Spec.PodSelector)
	}
	if len(p.Spec.PolicyTypes) != 1 || p.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policy types %v: egress must stay open (replication, S3, DNS)", p.Spec.PolicyTypes)
	}
}
