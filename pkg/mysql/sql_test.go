package mysql

import (
	"strings"
	"testing"
)

func TestStatementsPerFlavor(t *testing.T) {
	for _, tc := range []struct {
		name           string
		mysql, mariadb string
		got            func(Flavor) string
	}{
		{"start", "START REPLICA", "START SLAVE", Flavor.StartReplica},
		{"stop io", "STOP REPLICA IO_THREAD", "STOP SLAVE IO_THREAD", Flavor.StopReplicaIO},
		{"reset", "RESET REPLICA ALL", "RESET SLAVE ALL", Flavor.ResetReplicaAll},
		{"status", "SHOW REPLICA STATUS", "SHOW SLAVE STATUS", Flavor.ReplicaStatus},
		{"executed", "SELECT @@GLOBAL.gtid_executed", "SELECT @@GLOBAL.gtid_binlog_pos", Flavor.ExecutedQuery},
		{"state", "SELECT @@GLOBAL.server_id, @@GLOBAL.version, @@GLOBAL.gtid_executed, @@GLOBAL.gtid_purged, @@GLOBAL.read_only, @@GLOBAL.super_read_only",
			"SELECT @@GLOBAL.server_id, @@GLOBAL.version, @@GLOBAL.gtid_binlog_pos, '', @@GLOBAL.read_only, 0", Flavor.StateQuery},
		{"read only", "SET GLOBAL super_read_only = ON", "SET GLOBAL read_only = ON", func(f Flavor) string { return f.SetReadOnly(true) }},
		{"writable", "SET GLOBAL super_read_only = OFF, GLOBAL read_only = OFF", "SET GLOBAL read_only = OFF", func(f Flavor) string { return f.SetReadOnly(false) }},
		{"semisync replica", "SET GLOBAL rpl_semi_sync_replica_enabled = ON", "SET GLOBAL rpl_semi_sync_slave_enabled = ON", func(f Flavor) string { return f.SemiSyncReplica(true) }},
	} {
		if got := tc.got(MySQL); got != tc.mysql {
			t.Errorf("%s mysql: %q", tc.name, got)
		}
		if got := tc.got(MariaDB); got != tc.mariadb {
			t.Errorf("%s mariadb: %q", tc.name, got)
		}
	}
}

func TestChangeSourceKeepsPasswordOutOfTheQuery(t *testing.T) {
	src := Source{Host: "db-0.db-headless", Port: 3306, User: "repl", Password: "s3cr'et"}
	for f, want := range map[Flavor]string{MySQL: "SOURCE_AUTO_POSITION = 1", MariaDB: "MASTER_USE_GTID = current_pos"} {
		s := f.ChangeSource(src)
		if !strings.Contains(s.Query, want) {
			t.Errorf("%s: %q lacks %q", f, s.Query, want)
		}
		if strings.Contains(s.Query, src.Password) || len(s.Args) != 6 || s.Args[3] != src.Password || !s.Sensitive {
			t.Errorf("%s: the password must be an argument: %q %v", f, s.Query, len(s.Args))
		}
	}
}

// A source without TLS names the TLS options too: CHANGE keeps what it does not name, so a
// replica repointed from a TLS source to a plain one would otherwise still insist on TLS.
func TestChangeSourceNamesTheTLSOptionsBothWays(t *testing.T) {
	for _, tc := range []struct {
		f          Flavor
		caFile     string
		want, args string
	}{
		{MariaDB, "", "MASTER_SSL = 0, MASTER_SSL_CA = ?, MASTER_SSL_VERIFY_SERVER_CERT = 0", ""},
		{MariaDB, "/etc/tls/ca.crt", "MASTER_SSL = 1, MASTER_SSL_CA = ?, MASTER_SSL_VERIFY_SERVER_CERT = 1", "/etc/tls/ca.crt"},
		{MySQL, "", "SOURCE_SSL = 0, SOURCE_SSL_CA = ?, SOURCE_SSL_VERIFY_SERVER_CERT = 0", ""},
		{MySQL, "/etc/tls/ca.crt", "SOURCE_SSL = 1, SOURCE_SSL_CA = ?, SOURCE_SSL_VERIFY_SERVER_CERT = 1", "/etc/tls/ca.crt"},
	} {
		s := tc.f.ChangeSource(Source{Host: "h", Port: 1, TLSCAFile: tc.caFile})
		if !strings.HasSuffix(s.Query, tc.want) || s.Args[len(s.Args)-1] != tc.args {
			t.Errorf("%s with CA %q: %q %v, want it to end with %q and the CA argument", tc.f, tc.caFile, s.Query, s.Args, tc.want)
		}
	}
}

func TestSemiSyncNeverFallsBack(t *testing.T) {
	for _, f := range []Flavor{MySQL, MariaDB} {
		s := f.SemiSyncSource(true, 1)
		if !strings.Contains(s.Query, "AFTER_SYNC") || s.Args[0] != SemiSyncNeverFallBackMillis {
			t.Errorf("%s: %q %v: want loss-less AFTER_SYNC and the longest timeout", f, s.Query, s.Args)
		}
	}
	if s := MySQL.SemiSyncSource(true, 2); s.Args[1] != 2 {
		t.Errorf("wait count %v", s.Args)
	}
}

func TestResetToGTID(t *testing.T) {
	queries := func(stmts []Statement) string {
		var out []string
		for _, s := range stmts {
			q := s.Query
			for _, a := range s.Args {
				q = strings.Replace(q, "?", "'"+a.(string)+"'", 1)
			}
			out = append(out, q)
		}
		return strings.Join(out, "; ")
	}
	for _, tc := range []struct {
		name          string
		flavor        Flavor
		version, gtid string
		want          string
	}{
		{"mariadb", MariaDB, "10.11.6-MariaDB-log", "0-100-5,1-101-2",
			"RESET MASTER; SET GLOBAL gtid_binlog_state = '0-100-5,1-101-2'; SET GLOBAL gtid_slave_pos = '0-100-5,1-101-2'"},
		{"mariadb without gtid", MariaDB, "11.4.2-MariaDB", "", "RESET MASTER"},
		{"mysql 8.0", MySQL, "8.0.36", "uuid:1-5", "RESET MASTER; SET GLOBAL gtid_purged = 'uuid:1-5'"},
		{"mysql 8.4", MySQL, "8.4.3", "uuid:1-5", "RESET BINARY LOGS AND GTIDS; SET GLOBAL gtid_purged = 'uuid:1-5'"},
		{"mysql unknown version", MySQL, "", "uuid:1-5", "RESET BINARY LOGS AND GTIDS; SET GLOBAL gtid_purged = 'uuid:1-5'"},
	} {
		if got := queries(tc.flavor.ResetToGTID(tc.version, tc.gtid)); got != tc.want {
			t.Errorf("%s: %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
