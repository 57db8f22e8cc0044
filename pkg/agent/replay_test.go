package agent_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/archive"
	"github.com/mysqlop/mysql-operator/pkg/backup/executor"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
	"github.com/mysqlop/mysql-operator/test/s3"
)

// pitrSource is a primary and its replica writing rows in groups, each group within one
// second of its own, with the binary logs archived to a real S3 server.
type pitrSource struct {
	t       *testing.T
	ctx     context.Context
	servers []*mariadb.Server
	primary int
	store   *storage.Store
	// groups[i] are the ids written in the second times[i].
	groups [][]int
	times  []time.Time
}

const pitrPrefix = "ns/db/binlog"

// serverIDs matches an event header line of mariadb-binlog's output, with its server id.
var serverIDs = regexp.MustCompile(`(?m)^#\d{6} .* server id (\d+) .*$`)

func (p *pitrSource) exec(s *mariadb.Server, qs ...string) {
	p.t.Helper()
	if err := s.Admin().ExecSQL(p.ctx, qs...); err != nil {
		p.t.Fatal(err)
	}
}

// group writes ids in one second, after the second of the group before. It starts at the
// beginning of the next second: started mid-second (the first group, or any group after a slow
// step) the writes could cross into the next one on a loaded machine.
func (p *pitrSource) group(ids ...int) {
	p.t.Helper()
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	start := time.Now()
	for _, id := range ids {
		p.exec(p.servers[p.primary], fmt.Sprintf("INSERT INTO shop.t VALUES (%d, REPEAT('r%d', 50))", id, id))
	}
	if time.Now().Truncate(time.Second) != start.Truncate(time.Second) {
		p.t.Fatalf("group %v crossed a second boundary: rerun", ids)
	}
	p.groups = append(p.groups, ids)
	p.times = append(p.times, start.Truncate(time.Second))
}

// archive closes the primary's current binary log and archives it.
func (p *pitrSource) archive() {
	p.t.Helper()
	s := p.servers[p.primary]
	p.exec(s, "FLUSH BINARY LOGS")
	a := &archive.Archiver{In: s.Admin(), Dir: filepath.Join(s.Dir, "data"), Store: p.store, Prefix: pitrPrefix, Interval: time.Hour}
	if rep, err := a.Round(p.ctx); err != nil || rep.Gap {
		p.t.Fatalf("archive round: %+v %v", rep, err)
	}
}

// failover promotes the replica once it caught up.
func (p *pitrSource) failover() {
	p.t.Helper()
	old, next := p.servers[0], p.servers[1]
	deadline := time.Now().Add(20 * time.Second)
	for gtidState(p.t, next.Admin().DB) == "" || strings.Fields(gtidState(p.t, next.Admin().DB))[0] != strings.Fields(gtidState(p.t, old.Admin().DB))[0] {
		if time.Now().After(deadline) {
			p.t.Fatal("the replica did not catch up")
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.exec(old, mysql.MariaDB.SetReadOnly(true))
	p.exec(next, "STOP SLAVE", "RESET SLAVE ALL", mysql.MariaDB.SetReadOnly(false))
	p.primary = 1
}

// rowsDigest is the ids in shop.t and a digest of every row's content.
func rowsDigest(t *testing.T, db *sql.DB, where string) (string, string) {
	t.Helper()
	var ids, digest sql.NullString
	q := "SELECT GROUP_CONCAT(id ORDER BY id), SHA2(GROUP_CONCAT(CONCAT_WS(':', id, v) ORDER BY id SEPARATOR ','), 256) FROM shop.t " + where
	if err := db.QueryRow(q).Scan(&ids, &digest); err != nil {
		t.Fatal(err)
	}
	return ids.String, digest.String
}

// Point-in-time recovery on real servers and a real S3 server: rows are written in groups of
// known seconds across three binary log rotations and a failover, a logical backup is taken
// after the first group, and every binary log is archived. Restoring the backup into a third
// server and replaying the archive to the second of the fourth group (written by the new
// primary after the failover) leaves exactly the rows of the first four groups, row for row;
// a replay to a GTID does the same. The replayed transactions carry the restoring server's
// own server_id, so that none is skipped by a replica that once wrote it.
func TestReplayToAPointOnMariaDB(t *testing.T) {
	ctx := context.Background()
	gw := s3.Start(t)
	store, err := storage.New(gw.Config(""))
	if err != nil {
		t.Fatal(err)
	}
	ss := mariadb.Start(t, 4, mariadb.Options{})
	p := &pitrSource{t: t, ctx: ctx, servers: ss[:2], store: store}
	p.exec(ss[0], mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v TEXT)")
	host, port, _ := strings.Cut(ss[0].Addr(), ":")
	var portN int
	fmt.Sscan(port, &portN)
	if err := ss[1].Admin().Exec(ctx, mysql.MariaDB.ChangeSource(mysql.Source{Host: host, Port: portN, User: mariadb.ReplUser, Password: mariadb.ReplPassword})); err != nil {
		t.Fatal(err)
	}
	p.exec(ss[1], "START SLAVE")

	agentOf := func(s *mariadb.Server) *agentapi.Client {
		srv := agent.NewServer(s.Admin(), "token")
		srv.EnableBackups(ctx, agent.BackupConfig{Flavor: mysql.MariaDB, Socket: s.Socket, DataDir: filepath.Join(s.Dir, "data"),
			User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir(), Tools: mariadb.Toolbox(t)})
		api := httptest.NewServer(srv.Handler())
		t.Cleanup(api.Close)
		return &agentapi.Client{BaseURL: api.URL, Token: "token"}
	}

	p.group(1, 2, 3)
	p.archive()
	src := agentOf(ss[0])
	bk := agentapi.BackupRequest{ID: "backup", Method: executor.Logical, Object: "ns/b/dump.sql.zst", Storage: gw.AgentConfig("")}
	if _, err := src.StartBackup(ctx, bk); err != nil {
		t.Fatal(err)
	}
	backup := waitBackup(t, src, "backup")
	if backup.Phase != agentapi.BackupComplete {
		t.Fatalf("backup: %+v", backup)
	}
	p.group(10, 11, 12)
	p.archive()
	p.group(20, 21, 22)
	p.archive()
	p.failover()
	p.group(30, 31, 32)
	var atFourth string
	if err := ss[1].Admin().DB.QueryRow("SELECT @@gtid_binlog_pos").Scan(&atFourth); err != nil {
		t.Fatal(err)
	}
	p.group(40, 41, 42)
	p.archive()

	ix, err := archive.LoadIndex(ctx, store, pitrPrefix, mysql.MariaDB)
	if err != nil {
		t.Fatal(err)
	}
	if err := archive.Check(ctx, store, pitrPrefix, ix); err != nil || len(ix.Entries) < 4 {
		t.Fatalf("archive: %d entries, %v", len(ix.Entries), err)
	}
	wantIDs, wantDigest := rowsDigest(t, ss[1].Admin().DB, "WHERE id < 40")

	for i, target := range []archive.Target{{Time: &p.times[3]}, {GTID: atFourth}} {
		into := ss[2+i]
		p.exec(into, mysql.MariaDB.SetReadOnly(false))
		c := agentOf(into)
		id := fmt.Sprintf("restore-%d", i)
		if _, err := c.StartRestore(ctx, agentapi.BackupRequest{ID: id, Method: executor.Logical, Object: bk.Object, Storage: bk.Storage, SHA256: backup.SHA256}); err != nil {
			t.Fatal(err)
		}
		if st := waitRestore(t, c, id); st.Phase != agentapi.BackupComplete {
			t.Fatalf("restore the backup: %+v", st)
		}
		if ids, _ := rowsDigest(t, into.Admin().DB, ""); ids != "1,2,3" {
			t.Fatalf("the backup holds %s", ids)
		}
		entries, err := archive.PlanReplay(ix, backup.GTID, target)
		if err != nil {
			t.Fatal(err)
		}
		req := agentapi.ReplayRequest{Start: backup.GTID, StopTime: target.Time, StopGTID: target.GTID}
		for _, e := range entries {
			req.Objects = append(req.Objects, pitrPrefix+"/"+e.Object)
		}
		start := time.Now()
		if _, err := c.StartRestore(ctx, agentapi.BackupRequest{ID: id + "-replay", Method: agentapi.MethodReplay, Storage: bk.Storage, Replay: &req}); err != nil {
			t.Fatal(err)
		}
		st := waitRestore(t, c, id+"-replay")
		if st.Phase != agentapi.BackupComplete {
			t.Fatalf("replay to %s: %+v", target, st)
		}
		t.Logf("replayed %d transactions (%d bytes, %d files) to %s in %v", st.Transactions, st.Size, len(entries), target, time.Since(start).Round(time.Millisecond))
		ids, digest := rowsDigest(t, into.Admin().DB, "")
		if ids != wantIDs || digest != wantDigest {
			t.Errorf("replay to %s: rows %s, want %s (digest equal: %v)", target, ids, wantIDs, digest == wantDigest)
		}
		if st.GTID != atFourth || st.Transactions != 9 || st.LastTransactionTime == nil || !st.LastTransactionTime.Equal(p.times[3]) {
			t.Errorf("replay to %s reports %+v; want GTID %s, 9 transactions (three groups after the backup), last at %v", target, st, atFourth, p.times[3])
		}
		// Every replayed event, row events applied through BINLOG statements included, carries
		// the restoring server's id in its header: a replica skips events with its own id.
		p.exec(into, "FLUSH BINARY LOGS")
		logs, _ := filepath.Glob(filepath.Join(into.Dir, "data", "binlog.[0-9]*"))
		out, err := exec.Command("mariadb-binlog", logs...).CombinedOutput()
		if err != nil {
			t.Fatalf("mariadb-binlog on the restored server's logs: %v: %s", err, out)
		}
		rows := 0
		for _, m := range serverIDs.FindAllStringSubmatch(string(out), -1) {
			if m[1] != fmt.Sprint(into.ServerID()) {
				t.Fatalf("an event of the restored server's binary log carries server id %s, not %d", m[1], into.ServerID())
			}
			if strings.Contains(m[0], "Write_rows") {
				rows++
			}
		}
		if rows < 9 {
			t.Errorf("%d row events in the restored server's binary log, want the 9 replayed ones at least", rows)
		}
		var state string
		if err := into.Admin().DB.QueryRow("SELECT @@gtid_binlog_state").Scan(&state); err != nil {
			t.Fatal(err)
		}
		for _, g := range strings.Split(state, ",") {
			if parts := strings.Split(g, "-"); len(parts) != 3 || parts[1] != fmt.Sprint(into.ServerID()) {
				t.Errorf("binlog state %s holds a server_id other than the restoring server's %d", state, into.ServerID())
			}
		}
	}
}
