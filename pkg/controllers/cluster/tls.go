package cluster

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/certs"
)

// tlsView is what syncTLS found and did, for the status and the clustering runner.
type tlsView struct {
	// status is nil while TLS is disabled.
	status *v1alpha1.TLSStatus
	// reason and message make CertificatesReady False; reason is "" when it is True.
	reason, message string
	// caPEM is the bundle members are verified with; nil while there is no server certificate.
	caPEM []byte
	// recheck is when the certificates need looking at again (a renewal, a pending issuer).
	recheck time.Duration
}

// notReady is a view that makes CertificatesReady False, looked at again after recheck.
func notReady(source, reason, message string, recheck time.Duration) tlsView {
	return tlsView{status: &v1alpha1.TLSStatus{Source: source}, reason: reason, message: message, recheck: recheck}
}

// tlsRecheck is how often a source that may appear later (a user's CA Secret, cert-manager's
// CRDs or its Secret) is looked for: neither is watched, and a permanent problem is not an
// error to retry with backoff.
const tlsRecheck = time.Minute

// expiringShare is the part of its lifetime before expiry from which a certificate that was not
// renewed is reported: the renewal at two thirds failed for a long time.
const expiringShare = 10

// tlsSource names where cluster's certificates come from.
func tlsSource(cluster *v1alpha1.MySQLCluster) string {
	switch {
	case cluster.Spec.TLS.CASecretRef != nil:
		return v1alpha1.TLSSourceCASecret
	case cluster.Spec.TLS.CertManager != nil:
		return v1alpha1.TLSSourceCertManager
	}
	return v1alpha1.TLSSourceOperator
}

// syncTLS brings the cluster's certificates to the spec: the CA (the operator's or the user's)
// and a server certificate issued from it and renewed at two thirds of its lifetime, or a
// cert-manager Certificate; and the CA bundle Secret for applications. Nothing is deleted when
// TLS is turned off: the Secrets are owned by the cluster and go with it.
func (c *Controller) syncTLS(ctx context.Context, cluster *v1alpha1.MySQLCluster, opVersion string) (tlsView, error) {
	if cluster.Spec.TLS.Disabled {
		return tlsView{}, nil
	}
	if source := tlsSource(cluster); source != v1alpha1.TLSSourceCertManager {
		return c.issuedTLS(ctx, cluster, source, opVersion)
	}
	return c.certManagerTLS(ctx, cluster, opVersion)
}

// syncCABundle publishes the CA bundle of view for applications (nothing while it is unknown).
// Pods do not mount it, so it is created after the StatefulSet.
func (c *Controller) syncCABundle(ctx context.Context, cluster *v1alpha1.MySQLCluster, view tlsView, opVersion string) error {
	if view.caPEM == nil {
		return nil
	}
	_, _, err := ensure(ctx, c, cluster, c.tlsSecretOps(), certs.CABundleSecret(cluster, view.caPEM, opVersion))
	return err
}

// issuedTLS is syncTLS when the operator issues the servers' certificate itself.
func (c *Controller) issuedTLS(ctx context.Context, cluster *v1alpha1.MySQLCluster, source, opVersion string) (tlsView, error) {
	now := c.now()
	var ca *pki.KeyPair
	if source == v1alpha1.TLSSourceCASecret {
		var problem string
		var err error
		if ca, problem, err = c.userCA(ctx, cluster); err != nil || problem != "" {
			return notReady(source, v1alpha1.ReasonCASecretInvalid, problem, tlsRecheck), err
		}
	} else {
		var problem string
		var err error
		if ca, problem, err = c.operatorCA(ctx, cluster, opVersion, now); err != nil || problem != "" {
			return notReady(source, v1alpha1.ReasonCASecretInvalid, problem, tlsRecheck), err
		}
	}

	req := certs.Request(cluster)
	existing, _ := c.secrets.Secrets(cluster.Namespace).Get(resources.TLSSecretName(cluster))
	var certPEM, keyPEM []byte
	if existing != nil && metav1.IsControlledBy(existing, cluster) {
		certPEM, keyPEM = existing.Data[corev1.TLSCertKey], existing.Data[corev1.TLSPrivateKeyKey]
	}
	if _, err := pki.ParseKeyPair(certPEM, keyPEM); certPEM != nil && err != nil {
		certPEM = nil // a damaged pair is replaced
	}
	if why := pki.Renewal(certPEM, ca.Cert, req, now); why != "" {
		kp, err := pki.Issue(ca, req, now)
		if err != nil {
			return tlsView{}, fmt.Errorf("issue the servers' certificate: %w", err)
		}
		certPEM, keyPEM = kp.CertPEM, kp.KeyPEM
		klog.FromContext(ctx).Info("Issuing the servers' TLS certificate", "cluster", klog.KObj(cluster), "why", why)
		defer events.CertificateIssued.Record(c.recorder, cluster, kp.Cert.NotAfter.UTC().Format(time.RFC3339), why)
	}
	if _, _, err := ensure(ctx, c, cluster, c.tlsSecretOps(), certs.ServerSecret(cluster, certPEM, keyPEM, ca.CertPEM, opVersion)); err != nil {
		return tlsView{}, err
	}
	return c.servedView(source, certPEM, ca.CertPEM, now), nil
}

// servedView describes a server certificate and its CA bundle.
func (c *Controller) servedView(source string, certPEM, caPEM []byte, now time.Time) tlsView {
	view := tlsView{status: &v1alpha1.TLSStatus{Source: source}, caPEM: caPEM}
	if ca, err := pki.ParseCertificate(caPEM); err == nil {
		view.status.CANotAfter = &metav1.Time{Time: ca.NotAfter}
	}
	cert, err := pki.ParseCertificate(certPEM)
	if err != nil {
		return notReady(source, v1alpha1.ReasonCertificatePending, "the servers' certificate cannot be read: "+err.Error(), tlsRecheck)
	}
	renew := pki.RenewAt(cert.NotBefore, cert.NotAfter)
	view.status.ServerNotAfter = &metav1.Time{Time: cert.NotAfter}
	view.status.RenewalTime = &metav1.Time{Time: renew}
	if left := cert.NotAfter.Sub(now); left < cert.NotAfter.Sub(cert.NotBefore)/expiringShare {
		view.reason, view.message = v1alpha1.ReasonCertificateExpiring, fmt.Sprintf("the servers' certificate expires at %s and was not renewed", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	view.recheck = max(renew.Sub(now), 0) + time.Second
	if view.reason != "" || renew.Before(now) {
		view.recheck = tlsRecheck
	}
	return view
}

// operatorCA returns the operator's CA of cluster, creating it the first time. A CA Secret
// that cannot be read is reported, never replaced: every client trusts the CA it holds.
func (c *Controller) operatorCA(ctx context.Context, cluster *v1alpha1.MySQLCluster, opVersion string, now time.Time) (*pki.KeyPair, string, error) {
	name := resources.CAKeySecretName(cluster)
	existing, err := c.secrets.Secrets(cluster.Namespace).Get(name)
	if err == nil && metav1.IsControlledBy(existing, cluster) {
		ca, err := pki.ParseKeyPair(existing.Data[corev1.TLSCertKey], existing.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			return nil, fmt.Sprintf("the CA in Secret %s cannot be used (%v); delete the Secret to have a new CA made, and clients trust the new one", name, err), nil
		}
		return ca, "", nil
	}
	ca, err := pki.NewCA(fmt.Sprintf("mysqlop %s/%s CA", cluster.Namespace, cluster.Name), now, certs.CALifetime)
	if err != nil {
		return nil, "", fmt.Errorf("create the CA: %w", err)
	}
	if _, _, err := ensure(ctx, c, cluster, c.tlsSecretOps(), certs.CAKeySecret(cluster, ca, opVersion)); err != nil {
		return nil, "", err
	}
	return ca, "", nil
}

// userCA reads the CA of spec.tls.caSecretRef. It reads through the client: the operator's
// cache holds only its own Secrets.
func (c *Controller) userCA(ctx context.Context, cluster *v1alpha1.MySQLCluster) (*pki.KeyPair, string, error) {
	name := cluster.Spec.TLS.CASecretRef.Name
	s, err := c.kube.CoreV1().Secrets(cluster.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("Secret %s (spec.tls.caSecretRef) does not exist", name), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("get CA secret %s: %w", name, err)
	}
	ca, err := pki.ParseKeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Sprintf("Secret %s (spec.tls.caSecretRef) holds no usable %s and %s: %v", name, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, err), nil
	}
	if !ca.Cert.IsCA {
		return nil, fmt.Sprintf("the certificate in Secret %s (spec.tls.caSecretRef) is not a CA", name), nil
	}
	return ca, "", nil
}

// certManagerTLS is syncTLS with cert-manager as issuer: the operator keeps the Certificate in
// shape and reads the Secret cert-manager writes.
func (c *Controller) certManagerTLS(ctx context.Context, cluster *v1alpha1.MySQLCluster, opVersion string) (tlsView, error) {
	const source = v1alpha1.TLSSourceCertManager
	if c.cfg.Dynamic == nil {
		return notReady(source, v1alpha1.ReasonCertManagerMissing, "the operator runs without a client for cert-manager's resources", 0), nil
	}
	want := certs.Certificate(cluster, opVersion)
	client := c.cfg.Dynamic.Resource(certs.CertificateGVR).Namespace(cluster.Namespace)
	existing, err := client.Get(ctx, want.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		_, err = client.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return notReady(source, v1alpha1.ReasonCertManagerMissing,
				"spec.tls.certManager is set but cert-manager's CRDs (certificates.cert-manager.io/v1) are not installed", tlsRecheck), nil
		}
		if err != nil {
			return tlsView{}, fmt.Errorf("create Certificate %s: %w", want.GetName(), err)
		}
		noteChange(ctx, c, cluster, events.Created, "Certificate", want.GetName())
	case err != nil:
		return tlsView{}, fmt.Errorf("get Certificate %s: %w", want.GetName(), err)
	case !metav1.IsControlledBy(existing, cluster):
		return notReady(source, v1alpha1.ReasonCertificatePending, fmt.Sprintf("Certificate %s exists and is not controlled by the MySQLCluster", want.GetName()), tlsRecheck), nil
	default:
		if !apiequality.Semantic.DeepEqual(existing.Object["spec"], want.Object["spec"]) {
			u := existing.DeepCopy()
			u.Object["spec"] = want.Object["spec"]
			if _, err := client.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
				return tlsView{}, fmt.Errorf("update Certificate %s: %w", want.GetName(), err)
			}
			noteChange(ctx, c, cluster, events.Updated, "Certificate", want.GetName())
		}
	}
	s, err := c.secrets.Secrets(cluster.Namespace).Get(resources.TLSSecretName(cluster))
	if err != nil || len(s.Data[corev1.TLSCertKey]) == 0 {
		return notReady(source, v1alpha1.ReasonCertificatePending, fmt.Sprintf("waiting for cert-manager to issue Certificate %s", want.GetName()), 10*time.Second), nil
	}
	if len(s.Data[resources.SecretKeyCA]) == 0 {
		return notReady(source, v1alpha1.ReasonCertificatePending, fmt.Sprintf("Secret %s has no %s: the issuer must provide its CA", s.Name, resources.SecretKeyCA), tlsRecheck), nil
	}
	return c.servedView(source, s.Data[corev1.TLSCertKey], s.Data[resources.SecretKeyCA], c.now()), nil
}

// tlsSecretOps is the child rule of the TLS Secrets: their data is what the controller
// decided (kept, or renewed), so it is replaced whole when it differs.
func (c *Controller) tlsSecretOps() childOps[*corev1.Secret] {
	ops := c.secretOps(nil)
	ops.merge = func(existing, desired *corev1.Secret) (*corev1.Secret, bool) {
		if maps.EqualFunc(existing.Data, desired.Data, bytes.Equal) && !labelsDrifted(existing, desired) {
			return existing, false
		}
		out := existing.DeepCopy()
		applyMeta(out, desired)
		out.Data = desired.Data
		return out, true
	}
	return ops
}

// tlsCondition is CertificatesReady for view; nil while TLS is off.
func tlsCondition(view tlsView, generation int64) *metav1.Condition {
	if view.status == nil {
		return nil
	}
	cond := &metav1.Condition{Type: v1alpha1.ConditionCertificatesReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonCertificatesIssued,
		ObservedGeneration: generation}
	if view.reason != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, view.reason, view.message
	} else if view.status.ServerNotAfter != nil {
		cond.Message = fmt.Sprintf("the servers' certificate is valid until %s and is renewed at %s",
			view.status.ServerNotAfter.UTC().Format(time.RFC3339), view.status.RenewalTime.UTC().Format(time.RFC3339))
	}
	return cond
}
