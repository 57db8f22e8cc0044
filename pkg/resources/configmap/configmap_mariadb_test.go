package configmap_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/pki"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

// The my.cnf the operator renders starts a real MariaDB with the settings replication needs,
// serving TLS with the mounted certificate.
func TestRenderedConfigOnMariaDB(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Flavor = v1alpha1.FlavorMariaDB
		c.Spec.Config = map[string]v1alpha1.ConfigValue{"max_connections": "77", "innodb-buffer-pool-size": "64M"}
	})
	// The TLS Secret's files, where the test can write them.
	dir := t.TempDir()
	ca, err := pki.NewCA("test", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := pki.Issue(ca, pki.Request{CommonName: "db", DNSNames: resources.TLSServerNames(c), Lifetime: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": kp.CertPEM, "tls.key": kp.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cnf := strings.ReplaceAll(configmap.Render(c), configmap.TLSDir, dir)
	s := mariadb.Start(t, 1, mariadb.Options{MyCnf: cnf})[0]
	want := map[string]string{
		"have_ssl": "YES", "ssl_cert": filepath.Join(dir, "tls.crt"),
		"log_bin": "ON", "log_slave_updates": "ON", "gtid_strict_mode": "ON", "binlog_format": "ROW",
		"read_only": "ON", "skip_name_resolve": "ON", "max_connections": "77", "sync_binlog": "1",
		"innodb_buffer_pool_size": "67108864", "character_set_server": "utf8mb4",
	}
	db := s.Admin().DB
	for k, v := range want {
		var name, got string
		if err := db.QueryRowContext(context.Background(), "SHOW GLOBAL VARIABLES LIKE ?", k).Scan(&name, &got); err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		if got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}
