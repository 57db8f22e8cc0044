// Package configmap builds the ConfigMap that holds a cluster's my.cnf.
//
// The file carries the operator's settings for GTID replication, binary logs and safety
// (every member starts read-only; the clustering manager makes one writable), then the
// user's spec.config. Per-member values (server_id, report_host) are added by the agent's init
// step, which reads this file as its template.
package configmap

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// Key is the ConfigMap key that holds my.cnf.
const Key = "my.cnf"

// KeyHoldsData is the ConfigMap key, present once the cluster has had a primary, that tells a
// member's init that the cluster holds data: an empty member then never starts empty while a
// peer that may hold the data does not answer (it waits for a donor instead). It is not part of
// the restart hash (Hash), so setting it restarts nothing.
const KeyHoldsData = "holds-data"

// Paths inside the server container that my.cnf refers to.
const (
	DataDir    = "/var/lib/mysql/data"
	SocketPath = "/run/mysqld/mysqld.sock"
	// PIDPath is the server's pid file, beside the socket where the agent reads it.
	PIDPath  = "/run/mysqld/mysqld.pid"
	ConfDDir = "/etc/mysqlop/conf/conf.d"
	// ServerTmpDir is the server's temporary directory, and the only one its file operations
	// (LOAD DATA INFILE, SELECT ... INTO OUTFILE, LOAD_FILE) may reach: in the server
	// container it is a volume no other container mounts.
	ServerTmpDir = "/tmp"
	// TLSDir is where the server container mounts the cluster's TLS Secret.
	TLSDir = "/etc/mysqlop/tls"
)

// TLS files under TLSDir: the keys of the TLS Secret.
const (
	TLSCertFile = TLSDir + "/tls.crt"
	TLSKeyFile  = TLSDir + "/tls.key"
	TLSCAFile   = TLSDir + "/ca.crt"
)

// defaults are operator choices the user may override through spec.config.
var defaults = map[string]string{
	"binlog_format":                  "ROW",
	"character_set_server":           "utf8mb4",
	"innodb_flush_log_at_trx_commit": "1",
	"sync_binlog":                    "1",
	"skip_name_resolve":              "ON",
	"max_connections":                "500",
}

// owned returns the settings the operator always sets for flavor (keys are in
// v1alpha1.OperatorOwnedConfigKeys or are flavor-specific safety settings).
func owned(flavor v1alpha1.Flavor) [][2]string {
	common := [][2]string{
		{"datadir", DataDir},
		{"socket", SocketPath},
		{"pid_file", PIDPath},
		{"port", fmt.Sprint(resources.PortMySQL)},
		{"log_bin", "binlog"},
		{"relay_log", "relay-bin"},
		{"read_only", "ON"},
		{"tmpdir", ServerTmpDir},
		{"secure_file_priv", ServerTmpDir},
	}
	if flavor == v1alpha1.FlavorMariaDB {
		return append(common,
			[2]string{"bind_address", "0.0.0.0"},
			[2]string{"log_slave_updates", "ON"},
			[2]string{"gtid_strict_mode", "ON"},
			[2]string{"skip_slave_start", "ON"},
			// Every member starts as a replica, so crash recovery truncates a binlog tail that
			// is prepared but not committed in InnoDB: a primary killed while a commit waited
			// for its semi-sync acknowledgement (AFTER_SYNC) drops that commit, which no client
			// was told succeeded, and can follow the new primary. loose_: servers before
			// 10.6.17 / 10.11.7 lack the option (they keep the tail; re-seeding covers them).
			[2]string{"loose_init_rpl_role", "SLAVE"},
			// STOP SLAVE on a semi-sync replica connects to the source to end its dump
			// thread, waiting up to this many seconds (default 5): against a source whose
			// packets are dropped, that wait held every failover from a cut network.
			[2]string{"rpl_semi_sync_slave_kill_conn_timeout", "1"},
		)
	}
	return append(common,
		[2]string{"bind_address", "*"},
		[2]string{"super_read_only", "ON"},
		[2]string{"gtid_mode", "ON"},
		[2]string{"enforce_gtid_consistency", "ON"},
		[2]string{"log_replica_updates", "ON"},
		[2]string{"skip_replica_start", "ON"},
		[2]string{"plugin_load_add", "semisync_source.so;semisync_replica.so"},
	)
}

// tlsSettings serve TLS with the mounted Secret's files, which the agent makes the server read
// again when they change (FLUSH SSL / ALTER INSTANCE RELOAD TLS). Without TLS the user's
// spec.config may set the ssl_ options itself.
func tlsSettings(t v1alpha1.TLSSpec) [][2]string {
	if t.Disabled {
		return nil
	}
	out := [][2]string{{"ssl_ca", TLSCAFile}, {"ssl_cert", TLSCertFile}, {"ssl_key", TLSKeyFile}}
	if t.RequireSecureTransport {
		out = append(out, [2]string{"require_secure_transport", "ON"})
	}
	return out
}

// Render returns my.cnf for c. The output is deterministic: same spec, same bytes.
func Render(c *v1alpha1.MySQLCluster) string {
	settings := map[string]string{}
	for k, v := range defaults {
		settings[k] = v
	}
	for k, v := range c.Spec.Config {
		settings[v1alpha1.NormalizeConfigKey(k)] = string(v)
	}
	// Later entries win, so owned settings are applied last.
	for _, kv := range append(owned(c.Spec.Flavor), tlsSettings(c.Spec.TLS)...) {
		settings[kv[0]] = kv[1]
	}
	var b strings.Builder
	b.WriteString("# Written by mysql-operator. Change spec.config of the MySQLCluster instead.\n")
	b.WriteString("[mysqld]\n")
	for _, k := range resources.SortedKeys(settings) {
		fmt.Fprintf(&b, "%s = %s\n", k, settings[k])
	}
	b.WriteString("\n[client]\n")
	fmt.Fprintf(&b, "socket = %s\n", SocketPath)
	fmt.Fprintf(&b, "\n!includedir %s\n", ConfDDir)
	return b.String()
}

// New returns the my.cnf ConfigMap of c; holdsData adds KeyHoldsData.
func New(c *v1alpha1.MySQLCluster, operatorVersion string, holdsData bool) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: resources.ObjectMeta(c, resources.ConfigMapName(c), operatorVersion),
		Data:       map[string]string{Key: Render(c)},
	}
	if holdsData {
		cm.Data[KeyHoldsData] = "true"
	}
	return cm
}

// HoldsData reports whether cm (nil when absent) records that its cluster holds data.
func HoldsData(cm *corev1.ConfigMap) bool {
	return cm != nil && cm.Data[KeyHoldsData] == "true"
}

// Hash is the hash of cm's my.cnf, which restarts the members when it changes. It covers only
// Key, and hashes it in the map form earlier versions hashed the whole data in, so the hash of
// an unchanged my.cnf stays what it was.
func Hash(cm *corev1.ConfigMap) string {
	return resources.Hash(map[string]string{Key: cm.Data[Key]})
}
