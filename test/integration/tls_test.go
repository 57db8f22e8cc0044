package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/certs"
	"github.com/mysqlop/mysql-operator/test/framework"
)

// certManagerVersion is the cert-manager release whose CRDs the test installs (from the Go
// module proxy: no cert-manager controller runs here, see signAsCertManager).
const certManagerVersion = "v1.16.2"

// installCertManagerCRDs installs cert-manager's own Certificate CRD, read from its module.
// The file is a Helm template: the lines that hold template actions (labels) are dropped.
func installCertManagerCRDs(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/cert-manager/cert-manager@"+certManagerVersion).Output()
	if err != nil {
		t.Fatalf("download cert-manager %s (its CRDs): %v", certManagerVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %v %s", err, out)
	}
	src, err := os.ReadFile(filepath.Join(mod.Dir, "deploy", "crds", "crd-certificates.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "{{") && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		kept = append(kept, l)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "certificates.yaml"), []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := framework.InstallCRDs(ctx, cp.Config, dir); err != nil {
		t.Fatal(err)
	}
}

// signAsCertManager does what cert-manager and a CA Issuer would for cert: a new key, a CSR
// for the Certificate's names signed by ca, and the Secret written with the Certificate's
// secretTemplate labels, tls.crt, tls.key and ca.crt.
func signAsCertManager(t *testing.T, cert *unstructured.Unstructured, ca *pki.KeyPair) []byte {
	t.Helper()
	spec := cert.Object["spec"].(map[string]any)
	var names []string
	for _, n := range spec["dnsNames"].([]any) {
		names = append(names, n.(string))
	}
	life, err := time.ParseDuration(spec["duration"].(string))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csrDER, err := x509.CreateCertificateRequest(crand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: spec["commonName"].(string)}, DNSNames: names}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(csrDER)
	if err != nil || csr.CheckSignature() != nil {
		t.Fatalf("CSR: %v", err)
	}
	serial, _ := crand.Int(crand.Reader, big.NewInt(1<<62))
	now := time.Now()
	der, err := x509.CreateCertificate(crand.Reader, &x509.Certificate{
		SerialNumber: serial, Subject: csr.Subject, DNSNames: csr.DNSNames, NotBefore: now, NotAfter: now.Add(life),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, ca.Cert, csr.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	labels := map[string]string{}
	for k, v := range spec["secretTemplate"].(map[string]any)["labels"].(map[string]any) {
		labels[k] = v.(string)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: spec["secretName"].(string), Namespace: cert.GetNamespace(), Labels: labels},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
			resources.SecretKeyCA: ca.CertPEM},
	}
	ctx := context.Background()
	if _, err := cp.Kube.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		existing, getErr := cp.Kube.CoreV1().Secrets(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if getErr != nil {
			t.Fatalf("write secret: %v", err)
		}
		existing.Data = s.Data
		if _, err := cp.Kube.CoreV1().Secrets(s.Namespace).Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return certPEM
}

func tlsCondition(c *v1alpha1.MySQLCluster) *metav1.Condition {
	return meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionCertificatesReady)
}

// With spec.tls.certManager: refused with a condition while cert-manager's CRDs are missing;
// once they are installed, the operator creates the Certificate, waits for its Secret, and
// reports and publishes what cert-manager issued (and re-issued), and the members mount it.
func TestCertManagerIssuesTheServersCertificate(t *testing.T) {
	ns := cp.NewNamespace(t)
	startOperator(t, ns)
	c := newCluster(ns, "db", 3, "10.11.6")
	c.Spec.TLS.CertManager = &v1alpha1.CertManagerTLS{IssuerRef: v1alpha1.IssuerReference{Name: "ca-issuer", Kind: "ClusterIssuer"}}
	createCluster(t, c)
	eventually(t, 30*time.Second, "CertManagerMissing", func(ctx context.Context) (bool, error) {
		cond := tlsCondition(getCluster(t, ns, "db"))
		return cond != nil && cond.Reason == v1alpha1.ReasonCertManagerMissing, nil
	})

	installCertManagerCRDs(t)
	// The operator looks again within a minute; an edit of the cluster brings it back at once.
	if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Patch(context.Background(), "db", "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"test/nudge":"1"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	var cert *unstructured.Unstructured
	eventually(t, 30*time.Second, "Certificate db-tls", func(ctx context.Context) (bool, error) {
		cert, err = dyn.Resource(certs.CertificateGVR).Namespace(ns).Get(ctx, "db-tls", metav1.GetOptions{})
		return err == nil, nil
	})
	spec := cert.Object["spec"].(map[string]any)
	issuer := spec["issuerRef"].(map[string]any)
	if issuer["name"] != "ca-issuer" || issuer["kind"] != "ClusterIssuer" || spec["secretName"] != "db-tls" || spec["duration"] != "2160h0m0s" || spec["renewBefore"] != "720h0m0s" {
		t.Errorf("Certificate spec %v", spec)
	}
	if ref := metav1.GetControllerOf(cert); ref == nil || ref.Name != "db" {
		t.Errorf("Certificate controller %+v", ref)
	}
	// The status that says so is written after the Certificate is created, by the same sync.
	eventually(t, 30*time.Second, "CertificatesReady False/CertificatePending before cert-manager wrote the Secret", func(ctx context.Context) (bool, error) {
		cond := tlsCondition(getCluster(t, ns, "db"))
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == v1alpha1.ReasonCertificatePending, nil
	})

	ca, err := pki.NewCA("cert-manager CA", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	first := signAsCertManager(t, cert, ca)
	eventually(t, 30*time.Second, "CertificatesReady with cert-manager's certificate", func(ctx context.Context) (bool, error) {
		got := getCluster(t, ns, "db")
		cond := tlsCondition(got)
		return cond != nil && cond.Status == metav1.ConditionTrue && got.Status.TLS != nil && got.Status.TLS.Source == v1alpha1.TLSSourceCertManager, nil
	})
	bundle, err := cp.Kube.CoreV1().Secrets(ns).Get(context.Background(), "db-ca", metav1.GetOptions{})
	if err != nil || string(bundle.Data[resources.SecretKeyCA]) != string(ca.CertPEM) {
		t.Fatalf("CA bundle Secret db-ca: %v", err)
	}
	if err := pki.Verify(first, bundle.Data[resources.SecretKeyCA], "db-1.db-headless."+ns+".svc", time.Now()); err != nil {
		t.Errorf("cert-manager's certificate for a member: %v", err)
	}
	sts, err := cp.Kube.AppsV1().StatefulSets(ns).Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mounted := false
	for _, v := range sts.Spec.Template.Spec.Volumes {
		mounted = mounted || v.Secret != nil && v.Secret.SecretName == "db-tls"
	}
	if !mounted {
		t.Error("the members do not mount cert-manager's Secret")
	}

	// cert-manager renews: the status follows the Secret.
	before := getCluster(t, ns, "db").Status.TLS.ServerNotAfter.Time
	time.Sleep(1100 * time.Millisecond) // a later NotAfter, at the certificate's second granularity
	signAsCertManager(t, cert, ca)
	eventually(t, 30*time.Second, "the renewed certificate in the status", func(ctx context.Context) (bool, error) {
		st := getCluster(t, ns, "db").Status.TLS
		return st != nil && st.ServerNotAfter != nil && st.ServerNotAfter.After(before), nil
	})
}

// A user's CA: the operator issues from it, makes no CA of its own, and a Secret of the wrong
// shape is reported on the cluster (not retried hot).
func TestUserCAIssuesTheServersCertificate(t *testing.T) {
	ns := cp.NewNamespace(t)
	startOperator(t, ns)
	ctx := context.Background()
	if _, err := cp.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "my-ca", Namespace: ns},
		Data:       map[string][]byte{"ca.crt": []byte("not a CA")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := newCluster(ns, "db", 1, "10.11.6")
	c.Spec.TLS.CASecretRef = &v1alpha1.LocalReference{Name: "my-ca"}
	createCluster(t, c)
	eventually(t, 30*time.Second, "CASecretInvalid", func(ctx context.Context) (bool, error) {
		cond := tlsCondition(getCluster(t, ns, "db"))
		return cond != nil && cond.Reason == v1alpha1.ReasonCASecretInvalid && strings.Contains(cond.Message, "my-ca"), nil
	})
	ca, err := pki.NewCA("user CA", time.Now(), 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cp.Kube.CoreV1().Secrets(ns).Get(ctx, "my-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: ca.KeyPEM}
	if _, err := cp.Kube.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Patch(ctx, "db", "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"test/nudge":"1"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "CertificatesReady from the user's CA", func(ctx context.Context) (bool, error) {
		cond := tlsCondition(getCluster(t, ns, "db"))
		return cond != nil && cond.Status == metav1.ConditionTrue, nil
	})
	srv, err := cp.Kube.CoreV1().Secrets(ns).Get(ctx, "db-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.Verify(srv.Data[corev1.TLSCertKey], ca.CertPEM, "db-0.db-headless."+ns+".svc", time.Now()); err != nil {
		t.Errorf("the servers' certificate under the user's CA: %v", err)
	}
	if _, err := cp.Kube.CoreV1().Secrets(ns).Get(ctx, "db-ca-key", metav1.GetOptions{}); err == nil {
		t.Error("a CA of the operator's was made although the user brought one")
	}
}
