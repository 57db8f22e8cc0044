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
}

// NewTLSFiles writes a new CA and a server certificate into a temporary directory.
func NewTLSFiles(t T) *TLSFiles {
	t.Helper()
	ca, err := pki.NewCA("test CA", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := pki.Issue(ca, pki.Request{CommonName: "test", DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Lifetime: 24 * time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f := &TLSFiles{Dir: t.TempDir(), CA: ca}
	for name, b := range map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM} {
		if err := os.WriteFile(filepath.Join(f.Dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// CAFile is the CA bundle's path.
func (f *TLSFiles) CAFile() string { return filepath.Join(f.Dir, "ca.crt") }

// myCnf is the [mysqld] part that serves the files.
func (f *TLSFiles) myCnf() string {
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
