package agent_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

// The agent has a real server read renewed TLS files: once at start, then only when the
// files change, never on a half-written pair; the server then presents the new certificate.
func TestTLSReloaderOnMariaDB(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.NewCA("test CA", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	write := func(lifetime time.Duration) *pki.KeyPair {
		t.Helper()
		kp, err := pki.Issue(ca, pki.Request{CommonName: "db", DNSNames: []string{"localhost"}, Lifetime: lifetime}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return kp
	}
	first := write(time.Hour)
	cnf := "[mysqld]\nlog_bin = binlog\nssl_ca = " + filepath.Join(dir, "ca.crt") + "\nssl_cert = " + filepath.Join(dir, "tls.crt") + "\nssl_key = " + filepath.Join(dir, "tls.key") + "\n"
	s := mariadb.Start(t, 1, mariadb.Options{MyCnf: cnf})[0]
	in := s.Admin()
	ctx := context.Background()
	// What a new TLS connection is served (the status is the session's).
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	tlsDB, err := mysql.Open(mysql.ConnConfig{Addr: s.Addr(), User: mariadb.AdminUser, Password: mariadb.AdminPassword,
		TLS: &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	defer tlsDB.Close()
	tlsDB.SetMaxIdleConns(0)
	served := func() time.Time {
		t.Helper()
		var name, v string
		if err := tlsDB.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_server_not_after'").Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse("Jan _2 15:04:05 2006 MST", v)
		if err != nil {
			t.Fatalf("Ssl_server_not_after %q: %v", v, err)
		}
		return at
	}
	if !served().Equal(first.Cert.NotAfter.Truncate(time.Second)) {
		t.Fatalf("the server serves a certificate expiring at %s, want %s", served(), first.Cert.NotAfter)
	}

	st, err := in.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := &agent.TLSReloader{Instance: in, Dir: dir}
	for i, want := range []bool{true, false} {
		if got, err := r.Check(ctx); err != nil || got != want {
			t.Fatalf("check %d: reloaded %v (%v), want %v", i, got, err, want)
		}
	}
	// A renewal caught between the kubelet's writes: the new certificate with the old key.
	second, err := pki.Issue(ca, pki.Request{CommonName: "db", DNSNames: []string{"localhost"}, Lifetime: 2 * time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), second.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Check(ctx); got || err == nil {
		t.Fatalf("a mismatched pair was reloaded (%v, %v)", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), second.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Check(ctx); !got || err != nil {
		t.Fatalf("the renewed pair was not reloaded (%v, %v)", got, err)
	}
	if !served().Equal(second.Cert.NotAfter.Truncate(time.Second)) {
		t.Errorf("after the reload the server serves a certificate expiring at %s, want %s", served(), second.Cert.NotAfter)
	}
	// A reload is no transaction: on a replica one would be errant.
	if after, err := in.Status(ctx); err != nil || after.Executed.String() != st.Executed.String() {
		t.Errorf("reloads changed the executed GTIDs from %s to %v (%v)", st.Executed, after.Executed, err)
	}
}
