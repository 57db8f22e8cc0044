package agent_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/backup/executor"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
	"github.com/mysqlop/mysql-operator/test/s3"
)

// running is a member whose server runs as in its pod, with its agent's API in front.
type running struct {
	*member
	creds  map[string]string
	stop   func()
	client *agentapi.Client
}

// runMember initialises a member as init does, starts its server and serves its agent API.
func runMember(t *testing.T, pod string, creds map[string]string) *running {
	t.Helper()
	m := newMember(t, creds)
	m.opts.PodName = pod
	if err := agent.Init(context.Background(), m.opts); err != nil {
		t.Fatalf("init %s: %v", pod, err)
	}
	r := &running{member: m, creds: creds}
	r.serve(t)
	return r
}

// serve starts the server and a fresh agent (as a restarted pod has).
func (r *running) serve(t *testing.T) {
	t.Helper()
	r.stop = r.start(t)
	r.newAgent(t)
}

// newAgent starts a fresh agent for the running server (as a restarted agent container).
func (r *running) newAgent(t *testing.T) {
	t.Helper()
	db, err := mysql.Open(mysql.ConnConfig{Addr: r.sock, Socket: true, User: mysql.OperatorUser, Password: r.creds[agent.FileOperatorPassword]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// As the agent's serve does, beside the server.
	if err := agent.RemoveReplacedDatadir(context.Background(), r.opts.DataDir); err != nil {
		t.Fatal(err)
	}
	srv := agent.NewServer(&mysql.Instance{DB: db, Flavor: mysql.MariaDB}, "token")
	srv.EnableBackups(context.Background(), agent.BackupConfig{Flavor: mysql.MariaDB, Socket: r.sock, DataDir: r.opts.DataDir,
		User: mysql.OperatorUser, Password: r.creds[agent.FileOperatorPassword], TmpDir: t.TempDir(), Tools: mariadb.Toolbox(t)})
	api := httptest.NewServer(srv.Handler())
	t.Cleanup(api.Close)
	r.client = &agentapi.Client{BaseURL: api.URL, Token: "token"}
}

func (r *running) op(t *testing.T) *sql.DB {
	return r.conn(t, mysql.OperatorUser, r.creds[agent.FileOperatorPassword])
}

// restart stops the server and runs init again, as a deleted pod does before its server starts.
func (r *running) restart(t *testing.T) {
	t.Helper()
	r.stop()
	if err := agent.Init(context.Background(), r.opts); err != nil {
		t.Fatalf("init after the restart: %v", err)
	}
	r.serve(t)
}

func waitRestore(t *testing.T, c *agentapi.Client, id string) *agentapi.BackupState {
	t.Helper()
	return waitJob(t, id, c.Restore)
}

func checksumOf(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var name string
	var sum sql.NullInt64
	if err := db.QueryRow("CHECKSUM TABLE shop.t").Scan(&name, &sum); err != nil {
		t.Fatal(err)
	}
	return sum.Int64
}

func gtidState(t *testing.T, db *sql.DB) string {
	t.Helper()
	var binlog, slave string
	if err := db.QueryRow("SELECT @@gtid_binlog_pos, @@gtid_slave_pos").Scan(&binlog, &slave); err != nil {
		t.Fatal(err)
	}
	return binlog + " " + slave
}

// A physical backup of one member restored into another member of a cluster with other
// credentials, through the agent's API and init, on real servers and a real S3 server: a
// corrupted object stages nothing; staging leaves the running server alone until the restore
// is committed and the pod restarts; then the member runs on the backup's data (same table
// checksum), at the backup's GTID position, with its own cluster's accounts, and new writes
// follow that position. Uncommitted or discarded staging never replaces data.
func TestPhysicalRestoreOnMariaDB(t *testing.T) {
	ctx := context.Background()
	gw := s3.Start(t)
	source := runMember(t, "src-0", creds)
	for _, q := range []string{mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v TEXT)",
		"INSERT INTO shop.t VALUES (1, 'one'), (2, 'two')"} {
		if _, err := source.op(t).Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	// A source initialised by an earlier version still holds the installer's root account.
	plantInstallerAccount(t, source.op(t))
	want := checksumOf(t, source.op(t))
	store := gw.AgentConfig("p")
	if _, err := source.client.StartBackup(ctx, agentapi.BackupRequest{ID: "bk", Method: executor.Physical, Object: "full.xbstream.zst", Storage: store}); err != nil {
		t.Fatal(err)
	}
	bk := waitBackup(t, source.client, "bk")
	if bk.Phase != agentapi.BackupComplete || bk.GTID == "" {
		t.Fatalf("backup %+v", bk)
	}

	// The target: another cluster's member, with its own passwords and data.
	other := map[string]string{agent.FileRootPassword: "root-Other-4", agent.FileReplicationPassword: "repl-Other-5", agent.FileOperatorPassword: "op-Other-6"}
	target := runMember(t, "dst-1", other)
	for _, q := range []string{mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v TEXT)",
		"INSERT INTO shop.t VALUES (7, 'mine')"} {
		if _, err := target.op(t).Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	own := checksumOf(t, target.op(t))
	req := agentapi.BackupRequest{ID: "rs", Method: executor.Physical, Object: "full.xbstream.zst", Storage: store, SHA256: bk.SHA256}

	// A corrupted object: verified while it is unpacked, and what was unpacked is removed.
	bad := req
	bad.ID, bad.SHA256 = "rs-bad", strings.Repeat("0", 64)
	if _, err := target.client.StartRestore(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if st := waitRestore(t, target.client, "rs-bad"); st.Phase != agentapi.BackupFailed || !strings.Contains(st.Error, "corrupted") {
		t.Fatalf("restore of a corrupted object: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(target.opts.DataDir), "restore")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed restore left staging behind: %v", err)
	}

	// Staged, then discarded: the member keeps its data, even across a restart.
	discarded := req
	discarded.ID = "rs-discarded"
	if _, err := target.client.StartRestore(ctx, discarded); err != nil {
		t.Fatal(err)
	}
	if st := waitRestore(t, target.client, "rs-discarded"); st.Phase != agentapi.RestoreStaged || st.GTID != bk.GTID {
		t.Fatalf("staged restore: %+v (backup at %s)", st, bk.GTID)
	}
	if err := target.client.DiscardRestore(ctx, "rs-discarded"); err != nil {
		t.Fatal(err)
	}
	if _, err := target.client.CommitRestore(ctx, "rs-discarded"); !errors.Is(err, agentapi.ErrBackupNotFound) {
		t.Fatalf("commit of a discarded restore: %v", err)
	}

	// Staged but never committed when the pod restarts: init throws it away.
	if _, err := target.client.StartRestore(ctx, req); err != nil {
		t.Fatal(err)
	}
	if st := waitRestore(t, target.client, "rs"); st.Phase != agentapi.RestoreStaged {
		t.Fatalf("staged restore: %+v", st)
	}
	if got := checksumOf(t, target.op(t)); got != own {
		t.Fatal("staging changed the running server's data")
	}
	target.restart(t)
	if got := checksumOf(t, target.op(t)); got != own {
		t.Fatal("an uncommitted restore replaced the data")
	}
	if _, err := target.client.Restore(ctx, "rs"); !errors.Is(err, agentapi.ErrBackupNotFound) {
		t.Fatalf("uncommitted restore after the restart: %v", err)
	}

	// Staged, committed, restarted: the backup's data, position and this cluster's accounts.
	req.ID = "rs-2"
	if _, err := target.client.StartRestore(ctx, req); err != nil {
		t.Fatal(err)
	}
	if st := waitRestore(t, target.client, "rs-2"); st.Phase != agentapi.RestoreStaged {
		t.Fatalf("staged restore: %+v", st)
	}
	for range 2 { // committing twice is harmless
		if st, err := target.client.CommitRestore(ctx, "rs-2"); err != nil || st.Phase != agentapi.RestoreCommitted {
			t.Fatalf("commit: %+v %v", st, err)
		}
	}
	if st, err := target.client.Restore(ctx, "rs-2"); err != nil || st.Phase != agentapi.RestoreCommitted {
		t.Fatalf("committed restore: %+v %v", st, err)
	}
	// A restarted agent asked to stage the same restore again keeps the committed staging.
	target.newAgent(t)
	if _, err := target.client.StartRestore(ctx, req); err != nil {
		t.Fatal(err)
	}
	if st := waitRestore(t, target.client, "rs-2"); st.Phase != agentapi.RestoreCommitted || st.GTID != bk.GTID {
		t.Fatalf("the same restore staged again after an agent restart: %+v", st)
	}
	// init moves the old datadir aside and leaves deleting it to the agent, so that the
	// restored server starts without waiting for it.
	target.stop()
	if err := agent.Init(context.Background(), target.opts); err != nil {
		t.Fatalf("init after the commit: %v", err)
	}
	replaced := filepath.Join(filepath.Dir(target.opts.DataDir), "restore-replaced")
	if _, err := os.Stat(filepath.Join(replaced, "shop")); err != nil {
		t.Errorf("after init, the old datadir is not set aside whole: %v", err)
	}
	target.serve(t)
	if _, err := os.Stat(replaced); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the started agent left the old datadir: %v", err)
	}
	if st, err := target.client.Restore(ctx, "rs-2"); err != nil || st.Phase != agentapi.RestoreApplied || st.GTID != bk.GTID {
		t.Fatalf("applied restore, asked of the restarted agent: %+v %v", st, err)
	}
	db := target.op(t) // this cluster's operator password works on the restored data
	if got := checksumOf(t, db); got != want {
		t.Fatalf("checksum after the physical restore %d, the source had %d", got, want)
	}
	if got := gtidState(t, db); got != bk.GTID+" "+bk.GTID {
		t.Errorf("GTID binlog and replica positions %q, want the backup's %s for both", got, bk.GTID)
	}
	if err := target.conn(t, mysql.OperatorUser, creds[agent.FileOperatorPassword]).Ping(); err == nil {
		t.Error("the source cluster's operator password still works")
	}
	rootDB, _ := mysql.Open(mysql.ConnConfig{Addr: target.sock, Socket: true, User: "root", Password: other[agent.FileRootPassword]})
	defer rootDB.Close()
	if err := rootDB.Ping(); err != nil {
		t.Errorf("root with this cluster's password: %v", err)
	}
	if got := accounts(t, db); strings.Contains(got, "root@127.0.0.1") {
		t.Errorf("the source's passwordless root account came along: %s", got)
	}
	var replicas int
	rows, err := db.Query("SHOW ALL SLAVES STATUS")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		replicas++
	}
	rows.Close()
	if replicas != 0 {
		t.Errorf("%d replication sources survived the restore", replicas)
	}
	// New writes continue the backup's GTID history (server_id 101 is dst-1's).
	if _, err := db.Exec(mysql.MariaDB.SetReadOnly(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO shop.t VALUES (3, 'three')"); err != nil {
		t.Fatal(err)
	}
	var seq int
	_, _ = fmt.Sscanf(bk.GTID, "0-100-%d", &seq)
	var pos string
	_ = db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos)
	if want := fmt.Sprintf("0-101-%d", seq+1); pos != want {
		t.Errorf("first write after the restore is %s, want %s", pos, want)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(target.opts.DataDir), "restore")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old datadir or staging is left behind: %v", err)
	}

	// A logical dump is no physical backup: staging fails and says why.
	if _, err := source.client.StartBackup(ctx, agentapi.BackupRequest{ID: "dump", Method: executor.Logical, Object: "dump.sql.zst", Storage: store}); err != nil {
		t.Fatal(err)
	}
	waitBackup(t, source.client, "dump")
	wrong := req
	wrong.ID, wrong.Object, wrong.SHA256 = "rs-3", "dump.sql.zst", ""
	if _, err := target.client.StartRestore(ctx, wrong); err != nil {
		t.Fatal(err)
	}
	if st := waitRestore(t, target.client, "rs-3"); st.Phase != agentapi.BackupFailed || !strings.Contains(st.Error, "mbstream") {
		t.Fatalf("physical restore of a dump: %+v", st)
	}
}
