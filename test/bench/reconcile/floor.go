package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/pkg/resources/certs"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
	"github.com/mysqlop/mysql-operator/pkg/resources/networkpolicy"
	"github.com/mysqlop/mysql-operator/pkg/resources/pdb"
	"github.com/mysqlop/mysql-operator/pkg/resources/secret"
	"github.com/mysqlop/mysql-operator/pkg/resources/service"
	"github.com/mysqlop/mysql-operator/pkg/resources/statefulset"
)

// floorStatefulSet is the StatefulSet the operator makes for c, owned by nothing: no cluster
// exists to own it (the garbage collector would delete an orphan).
func floorStatefulSet(c *v1alpha1.MySQLCluster) *appsv1.StatefulSet {
	sts := statefulset.New(c, statefulset.Params{ServerImage: "mariadb:" + c.Spec.Version, AgentImage: "mysqlop/agent:bench", OperatorVersion: "bench"})
	sts.OwnerReferences = nil
	return sts
}

// tlsFiles is one CA and server certificate, shared by every cluster of a floor run: the
// Secrets have the operator's sizes, and the run measures the control plane, not signing.
type tlsFiles struct {
	ca     *pki.KeyPair
	server *pki.KeyPair
}

func newTLSFiles() (tlsFiles, error) {
	now := time.Now()
	ca, err := pki.NewCA("bench", now, 24*time.Hour)
	if err != nil {
		return tlsFiles{}, fmt.Errorf("bench CA: %w", err)
	}
	c := cluster(ns, "c0000", true)
	v1alpha1.SetClusterDefaults(c)
	server, err := pki.Issue(ca, certs.Request(c), now)
	if err != nil {
		return tlsFiles{}, fmt.Errorf("bench server certificate: %w", err)
	}
	return tlsFiles{ca: ca, server: server}, nil
}

// createObjects creates every object the operator makes for c with TLS on and a
// NetworkPolicy, in the operator's order (what the pods mount, the StatefulSet, then the
// rest), owned by nothing.
func createObjects(ctx context.Context, kube kubernetes.Interface, c *v1alpha1.MySQLCluster, tls tlsFiles) error {
	cred, err := secret.New(c, nil, "bench", rand.Reader)
	if err != nil {
		return fmt.Errorf("build credentials secret: %w", err)
	}
	secrets := []*corev1.Secret{
		cred,
		certs.CAKeySecret(c, tls.ca, "bench"),
		certs.ServerSecret(c, tls.server.CertPEM, tls.server.KeyPEM, tls.ca.CertPEM, "bench"),
	}
	for _, s := range secrets {
		s.OwnerReferences = nil
		if _, err := kube.CoreV1().Secrets(c.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create secret %s: %w", s.Name, err)
		}
	}
	cm := configmap.New(c, "bench", false)
	cm.OwnerReferences = nil
	if _, err := kube.CoreV1().ConfigMaps(c.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create configmap %s: %w", cm.Name, err)
	}
	if _, err := kube.AppsV1().StatefulSets(c.Namespace).Create(ctx, floorStatefulSet(c), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create statefulset %s: %w", c.Name, err)
	}
	for _, svc := range []*corev1.Service{service.NewHeadless(c, "bench"), service.NewPrimary(c, "bench"), service.NewReplicas(c, "bench")} {
		svc.OwnerReferences = nil
		if _, err := kube.CoreV1().Services(c.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create service %s: %w", svc.Name, err)
		}
	}
	budget := pdb.New(c, "bench")
	budget.OwnerReferences = nil
	if _, err := kube.PolicyV1().PodDisruptionBudgets(c.Namespace).Create(ctx, budget, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pdb %s: %w", budget.Name, err)
	}
	np := networkpolicy.New(c, "bench", networkpolicy.Operator{Namespace: "mysqlop-system", PodLabels: map[string]string{"app": "mysqlop"}})
	np.OwnerReferences = nil
	if _, err := kube.NetworkingV1().NetworkPolicies(c.Namespace).Create(ctx, np, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create networkpolicy %s: %w", np.Name, err)
	}
	bundle := certs.CABundleSecret(c, tls.ca.CertPEM, "bench")
	bundle.OwnerReferences = nil
	if _, err := kube.CoreV1().Secrets(c.Namespace).Create(ctx, bundle, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create secret %s: %w", bundle.Name, err)
	}
	return nil
}
