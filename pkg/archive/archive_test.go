package archive_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/archive"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
	"github.com/mysqlop/mysql-operator/test/s3"
)

type env struct {
	t     *testing.T
	ctx   context.Context
	store *storage.Store
}

func (e *env) exec(s *mariadb.Server, qs ...string) {
	e.t.Helper()
	for _, q := range qs {
		if _, err := s.Admin().DB.ExecContext(e.ctx, q); err != nil {
			e.t.Fatalf("%s: %v", q, err)
		}
	}
}

func (e *env) pos(s *mariadb.Server) string {
	e.t.Helper()
	var p string
	if err := s.Admin().DB.QueryRowContext(e.ctx, "SELECT @@gtid_binlog_pos").Scan(&p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) archiver(s *mariadb.Server) *archive.Archiver {
	return &archive.Archiver{In: s.Admin(), Dir: filepath.Join(s.Dir, "data"), Store: e.store, Prefix: "ns/db/binlog", Interval: time.Hour}
}

func (e *env) round(a *archive.Archiver) archive.Report {
	e.t.Helper()
	rep, err := a.Round(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return rep
}

func newEnv(t *testing.T) *env {
	gw := s3.Start(t)
	store, err := storage.New(gw.Config(""))
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: context.Background(), store: store}
}

// A primary's closed files are archived once, with their GTID range; the current file waits
// until it is closed, which the archiver does itself once its oldest transaction is older
// than the interval. A replica does not archive.
func TestArchiveClosedFilesOnMariaDB(t *testing.T) {
	e := newEnv(t)
	s := mariadb.Start(t, 1, mariadb.Options{})[0]
	e.exec(s, "SET GLOBAL read_only = OFF", "CREATE DATABASE pitr", "CREATE TABLE pitr.t (id INT PRIMARY KEY, at DATETIME(6))")
	for i := range 3 {
		e.exec(s, fmt.Sprintf("INSERT INTO pitr.t VALUES (%d, NOW(6))", i), "FLUSH BINARY LOGS")
	}
	e.exec(s, "INSERT INTO pitr.t VALUES (100, NOW(6))") // in the current file
	a := e.archiver(s)
	rep := e.round(a)
	if len(rep.Archived) != 3 || rep.Rotated || rep.LagBytes == 0 || rep.Gap {
		t.Fatalf("first round: %+v", rep)
	}
	ix, err := a.LoadIndex(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := archive.Check(e.ctx, e.store, "ns/db/binlog", ix); err != nil {
		t.Fatalf("check: %v", err)
	}
	if n := len(ix.Entries); n != 3 || ix.Entries[0].Start != "" || ix.Entries[2].End == e.pos(s) {
		t.Errorf("index %+v, server at %s", ix.Entries, e.pos(s))
	}
	if rep := e.round(a); len(rep.Archived) != 0 {
		t.Errorf("second round archived again: %v", rep.Archived)
	}

	// The interval passed: the current file is closed, then archived; the archive holds all.
	a.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if rep := e.round(a); !rep.Rotated {
		t.Errorf("no rotation past the interval: %+v", rep)
	}
	rep = e.round(a)
	if len(rep.Archived) != 1 || rep.End != e.pos(s) || rep.LagBytes != 0 {
		t.Errorf("after the rotation: %+v, server at %s", rep, e.pos(s))
	}

	e.exec(s, "SET GLOBAL read_only = ON")
	if rep := e.round(a); !rep.Idle {
		t.Errorf("a read-only server archived: %+v", rep)
	}
}

// After a failover the new primary continues the chain: files holding only transactions
// archived from the old primary are skipped, the chain has no gap, and it ends at the new
// primary's position. A deleted object makes Check name it.
func TestArchiveContinuesAfterAFailoverOnMariaDB(t *testing.T) {
	e := newEnv(t)
	ss := mariadb.Start(t, 2, mariadb.Options{})
	old, next := ss[0], ss[1]
	e.exec(old, "SET GLOBAL read_only = OFF", "CREATE DATABASE pitr", "CREATE TABLE pitr.t (id INT PRIMARY KEY)")
	host, port, _ := strings.Cut(old.Addr(), ":")
	var p int
	fmt.Sscan(port, &p)
	if err := next.Admin().Exec(e.ctx, mysql.MariaDB.ChangeSource(mysql.Source{Host: host, Port: p, User: mariadb.ReplUser, Password: mariadb.ReplPassword})); err != nil {
		t.Fatal(err)
	}
	e.exec(next, "START SLAVE")
	for i := range 4 {
		e.exec(old, fmt.Sprintf("INSERT INTO pitr.t VALUES (%d)", i), "FLUSH BINARY LOGS")
	}
	oldArchiver := e.archiver(old)
	if rep := e.round(oldArchiver); len(rep.Archived) != 4 {
		t.Fatalf("old primary archived %v", rep.Archived)
	}
	waitFor(t, func() bool { return e.pos(next) == e.pos(old) })

	// The switch: the old primary read-only, the replica promoted, and writes go on there.
	e.exec(old, "SET GLOBAL read_only = ON")
	e.exec(next, "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF")
	for i := range 3 {
		e.exec(next, fmt.Sprintf("INSERT INTO pitr.t VALUES (%d)", 100+i), "FLUSH BINARY LOGS")
	}
	if rep := e.round(oldArchiver); !rep.Idle {
		t.Errorf("the old primary archived after it was demoted: %+v", rep)
	}
	rep := e.round(e.archiver(next))
	if rep.Gap || rep.End != e.pos(next) {
		t.Fatalf("new primary: %+v, at %s", rep, e.pos(next))
	}
	for _, o := range rep.Archived {
		if !strings.HasPrefix(o, "101/") {
			t.Errorf("archived %s, not a file of the new primary (server 101)", o)
		}
	}
	if len(rep.Archived) != 3 {
		t.Errorf("new primary archived %v: want its three files with new transactions, none of the replicated ones", rep.Archived)
	}
	ix, err := oldArchiver.LoadIndex(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := archive.Check(e.ctx, e.store, "ns/db/binlog", ix); err != nil {
		t.Fatalf("check after the failover: %v", err)
	}

	victim := ix.Entries[2].Object
	if err := e.store.Delete(e.ctx, "ns/db/binlog/"+victim); err != nil {
		t.Fatal(err)
	}
	err = archive.Check(e.ctx, e.store, "ns/db/binlog", ix)
	if err == nil || !strings.Contains(err.Error(), victim) {
		t.Errorf("check with %s deleted: %v", victim, err)
	}
	if objs := objects(ix); !slices.IsSorted(objs[:4]) {
		t.Errorf("entries out of order: %v", objs)
	}
}

func objects(ix *archive.Index) []string {
	var out []string
	for _, e := range ix.Entries {
		out = append(out, e.Object)
	}
	return out
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10 s")
}

// Retention: with the oldest kept backup's position set, a round deletes the files whose
// transactions are all in it (index first, then objects), keeps the file holding it and every
// later one, and never the last; a restore from that backup still plans from the chain.
func TestRetentionFollowsTheOldestBackupOnMariaDB(t *testing.T) {
	e := newEnv(t)
	s := mariadb.Start(t, 1, mariadb.Options{})[0]
	e.exec(s, "SET GLOBAL read_only = OFF", "CREATE DATABASE pitr", "CREATE TABLE pitr.t (id INT PRIMARY KEY)")
	var positions []string
	for i := range 4 {
		e.exec(s, fmt.Sprintf("INSERT INTO pitr.t VALUES (%d)", i))
		positions = append(positions, e.pos(s))
		e.exec(s, "FLUSH BINARY LOGS")
	}
	a := e.archiver(s)
	e.round(a)
	ix, err := a.LoadIndex(e.ctx)
	if err != nil || len(ix.Entries) != 4 {
		t.Fatalf("index %+v %v", ix, err)
	}
	// A backup taken between the second and third inserts.
	a.RetainFrom = positions[1]
	rep := e.round(a)
	if !slices.Equal(rep.Pruned, objects(ix)[:2]) {
		t.Fatalf("pruned %v, want the first two files %v", rep.Pruned, objects(ix)[:2])
	}
	after, err := archive.LoadIndex(e.ctx, e.store, "ns/db/binlog", mysql.MariaDB)
	if err != nil || len(after.Entries) != 2 || archive.Check(e.ctx, e.store, "ns/db/binlog", after) != nil {
		t.Fatalf("index after retention %+v: %v", after, err)
	}
	for _, o := range rep.Pruned {
		if ok, _ := e.store.Exists(e.ctx, "ns/db/binlog/"+o); ok {
			t.Errorf("%s still stored", o)
		}
	}
	if es, err := archive.PlanReplay(after, positions[1], archive.Target{}); err != nil || len(es) != 2 {
		t.Errorf("restore from the kept backup: %v %v", es, err)
	}
	if _, err := archive.PlanReplay(after, positions[0], archive.Target{}); err == nil {
		t.Error("a backup older than the retention still plans")
	}
	// Everything inside the position: the last file stays, it carries the chain's end.
	a.RetainFrom = e.pos(s)
	if rep := e.round(a); len(rep.Pruned) != 1 || rep.End != e.pos(s) {
		t.Errorf("retention at the end: %+v", rep)
	}
}
