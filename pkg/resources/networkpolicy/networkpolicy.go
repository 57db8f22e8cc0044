// Package networkpolicy builds a cluster's NetworkPolicy: the agent's port, which can seed a
// copy of every row and stop the server, answers only the operator and the cluster's own
// members; the server's port answers every client; the metrics port answers the namespaces
// the operator was told scrape it.
//
// NetworkPolicies add up: traffic a pod's policies do not allow is dropped once any policy
// selects it. This policy therefore allows every client on the MySQL port, and a user who wants
// fewer clients turns the operator's policies off and writes one policy holding both rules.
package networkpolicy

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// Operator says where the operator's pods run, so the policy can let them reach the agents.
type Operator struct {
	// Namespace is the operator's namespace.
	Namespace string
	// PodLabels select the operator's pods in Namespace.
	PodLabels map[string]string
	// MetricsFrom selects the namespaces that may scrape the members' metrics; nil: any.
	MetricsFrom *metav1.LabelSelector
}

// New returns the NetworkPolicy of c.
func New(c *v1alpha1.MySQLCluster, operatorVersion string, op Operator) *networkingv1.NetworkPolicy {
	port := func(n int32) []networkingv1.NetworkPolicyPort {
		p := intstr.FromInt32(n)
		tcp := corev1.ProtocolTCP
		return []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p}}
	}
	members := metav1.LabelSelector{MatchLabels: resources.SelectorLabels(c)}
	operator := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: op.Namespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: op.PodLabels},
	}
	metrics := networkingv1.NetworkPolicyIngressRule{Ports: port(resources.PortMetrics)}
	if op.MetricsFrom != nil {
		metrics.From = []networkingv1.NetworkPolicyPeer{{NamespaceSelector: op.MetricsFrom}}
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: resources.ObjectMeta(c, resources.NetworkPolicyName(c), operatorVersion),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: members,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				// Clients, and the members replicating from each other.
				{Ports: port(resources.PortMySQL)},
				// The operator, and peers seeding a new member from a copy of a donor.
				{Ports: port(resources.PortAgent), From: []networkingv1.NetworkPolicyPeer{{PodSelector: &members}, operator}},
				metrics,
			},
		},
	}
}
