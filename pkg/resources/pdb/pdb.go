// Package pdb builds a cluster's PodDisruptionBudget: voluntary disruptions (node drains) take
// at most one member at a time, so a semi-sync primary always keeps a replica to acknowledge.
package pdb

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// New returns the PodDisruptionBudget of c.
func New(c *v1alpha1.MySQLCluster, operatorVersion string) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: resources.ObjectMeta(c, resources.PDBName(c), operatorVersion),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &one,
			Selector:       &metav1.LabelSelector{MatchLabels: resources.SelectorLabels(c)},
		},
	}
}
