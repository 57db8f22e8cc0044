// Package testutil makes MySQLClusters for the builder and controller tests.
package testutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// Cluster returns a defaulted MySQLCluster named name in namespace ns, changed by each mutate.
func Cluster(ns, name string, mutate ...func(*v1alpha1.MySQLCluster)) *v1alpha1.MySQLCluster {
	c := &v1alpha1.MySQLCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "MySQLCluster"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, UID: types.UID("uid-" + ns + "-" + name), Generation: 1,
		},
	}
	for _, m := range mutate {
		m(c)
	}
	v1alpha1.SetClusterDefaults(c)
	return c
}
