package agentapi

import (
	"crypto/tls"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/pki"
)

// An agent serving the cluster's certificate is verified under the CA for the dialled name,
// and serves a renewed pair once its files change (a half-written pair keeps the last good one).
func TestServerTLSReloadsTheClustersCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca, err := pki.NewCA("ca", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	issue := func() *pki.KeyPair {
		kp, err := pki.Issue(ca, pki.Request{CommonName: "db", DNSNames: []string{"*.db-headless"}, Lifetime: time.Hour}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	write := func(f string, b []byte) {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	first := issue()
	write(certFile, first.CertPEM)
	write(keyFile, first.KeyPEM)
	cfg, r, err := serverTLS(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()

	served := func(name string) (*tls.ConnectionState, error) {
		c, err := ClientTLSFromCA(ca.CertPEM, name)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := HTTPClient(c, 3*time.Second).Get(srv.URL)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		return resp.TLS, nil
	}
	if cs, err := served("db-0.db-headless"); err != nil || !pki.SameCertificate(first.CertPEM, pemOf(cs)) {
		t.Fatalf("the first certificate for a member's name: %v", err)
	}
	if _, err := served("db-0.other"); err == nil {
		t.Error("a name the certificate does not hold was accepted")
	}

	second := issue()
	write(certFile, second.CertPEM) // the key is still the first's: not a pair
	r.mu.Lock()
	r.checked = time.Time{}
	r.mu.Unlock()
	if cs, err := served("db-0.db-headless"); err != nil || !pki.SameCertificate(first.CertPEM, pemOf(cs)) {
		t.Fatalf("a half-written renewal must keep the first certificate in service: %v", err)
	}
	write(keyFile, second.KeyPEM)
	r.mu.Lock()
	r.checked, r.stamp = time.Time{}, "" // mtimes may not differ within the file system's granularity
	r.mu.Unlock()
	if cs, err := served("db-0.db-headless"); err != nil || !pki.SameCertificate(second.CertPEM, pemOf(cs)) {
		t.Fatalf("the renewed certificate: %v", err)
	}
}

func pemOf(cs *tls.ConnectionState) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cs.PeerCertificates[0].Raw})
}
