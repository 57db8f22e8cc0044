package mariadb

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/pkg/resources/certs"
)

// TLSFiles are a CA and a server certificate for 127.0.0.1, written as the members' TLS Secret
// is mounted (ca.crt, tls.crt, tls.key), for servers that serve TLS (Options.TLS).
type TLSFiles struct {
	Dir string
	CA  *pki.KeyPair
	// Server is the server certificate last written (Renew replaces it).
	Server *pki.KeyPair
}

// NewTLSFiles writes a new CA and a server certificate into a temporary directory.
func NewTLSFiles(t T) *TLSFiles {
	t.Helper()
	ca, err := pki.NewCA("test CA", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f := &TLSFiles{Dir: t.TempDir(), CA: ca}
	f.Renew(t)
	return f
}

// Renew issues a new server certificate under the same CA and writes all three files, as a
// renewal updates the mounted Secret; a server picks it up on FLUSH SSL.
func (f *TLSFiles) Renew(t T) *pki.KeyPair {
	t.Helper()
	kp, err := pki.Issue(f.CA, pki.Request{CommonName: "test", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Lifetime: 24 * time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"ca.crt": f.CA.CertPEM, "tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM} {
		if err := os.WriteFile(filepath.Join(f.Dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.Server = kp
	return kp
}

// CAFile is the CA bundle's path.
func (f *TLSFiles) CAFile() string { return filepath.Join(f.Dir, "ca.crt") }

// MyCnf is the [mysqld] part that serves the files.
func (f *TLSFiles) MyCnf() string {
	return "\n[mysqld]\nssl_ca = " + f.CAFile() + "\nssl_cert = " + filepath.Join(f.Dir, "tls.crt") + "\nssl_key = " + filepath.Join(f.Dir, "tls.key") + "\n"
}

// Client is a client's TLS configuration: the CA trusted, the server verified for 127.0.0.1.
func (f *TLSFiles) Client() *tls.Config {
	cfg, err := certs.ClientTLS(f.CA.CertPEM, "127.0.0.1")
	if err != nil {
		panic(err) // the CA was made above
	}
	return cfg
}
