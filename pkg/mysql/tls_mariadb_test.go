package mysql_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

// peer records the certificate a server presented on the last TLS connection.
type peer struct {
	mu   sync.Mutex
	cert *x509.Certificate
}

// tlsInstance connects to s as the admin user over TLS that trusts caPEM only and verifies
// the address, recording the server's certificate in p (when not nil).
func tlsInstance(t *testing.T, s *mariadb.Server, caPEM []byte, p *peer) *mysql.Instance {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if p != nil {
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.cert = cs.PeerCertificates[0]
			return nil
		}
	}
	db, err := mysql.Open(mysql.ConnConfig{Addr: s.Addr(), User: mariadb.AdminUser, Password: mariadb.AdminPassword, Timeout: 3 * time.Second, TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// Each test step wants a new handshake, not a pooled session.
	db.SetMaxIdleConns(0)
	return &mysql.Instance{DB: db, Flavor: mysql.MariaDB}
}

func serverPID(t *testing.T, s *mariadb.Server) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir, "mariadbd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TLS as the operator sets it up, on real servers: replication over TLS that verifies the
// source's certificate and name, a wrong CA refused (by a replica and by a client), clients
// without TLS refused under require_secure_transport, and a renewed certificate served after
// FLUSH SSL by the same process.
func TestTLSOnMariaDB(t *testing.T) {
	files := mariadb.NewTLSFiles(t)
	dir, ca, first := files.Dir, files.CA, files.Server
	other, err := pki.NewCA("another CA", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	wrongCA := filepath.Join(dir, "other-ca.crt")
	if err := os.WriteFile(wrongCA, other.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cnf := "[mysqld]\nlog_bin = binlog\nlog_slave_updates = ON\ngtid_strict_mode = ON\nbinlog_format = ROW\nskip_name_resolve = ON\nskip_slave_start = ON\nread_only = ON\n" +
		files.MyCnf()
	servers := mariadb.Start(t, 2, mariadb.Options{MyCnf: cnf})
	ctx := context.Background()
	f := mysql.MariaDB
	var seen peer
	primary := tlsInstance(t, servers[0], ca.CertPEM, &seen)
	replica := tlsInstance(t, servers[1], ca.CertPEM, nil)
	if err := primary.DB.PingContext(ctx); err != nil {
		t.Fatalf("TLS connection verified under the cluster's CA: %v", err)
	}
	if err := tlsInstance(t, servers[0], other.CertPEM, nil).DB.PingContext(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client trusting another CA connected (err %v)", err)
	}

	src := mysql.Source{Host: "127.0.0.1", Port: servers[0].Port, User: mariadb.ReplUser, Password: mariadb.ReplPassword, ConnectRetry: 1, TLSCAFile: files.CAFile()}
	if err := primary.ExecSQL(ctx, f.SetReadOnly(false)); err != nil {
		t.Fatal(err)
	}
	repoint := func(src mysql.Source) {
		t.Helper()
		if err := replica.Exec(ctx, mysql.Statement{Query: f.StopReplica()}, f.ChangeSource(src), mysql.Statement{Query: f.StartReplica()}); err != nil {
			t.Fatal(err)
		}
	}
	repoint(src)
	waitFor(t, "replica connected over TLS", func() bool {
		rs := status(t, replica).Replica
		return rs != nil && rs.IORunning && rs.SQLRunning && rs.TLS
	})
	mustExec(t, primary.DB, "CREATE DATABASE app")
	mustExec(t, primary.DB, "CREATE TABLE app.t (id INT PRIMARY KEY)")
	mustExec(t, primary.DB, "INSERT INTO app.t VALUES (1)")
	if err := replica.WaitForGTID(ctx, status(t, primary).Executed, 10*time.Second); err != nil {
		t.Fatalf("replication over TLS: %v", err)
	}

	// A replica that trusts another CA does not connect.
	bad := src
	bad.TLSCAFile = wrongCA
	repoint(bad)
	waitFor(t, "replica refusing the source's certificate", func() bool {
		rs := status(t, replica).Replica
		return rs != nil && !rs.IORunning && rs.LastIOError != ""
	})
	t.Logf("replica with the wrong CA: %s", status(t, replica).Replica.LastIOError)
	repoint(src)

	// require_secure_transport: no plain TCP client, TLS clients and replication go on.
	plain := servers[0].Conn(mariadb.AdminUser, mariadb.AdminPassword)
	plain.SetMaxIdleConns(0)
	if err := plain.PingContext(ctx); err != nil {
		t.Fatalf("a client without TLS before require_secure_transport: %v", err)
	}
	if err := primary.ExecSQL(ctx, "SET GLOBAL require_secure_transport = ON"); err != nil {
		t.Fatal(err)
	}
	// MariaDB answers such a client with an access-denied error (1045).
	if err := plain.PingContext(ctx); err == nil {
		t.Fatal("a client without TLS connected under require_secure_transport")
	} else {
		t.Logf("client without TLS: %v", err)
	}
	mustExec(t, primary.DB, "INSERT INTO app.t VALUES (2)")
	if err := replica.WaitForGTID(ctx, status(t, primary).Executed, 10*time.Second); err != nil {
		t.Fatalf("replication over TLS under require_secure_transport: %v", err)
	}

	// Rotation: new files, FLUSH SSL, the new certificate is served by the same process.
	pid := serverPID(t, servers[0])
	if err := primary.DB.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	seen.mu.Lock()
	if seen.cert == nil || !bytes.Equal(seen.cert.Raw, first.Cert.Raw) {
		t.Fatal("the server did not present the first certificate")
	}
	seen.mu.Unlock()
	second := files.Renew(t)
	if err := primary.ExecSQL(ctx, f.ReloadTLS()); err != nil {
		t.Fatalf("%s: %v", f.ReloadTLS(), err)
	}
	if err := primary.DB.PingContext(ctx); err != nil {
		t.Fatalf("connect after the reload: %v", err)
	}
	seen.mu.Lock()
	if !bytes.Equal(seen.cert.Raw, second.Cert.Raw) {
		t.Error("after the reload the server still presents the first certificate")
	}
	seen.mu.Unlock()
	if got := serverPID(t, servers[0]); got != pid {
		t.Errorf("the server's PID changed from %s to %s: it restarted", pid, got)
	}
	mustExec(t, primary.DB, "INSERT INTO app.t VALUES (3)")
	if err := replica.WaitForGTID(ctx, status(t, primary).Executed, 10*time.Second); err != nil {
		t.Fatalf("replication after the reload: %v", err)
	}
}
