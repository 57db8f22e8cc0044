// Package service builds a cluster's three Services: the headless governing Service that gives
// each member a stable DNS name, the read-write primary Service and the read-only replicas
// Service. The last two select on the mysqlop.io/role label, which the clustering manager moves
// when the primary changes; they never select a pod that has no role yet.
package service

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

func mysqlPort() corev1.ServicePort {
	return corev1.ServicePort{
		Name: resources.PortNameMySQL, Protocol: corev1.ProtocolTCP,
		Port: resources.PortMySQL, TargetPort: intstr.FromString(resources.PortNameMySQL),
	}
}

// NewHeadless returns the governing Service of the StatefulSet. It publishes members that are
// not ready, because replicas must reach a member (to clone or to replicate) before it is ready.
func NewHeadless(c *v1alpha1.MySQLCluster, operatorVersion string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: resources.ObjectMeta(c, resources.HeadlessServiceName(c), operatorVersion),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 resources.SelectorLabels(c),
			Ports: []corev1.ServicePort{mysqlPort(), {
				Name: resources.PortNameAgent, Protocol: corev1.ProtocolTCP,
				Port: resources.PortAgent, TargetPort: intstr.FromString(resources.PortNameAgent),
			}},
		},
	}
}

// NewPrimary returns the read-write Service: it selects the pod labelled primary.
func NewPrimary(c *v1alpha1.MySQLCluster, operatorVersion string) *corev1.Service {
	return roleService(c, resources.PrimaryServiceName(c), v1alpha1.RolePrimary, operatorVersion)
}

// NewReplicas returns the read-only Service: it selects the pods labelled replica.
func NewReplicas(c *v1alpha1.MySQLCluster, operatorVersion string) *corev1.Service {
	return roleService(c, resources.ReplicasServiceName(c), v1alpha1.RoleReplica, operatorVersion)
}

func roleService(c *v1alpha1.MySQLCluster, name, role, operatorVersion string) *corev1.Service {
	sel := resources.SelectorLabels(c)
	sel[v1alpha1.LabelRole] = role
	return &corev1.Service{
		ObjectMeta: resources.ObjectMeta(c, name, operatorVersion),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: sel,
			Ports:    []corev1.ServicePort{mysqlPort()},
		},
	}
}
