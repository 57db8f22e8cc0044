// Package certs builds a cluster's TLS objects: the Secret with the servers' certificate that
// every member mounts, the operator's CA Secret, the CA bundle Secret for applications, and the
// cert-manager Certificate that replaces the operator as issuer when spec.tls.certManager is
// set.
package certs

import (
	"crypto/tls"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// DefaultLifetime is the servers' certificate lifetime when spec.tls.certificateDuration is unset.
const DefaultLifetime = 90 * 24 * time.Hour

// CALifetime is the lifetime of the CA the operator creates. It is long because renewing a
// CA means every client re-reading the bundle; the servers' certificates are what rotate.
const CALifetime = 10 * 365 * 24 * time.Hour

// CertificateGVR is cert-manager's Certificate resource.
var CertificateGVR = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}

// ClientTLS is the TLS configuration of a client of the servers: it trusts the CAs of caPEM
// only and requires a certificate for serverName (a member's or a Service's DNS name, whatever
// address is dialled). The agents' clients verify the same certificate the same way.
func ClientTLS(caPEM []byte, serverName string) (*tls.Config, error) {
	return agentapi.ClientTLSFromCA(caPEM, serverName)
}

// Lifetime is the servers' certificate lifetime of c.
func Lifetime(c *v1alpha1.MySQLCluster) time.Duration {
	if d := c.Spec.TLS.CertificateDuration; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return DefaultLifetime
}

// Request is what the servers' certificate of c holds.
func Request(c *v1alpha1.MySQLCluster) pki.Request {
	return pki.Request{CommonName: resources.PrimaryServiceName(c), DNSNames: resources.TLSServerNames(c), Lifetime: Lifetime(c)}
}

// CAKeySecret is the Secret of the operator's CA for c.
func CAKeySecret(c *v1alpha1.MySQLCluster, ca *pki.KeyPair, operatorVersion string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: resources.ObjectMeta(c, resources.CAKeySecretName(c), operatorVersion),
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: ca.KeyPEM},
	}
}

// ServerSecret is the Secret the members mount: the servers' certificate and key, and caPEM.
func ServerSecret(c *v1alpha1.MySQLCluster, certPEM, keyPEM, caPEM []byte, operatorVersion string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: resources.ObjectMeta(c, resources.TLSSecretName(c), operatorVersion),
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, resources.SecretKeyCA: caPEM},
	}
}

// CABundleSecret is the Secret applications read the CA bundle from.
func CABundleSecret(c *v1alpha1.MySQLCluster, caPEM []byte, operatorVersion string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: resources.ObjectMeta(c, resources.CASecretName(c), operatorVersion),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{resources.SecretKeyCA: caPEM},
	}
}

// Certificate is the cert-manager Certificate for c's servers. cert-manager writes the Secret
// the members mount, labelled so that the operator's cache (which holds only its own objects)
// sees it; it renews at two thirds of the lifetime, as the operator does.
func Certificate(c *v1alpha1.MySQLCluster, operatorVersion string) *unstructured.Unstructured {
	ref := c.Spec.TLS.CertManager.IssuerRef
	kind, group := ref.Kind, ref.Group
	if kind == "" {
		kind = "Issuer"
	}
	if group == "" {
		group = CertificateGVR.Group
	}
	life := Lifetime(c)
	names := make([]any, 0, len(resources.TLSServerNames(c)))
	for _, n := range resources.TLSServerNames(c) {
		names = append(names, n)
	}
	labels := map[string]any{}
	for k, v := range resources.Labels(c, operatorVersion) {
		labels[k] = v
	}
	meta := resources.ObjectMeta(c, resources.TLSSecretName(c), operatorVersion)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": CertificateGVR.GroupVersion().String(),
		"kind":       "Certificate",
		"spec": map[string]any{
			"secretName":     resources.TLSSecretName(c),
			"secretTemplate": map[string]any{"labels": labels},
			"commonName":     resources.PrimaryServiceName(c),
			"dnsNames":       names,
			"duration":       life.String(),
			"renewBefore":    (life / 3).String(),
			"privateKey":     map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
			"usages":         []any{"server auth", "client auth", "digital signature", "key encipherment"},
			"issuerRef":      map[string]any{"name": ref.Name, "kind": kind, "group": group},
		},
	}}
	u.SetName(meta.Name)
	u.SetNamespace(meta.Namespace)
	u.SetLabels(meta.Labels)
	u.SetOwnerReferences(meta.OwnerReferences)
	return u
}
