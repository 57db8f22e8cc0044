package configmap_test

import (
	"context"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

// The my.cnf the operator renders starts a real MariaDB with the settings replication needs.
func TestRenderedConfigOnMariaDB(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Flavor = v1alpha1.FlavorMariaDB
		c.Spec.Config = map[string]v1alpha1.ConfigValue{"max_connections": "77", "innodb-buffer-pool-size": "64M"}
	})
	s := mariadb.Start(t, 1, mariadb.Options{MyCnf: configmap.Render(c)})[0]
	want := map[string]string{
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
