package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	core "k8s.io/client-go/testing"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

func (f *fixture) secret(name string) *corev1.Secret {
	f.t.Helper()
	s, err := f.kube.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// syncResult syncs and returns the requeue the controller asked for.
func (f *fixture) syncResult() time.Duration {
	f.t.Helper()
	res, err := f.ctrl.Sync(context.Background(), key)
	if err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	return res.RequeueAfter
}

func (f *fixture) condition(t string) *metav1.Condition {
	return meta.FindStatusCondition(f.cluster().Status.Conditions, t)
}

// By default the operator makes a CA, issues the servers' certificate for every member's and
// Service's name from it, publishes the CA (without its key) for applications, reports the
// expiry, and comes back to renew at two thirds of the lifetime, with the same CA.
func TestOperatorIssuesAndRenewsTheServersCertificate(t *testing.T) {
	f := newFixture(t, config("v1"), mariadb(3, "10.11.6"))
	now := time.Now()
	f.ctrl.now = func() time.Time { return now }
	f.sync() // the StatefulSet first
	f.settle()
	requeue := f.syncResult()
	f.settle()

	ca, srv, bundle := f.secret("db-ca-key"), f.secret("db-tls"), f.secret("db-ca")
	caPair, err := pki.ParseKeyPair(ca.Data[corev1.TLSCertKey], ca.Data[corev1.TLSPrivateKeyKey])
	if err != nil || !caPair.Cert.IsCA {
		t.Fatalf("CA secret: %v", err)
	}
	for _, name := range []string{"db-0.db-headless.ns.svc", "db-2.db-headless.ns.svc.cluster.local", "db-primary", "db-replicas.ns.svc"} {
		if err := pki.Verify(srv.Data[corev1.TLSCertKey], bundle.Data[resources.SecretKeyCA], name, now); err != nil {
			t.Errorf("the servers' certificate for %s: %v", name, err)
		}
	}
	if _, err := pki.ParseKeyPair(srv.Data[corev1.TLSCertKey], srv.Data[corev1.TLSPrivateKeyKey]); err != nil || string(srv.Data[resources.SecretKeyCA]) != string(caPair.CertPEM) {
		t.Errorf("server secret: pair %v, ca.crt is the CA: %v", err, string(srv.Data[resources.SecretKeyCA]) == string(caPair.CertPEM))
	}
	if len(bundle.Data) != 1 || srv.Type != corev1.SecretTypeTLS {
		t.Errorf("the CA bundle holds %d keys (want ca.crt only); server secret type %s", len(bundle.Data), srv.Type)
	}
	st := f.cluster().Status.TLS
	if st == nil || st.Source != v1alpha1.TLSSourceOperator || st.ServerNotAfter == nil || st.CANotAfter == nil {
		t.Fatalf("status.tls %+v", st)
	}
	renewAt := st.RenewalTime.Time
	if got := renewAt.Sub(now); got < 59*24*time.Hour || got > 61*24*time.Hour {
		t.Errorf("renewal %s after issuing, want two thirds of 90 days", got)
	}
	if requeue < renewAt.Sub(now) || requeue > renewAt.Sub(now)+2*time.Second {
		t.Errorf("requeue after %s, want at the renewal (%s)", requeue, renewAt.Sub(now))
	}
	if c := f.condition(v1alpha1.ConditionCertificatesReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("CertificatesReady %+v", c)
	}

	// Nothing changes before the renewal time.
	f.events()
	f.sync()
	for _, a := range f.writes() {
		if a.GetResource().Resource == "secrets" {
			t.Errorf("a sync before the renewal wrote %s", describe([]core.Action{a}))
		}
	}

	now = renewAt.Add(time.Second)
	f.sync()
	f.settle()
	renewed := f.secret("db-tls")
	if string(renewed.Data[corev1.TLSCertKey]) == string(srv.Data[corev1.TLSCertKey]) {
		t.Fatal("the certificate was not renewed at two thirds of its lifetime")
	}
	if err := pki.Verify(renewed.Data[corev1.TLSCertKey], bundle.Data[resources.SecretKeyCA], "db-1.db-headless.ns.svc", now); err != nil {
		t.Errorf("the renewed certificate under the same CA: %v", err)
	}
	if string(f.secret("db-ca-key").Data[corev1.TLSCertKey]) != string(caPair.CertPEM) {
		t.Error("the CA changed with a renewal")
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "CertificateIssued") || !strings.Contains(ev, "two thirds") {
		t.Errorf("events %q, want CertificateIssued saying why", ev)
	}
}

// A user's CA: missing, it is a condition and an event with a slow recheck, not an error; once
// there, the servers' certificate is issued from it and no CA of the operator's is made.
func TestUserCA(t *testing.T) {
	c := mariadb(3, "10.11.6")
	c.Spec.TLS.CASecretRef = &v1alpha1.LocalReference{Name: "my-ca"}
	f := newFixture(t, config("v1"), c)
	f.sync() // the StatefulSet first
	f.settle()
	if requeue := f.syncResult(); requeue != tlsRecheck {
		t.Errorf("requeue %s with the CA missing, want %s", requeue, tlsRecheck)
	}
	if cond := f.condition(v1alpha1.ConditionCertificatesReady); cond == nil || cond.Reason != v1alpha1.ReasonCASecretInvalid || !strings.Contains(cond.Message, "my-ca") {
		t.Errorf("CertificatesReady %+v", cond)
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "Warning CASecretInvalid") {
		t.Errorf("events %q", ev)
	}

	ca, err := pki.NewCA("user CA", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "my-ca", Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: ca.KeyPEM},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	f.settle()
	srv := f.secret("db-tls")
	if err := pki.Verify(srv.Data[corev1.TLSCertKey], ca.CertPEM, "db-0.db-headless.ns.svc", time.Now()); err != nil {
		t.Errorf("the servers' certificate under the user's CA: %v", err)
	}
	if _, err := f.kube.CoreV1().Secrets(ns).Get(context.Background(), "db-ca-key", metav1.GetOptions{}); err == nil {
		t.Error("the operator made a CA of its own although the user brought one")
	}
	if st := f.cluster().Status.TLS; st == nil || st.Source != v1alpha1.TLSSourceCASecret || !st.CANotAfter.Time.Equal(ca.Cert.NotAfter) {
		t.Errorf("status.tls %+v", st)
	}
}

// cert-manager mode without cert-manager's CRDs is refused with a condition and an event, and
// checked again later rather than retried hot.
func TestCertManagerWithoutItsCRDs(t *testing.T) {
	c := mariadb(3, "10.11.6")
	c.Spec.TLS.CertManager = &v1alpha1.CertManagerTLS{IssuerRef: v1alpha1.IssuerReference{Name: "ca-issuer"}}
	cfg := config("v1")
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	// What the API server answers for a resource it does not serve.
	dyn.PrependReactor("*", "certificates", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "cert-manager.io", Resource: "certificates"}, "")
	})
	cfg.Dynamic = dyn
	f := newFixture(t, cfg, c)
	f.sync() // the StatefulSet first
	f.settle()
	if requeue := f.syncResult(); requeue != tlsRecheck {
		t.Errorf("requeue %s, want %s", requeue, tlsRecheck)
	}
	if cond := f.condition(v1alpha1.ConditionCertificatesReady); cond == nil || cond.Reason != v1alpha1.ReasonCertManagerMissing {
		t.Errorf("CertificatesReady %+v", cond)
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "Warning CertManagerMissing") {
		t.Errorf("events %q", ev)
	}
}
