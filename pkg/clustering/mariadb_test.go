package clustering_test

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/clustering"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

type cluster struct {
	t       *testing.T
	servers []*mariadb.Server
	m       *clustering.Manager
	last    clustering.Decision
}

func newCluster(t *testing.T, n int) *cluster {
	servers := mariadb.Start(t, n, mariadb.Options{})
	op := &clustering.Operator{
		Flavor: mysql.MariaDB, ReplUser: mariadb.ReplUser, ReplPassword: mariadb.ReplPassword,
		SemiSync: true, ProtectedUsers: []string{mariadb.AdminUser}, ApplyTimeout: 20 * time.Second,
	}
	for _, s := range servers {
		op.Instances = append(op.Instances, s.Admin())
		op.Endpoints = append(op.Endpoints, clustering.Endpoint{Host: "127.0.0.1", Port: s.Port})
	}
	m := clustering.NewManager(op, n)
	m.ProbeTimeout = time.Second
	return &cluster{t: t, servers: servers, m: m}
}

// converge steps until done says the decision is final, and fails after timeout.
func (c *cluster) converge(what string, timeout time.Duration, done func(clustering.Decision) bool) clustering.Decision {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		d, err := c.m.Step(context.Background())
		c.last = d
		if err == nil && d.Op.Kind == clustering.OpNone && done(d) {
			return d
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %v; last decision %s %q (%s), error %v", what, timeout, d.State, d.Op.Kind, d.Reason, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func healthy(primary int) func(clustering.Decision) bool {
	return func(d clustering.Decision) bool {
		return d.State == clustering.Healthy && (primary < 0 || d.Primary == primary)
	}
}

func (c *cluster) db(i int) *sql.DB {
	return c.servers[i].Conn(mariadb.AdminUser, mariadb.AdminPassword)
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// checksum is CHECKSUM TABLE app.t on server i, after it applied want.
func (c *cluster) checksum(i int, want mysql.GTIDSet) int64 {
	c.t.Helper()
	if want != nil {
		if err := c.servers[i].Admin().WaitForGTID(context.Background(), want, 20*time.Second); err != nil {
			c.t.Fatalf("server %d never applied %s: %v", i, want, err)
		}
	}
	var name string
	var sum sql.NullInt64
	if err := c.db(i).QueryRow("CHECKSUM TABLE app.t").Scan(&name, &sum); err != nil {
		c.t.Fatalf("checksum on %d: %v", i, err)
	}
	return sum.Int64
}

func (c *cluster) executed(i int) mysql.GTIDSet {
	c.t.Helper()
	st, err := c.servers[i].Admin().Status(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	return st.Executed
}

// assertConverged checks that every listed replica holds exactly the primary's data.
func (c *cluster) assertConverged(primary int, replicas ...int) {
	c.t.Helper()
	want := c.executed(primary)
	sum := c.checksum(primary, nil)
	for _, r := range replicas {
		if got := c.checksum(r, want); got != sum {
			c.t.Errorf("server %d checksum %d, primary %d has %d", r, got, primary, sum)
		}
	}
}

// App account used by the writer: like a real application's, it lacks READ ONLY ADMIN, so
// read_only binds it (on MariaDB, read_only does not bind accounts holding that privilege,
// which ALL PRIVILEGES includes).
const appUser, appPassword = "app", "app-Pa55"

func createApp(t *testing.T, c *cluster, primary int) {
	t.Helper()
	exec(t, c.db(primary), "CREATE DATABASE app")
	exec(t, c.db(primary), "CREATE TABLE app.t (id INT PRIMARY KEY, v TEXT)")
	exec(t, c.db(primary), "CREATE USER ?@? IDENTIFIED BY ?", appUser, "%", appPassword)
	exec(t, c.db(primary), "GRANT SELECT, INSERT ON app.* TO ?@?", appUser, "%")
}

// writer inserts rows into app.t on whichever server is the primary, records every commit the
// server acknowledged, and reports the first acknowledged write after each change of primary.
type writer struct {
	mu      sync.Mutex
	acked   []int
	firstOn map[int]time.Time
	stop    chan struct{}
	done    chan struct{}
}

func startWriter(c *cluster, primary func() int) *writer {
	w := &writer{firstOn: map[int]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	dbs := map[int]*sql.DB{}
	for i := range c.servers {
		db, err := mysql.Open(mysql.ConnConfig{Addr: c.servers[i].Addr(), User: appUser, Password: appPassword, Timeout: time.Second})
		if err != nil {
			c.t.Fatal(err)
		}
		c.t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	go func() {
		defer close(w.done)
		for id := 1_000_000; ; id++ {
			select {
			case <-w.stop:
				return
			default:
			}
			p := primary()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := dbs[p].ExecContext(ctx, "INSERT INTO app.t VALUES (?, 'w')", id)
			cancel()
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			w.mu.Lock()
			w.acked = append(w.acked, id)
			if _, seen := w.firstOn[p]; !seen {
				w.firstOn[p] = time.Now()
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *writer) Stop() []int {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked)
}

func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// lost returns the acknowledged ids missing on server i.
func (c *cluster) lost(i int, acked []int) []int {
	c.t.Helper()
	rows, err := c.db(i).Query("SELECT id FROM app.t WHERE id >= 1000000")
	if err != nil {
		c.t.Fatal(err)
	}
	defer rows.Close()
	have := map[int]bool{}
	for rows.Next() {
		var id int
		_ = rows.Scan(&id)
		have[id] = true
	}
	var missing []int
	for _, id := range acked {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	return missing
}

// The cluster's life on three real MariaDB servers: bootstrap, replication with semi-sync,
// switchover, failover after SIGKILL of the primary while a writer commits (no acknowledged
// write lost), repointing, and the old primary restarted on its data.
func TestClusterLifecycleOnMariaDB(t *testing.T) {
	c := newCluster(t, 3)

	d := c.converge("bootstrap", 30*time.Second, healthy(0))
	if !slices.Equal(d.Ready, []bool{true, true, true}) {
		t.Fatalf("ready %v", d.Ready)
	}
	createApp(t, c, 0)
	for i := range 100 {
		exec(t, c.db(0), "INSERT INTO app.t VALUES (?, 'x')", i)
	}
	c.assertConverged(0, 1, 2)
	st, _ := c.servers[0].Admin().Status(context.Background())
	if !st.SemiSyncSourceActive {
		t.Error("semi-sync is not active on the primary")
	}

	// Switchover while a writer runs: every acknowledged write survives.
	w := startWriter(c, c.m.Primary)
	for w.count() < 50 {
		time.Sleep(10 * time.Millisecond)
	}
	c.m.RequestSwitchover(1)
	c.converge("switchover to 1", 30*time.Second, healthy(1))
	for w.count() < 100 {
		time.Sleep(10 * time.Millisecond)
	}
	acked := w.Stop()
	if lost := c.lost(1, acked); len(lost) > 0 {
		t.Fatalf("switchover lost %d acknowledged writes: %v", len(lost), lost)
	}
	c.assertConverged(1, 0, 2)
	if writableCount(t, c) != 1 {
		t.Errorf("%d writable instances after switchover", writableCount(t, c))
	}

	// Failover: SIGKILL the primary while the writer commits.
	w = startWriter(c, c.m.Primary)
	for w.count() < 100 {
		time.Sleep(10 * time.Millisecond)
	}
	killed := time.Now()
	c.servers[1].Kill()
	d = c.converge("failover", 60*time.Second, func(d clustering.Decision) bool {
		return d.Primary != 1 && d.Primary >= 0 && d.Ready[d.Primary]
	})
	newPrimary := d.Primary
	for w.count() < len(acked)+150 && time.Since(killed) < 30*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	acked = w.Stop()
	w.mu.Lock()
	first := w.firstOn[newPrimary]
	w.mu.Unlock()
	if first.IsZero() {
		t.Fatalf("no write was acknowledged by the new primary %d", newPrimary)
	}
	t.Logf("failover: SIGKILL of primary 1 -> first acknowledged write on %d after %v (%d writes acknowledged in all)",
		newPrimary, first.Sub(killed).Round(time.Millisecond), len(acked))
	if lost := c.lost(newPrimary, acked); len(lost) > 0 {
		t.Fatalf("failover lost %d acknowledged writes: %v", len(lost), lost)
	}
	other := 3 - 1 - newPrimary
	c.assertConverged(newPrimary, other)

	// The old primary restarts on its data. It comes back read-only; either it rejoins as a
	// replica, or it holds a transaction it wrote but nobody acknowledged, and then it is errant:
	// never ready, never promoted.
	c.servers[1].Restart()
	d = c.converge("old primary back", 60*time.Second, func(d clustering.Decision) bool {
		return d.State == clustering.Healthy || slices.Contains(d.Errant, 1)
	})
	if d.Primary != newPrimary || writableCount(t, c) != 1 {
		t.Errorf("after restart: primary %d (want %d), %d writable", d.Primary, newPrimary, writableCount(t, c))
	}
	if slices.Contains(d.Errant, 1) {
		t.Logf("old primary has unacknowledged transactions: errant, not ready (%s)", d.Reason)
		if d.Ready[1] {
			t.Error("errant old primary is ready")
		}
	} else {
		c.assertConverged(newPrimary, 1, other)
	}
}

func writableCount(t *testing.T, c *cluster) int {
	n := 0
	for i, s := range c.servers {
		if !s.Running() {
			continue
		}
		st, err := s.Admin().Status(context.Background())
		if err != nil {
			t.Fatalf("status of %d: %v", i, err)
		}
		if !st.ReadOnly {
			n++
		}
	}
	return n
}

// An errant replica is found, kept out of service, and never promoted; a restarted replica
// rejoins and catches up.
func TestErrantReplicaAndRejoinOnMariaDB(t *testing.T) {
	c := newCluster(t, 3)
	c.converge("bootstrap", 30*time.Second, healthy(0))
	createApp(t, c, 0)

	// Replica 1 restarts cleanly and catches up on what it missed.
	c.servers[1].Stop()
	for i := range 50 {
		exec(t, c.db(0), "INSERT INTO app.t VALUES (?, 'x')", i)
	}
	c.servers[1].Restart()
	c.converge("replica 1 rejoined", 30*time.Second, healthy(0))
	c.assertConverged(0, 1, 2)

	// Replica 2 gets a write of its own (between two steps of the manager, which would
	// otherwise fence the writable replica first).
	admin2 := c.servers[2].Admin()
	if err := admin2.ExecSQL(context.Background(), mysql.MariaDB.SetReadOnly(false)); err != nil {
		t.Fatal(err)
	}
	db := c.db(2)
	db.SetMaxOpenConns(1)
	exec(t, db, "SET SESSION gtid_domain_id = 9")
	exec(t, db, "INSERT INTO app.t VALUES (9999, 'errant')")
	if err := admin2.ExecSQL(context.Background(), mysql.MariaDB.SetReadOnly(true)); err != nil {
		t.Fatal(err)
	}
	d := c.converge("errant replica detected", 30*time.Second, func(d clustering.Decision) bool {
		return slices.Contains(d.Errant, 2) && d.Primary == 0
	})
	if d.Ready[2] || d.State == clustering.Healthy {
		t.Errorf("errant replica 2: ready %v, state %s", d.Ready[2], d.State)
	}
	if writableCount(t, c) != 1 {
		t.Errorf("%d writable instances with an errant replica", writableCount(t, c))
	}

	// The primary dies: replica 1 is promoted, never the errant 2.
	c.servers[0].Kill()
	d = c.converge("failover past the errant replica", 60*time.Second, func(d clustering.Decision) bool {
		return d.Primary != 0 && d.Primary >= 0
	})
	if d.Primary != 1 {
		t.Fatalf("promoted %d, want 1 (2 is errant)", d.Primary)
	}
	if d.Ready[2] {
		t.Error("errant replica ready after failover")
	}
}
