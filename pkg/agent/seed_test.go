package agent_test

import (
	"context"
	"errors"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// A member that starts empty in a cluster whose primary's binary logs no longer reach back to
// the beginning (as after a physical restore) is seeded by init with a physical copy of a
// peer, on real servers: a donor that fails leaves nothing behind; then the member starts on
// the donor's data at the donor's GTID position, with this cluster's accounts, and replicates
// what the donor writes afterwards.
func TestSeedFromPeerOnMariaDB(t *testing.T) {
	ctx := context.Background()
	cr := maps.Clone(creds)
	cr[agent.FileAgentToken] = "token"
	donor := runMember(t, "db-0", cr)
	op := donor.op(t)
	for _, q := range []string{mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v TEXT)",
		"INSERT INTO shop.t VALUES (1, 'one'), (2, 'two')", "FLUSH BINARY LOGS", "PURGE BINARY LOGS BEFORE NOW()"} {
		if _, err := op.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	plantInstallerAccount(t, op)
	want := checksumOf(t, op)
	var copied string
	if err := op.QueryRow("SELECT @@gtid_binlog_pos").Scan(&copied); err != nil {
		t.Fatal(err)
	}

	m := newMember(t, cr)
	m.opts.PodName = "db-1"
	m.opts.Timeout = 5 * time.Second

	// A donor whose copy fails once the stream began (here: its backup tool is refused by the
	// server).
	srv := agent.NewServer(&mysql.Instance{DB: op, Flavor: mysql.MariaDB}, "token")
	srv.EnableBackups(ctx, agent.BackupConfig{Flavor: mysql.MariaDB, Socket: donor.sock, DataDir: donor.opts.DataDir,
		User: mysql.OperatorUser, Password: "not-the-password", TmpDir: t.TempDir()})
	failing := httptest.NewServer(srv.Handler())
	defer failing.Close()
	m.opts.Peers = []string{strings.TrimPrefix(failing.URL, "http://")}
	if err := agent.Init(ctx, m.opts); err == nil || !strings.Contains(err.Error(), "the donor failed") {
		t.Fatalf("init with a failing donor: %v", err)
	}
	if _, err := os.Stat(m.opts.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed seed left a datadir: %v", err)
	}

	// The donor's agent, and one address where nothing answers.
	m.opts.Peers = []string{"127.0.0.1:1", strings.TrimPrefix(donor.client.BaseURL, "http://")}
	if err := agent.Init(ctx, m.opts); err != nil {
		t.Fatalf("init: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(m.opts.DataDir), "restore")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staging left behind: %v", err)
	}
	m.start(t)
	db := m.conn(t, mysql.OperatorUser, cr[agent.FileOperatorPassword])
	if got := checksumOf(t, db); got != want {
		t.Fatalf("seeded checksum %d, donor %d", got, want)
	}
	if got, want := accounts(t, db), "mariadb.sys@localhost mysqlop@% repl@% root@localhost"; got != want {
		t.Errorf("accounts after seeding: %s, want %s (the donor's passwordless root@127.0.0.1 must not come along)", got, want)
	}
	if got := gtidState(t, db); got != copied+" "+copied {
		t.Errorf("GTID binlog and replica positions %q, want the donor's %s", got, copied)
	}

	// It replicates from the donor from that position on, though the donor's binary logs no
	// longer hold the transactions before it.
	in := &mysql.Instance{DB: db, Flavor: mysql.MariaDB}
	if err := in.Exec(ctx, mysql.MariaDB.ChangeSource(mysql.Source{Host: "127.0.0.1", Port: donor.port, User: mysql.ReplicationUser,
		Password: cr[agent.FileReplicationPassword], ConnectRetry: 1}), mysql.Statement{Query: mysql.MariaDB.StartReplica()}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Exec("INSERT INTO shop.t VALUES (3, 'after the copy')"); err != nil {
		t.Fatal(err)
	}
	want = checksumOf(t, op)
	for deadline := time.Now().Add(20 * time.Second); checksumOf(t, db) != want; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			st, _ := in.Status(ctx)
			t.Fatalf("the seeded member never caught up; replica status %+v", st.Replica)
		}
	}
}

// With no peer holding data (a new cluster: no transaction in any GTID position), init
// initialises an empty datadir rather than copying a peer.
func TestNoSeedInANewClusterOnMariaDB(t *testing.T) {
	cr := maps.Clone(creds)
	cr[agent.FileAgentToken] = "token"
	peer := runMember(t, "db-0", cr)
	// A table written outside the binary log: a copy would bring it along.
	db := peer.op(t)
	db.SetMaxOpenConns(1)
	for _, q := range []string{"SET SESSION sql_log_bin = 0", mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE unlogged"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	m := newMember(t, cr)
	m.opts.PodName = "db-1"
	m.opts.Peers = []string{strings.TrimPrefix(peer.client.BaseURL, "http://")}
	if err := agent.Init(context.Background(), m.opts); err != nil {
		t.Fatal(err)
	}
	m.start(t)
	var n int
	if err := m.conn(t, mysql.OperatorUser, cr[agent.FileOperatorPassword]).QueryRow(
		"SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'unlogged'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the member of a new cluster was copied from its peer (%d, %v)", n, err)
	}
}

// A primary that is the only donor while a commit waits for a semi-sync acknowledgement no
// replica can send (the member being seeded would be the one) still finishes the copy: the
// donor ends the waiting connection, whose client gets an error, and the copy holds the commit.
func TestSeedFromAPrimaryWithCommitsWaitingOnMariaDB(t *testing.T) {
	ctx := context.Background()
	cr := maps.Clone(creds)
	cr[agent.FileAgentToken] = "token"
	donor := runMember(t, "db-0", cr)
	op := donor.op(t)
	semi := mysql.MariaDB.SemiSyncSource(true, 1)
	for _, s := range []mysql.Statement{{Query: mysql.MariaDB.SetReadOnly(false)}, {Query: "CREATE DATABASE shop"},
		{Query: "CREATE TABLE shop.t (id INT PRIMARY KEY, v TEXT)"}, {Query: "INSERT INTO shop.t VALUES (1, 'one')"},
		mysql.CreateUser("app", "%", "app-Pa55"), {Query: "GRANT INSERT ON shop.* TO 'app'@'%'"}, semi} {
		if _, err := op.Exec(s.Query, s.Args...); err != nil {
			t.Fatalf("%s: %v", s.Query, err)
		}
	}
	app := donor.conn(t, "app", "app-Pa55")
	waited := make(chan error, 1)
	go func() {
		_, err := app.Exec("INSERT INTO shop.t VALUES (2, 'waits for an acknowledgement')")
		waited <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var n int
		_ = op.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for semi-sync ACK%'").Scan(&n)
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the commit never waited for an acknowledgement")
		}
	}

	m := newMember(t, cr)
	m.opts.PodName = "db-1"
	m.opts.Peers = []string{strings.TrimPrefix(donor.client.BaseURL, "http://")}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- agent.Init(ctx, m.opts) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("seed: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the copy waits behind the commit that waits for an acknowledgement")
	}
	t.Logf("seeded in %v", time.Since(start).Round(time.Millisecond))
	select {
	case err := <-waited:
		if err == nil {
			t.Error("the waiting commit was answered OK without an acknowledgement")
		}
	case <-time.After(10 * time.Second):
		t.Error("the client still waits")
	}
	m.start(t)
	var n int
	if err := m.conn(t, mysql.OperatorUser, cr[agent.FileOperatorPassword]).QueryRow("SELECT COUNT(*) FROM shop.t").Scan(&n); err != nil || n != 2 {
		t.Errorf("rows in the copy: %d (%v), want 2: the copy holds the commit", n, err)
	}
}

// A member of a cluster that holds data never starts empty while its peers are down: init
// waits for a donor and fails at its deadline without a datadir, and once a peer with data
// answers, the retry copies it. Without the operator's record the same member would start
// empty (TestNoSeedInANewClusterOnMariaDB).
func TestNoEmptyMemberWhilePeersAreDownOnMariaDB(t *testing.T) {
	ctx := context.Background()
	cr := maps.Clone(creds)
	cr[agent.FileAgentToken] = "token"
	m := newMember(t, cr)
	m.opts.PodName = "db-1"
	m.opts.Timeout = 3 * time.Second
	m.opts.ClusterHoldsData = true
	m.opts.Peers = []string{"127.0.0.1:1"} // db-0, down: nothing answers
	if err := agent.Init(ctx, m.opts); err == nil || !strings.Contains(err.Error(), "the cluster holds data") {
		t.Fatalf("init with every peer down: %v", err)
	}
	if _, err := os.Stat(m.opts.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a member started with a datadir while no peer answered: %v", err)
	}

	donor := runMember(t, "db-0", cr)
	op := donor.op(t)
	for _, q := range []string{mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE shop"} {
		if _, err := op.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	m.opts.Peers = []string{strings.TrimPrefix(donor.client.BaseURL, "http://")}
	if err := agent.Init(ctx, m.opts); err != nil {
		t.Fatalf("init once the peer is back: %v", err)
	}
	m.start(t)
	var n int
	if err := m.conn(t, mysql.OperatorUser, cr[agent.FileOperatorPassword]).QueryRow(
		"SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'shop'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the member was not copied from the peer that came back (%d, %v)", n, err)
	}
}
