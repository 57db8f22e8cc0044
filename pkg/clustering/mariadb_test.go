package clustering_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/clustering"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

type cluster struct {
	t       testing.TB
	servers []*mariadb.Server
	m       *clustering.Manager
	last    clustering.Decision
}

func newCluster(t *testing.T, n int) *cluster { return newClusterWith(t, n, mariadb.Options{}) }

// newClusterWith is newCluster on servers started with o (the operator's my.cnf, say).
func newClusterWith(t testing.TB, n int, o mariadb.Options) *cluster {
	servers := mariadb.Start(t, n, o)
	op := mariadb.Operator(servers)
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

func createApp(t testing.TB, c *cluster, primary int) {
	t.Helper()
	if err := mariadb.CreateApp(context.Background(), c.db(primary)); err != nil {
		t.Fatal(err)
	}
}

func startWriter(t *testing.T, c *cluster) *mariadb.Writer {
	t.Helper()
	w, err := mariadb.StartWriter(c.servers, c.m.Primary)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (c *cluster) lost(i int, acked []int) []int {
	c.t.Helper()
	missing, err := mariadb.Lost(context.Background(), c.db(i), acked)
	if err != nil {
		c.t.Fatal(err)
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
	w := startWriter(t, c)
	for w.Acked() < 50 {
		time.Sleep(10 * time.Millisecond)
	}
	c.m.RequestSwitchover(1)
	c.converge("switchover to 1", 30*time.Second, healthy(1))
	for w.Acked() < 100 {
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
	w = startWriter(t, c)
	for w.Acked() < 100 {
		time.Sleep(10 * time.Millisecond)
	}
	killed := time.Now()
	c.servers[1].Kill()
	d = c.converge("failover", 60*time.Second, func(d clustering.Decision) bool {
		return d.Primary != 1 && d.Primary >= 0 && d.Ready[d.Primary]
	})
	newPrimary := d.Primary
	for w.Acked() < len(acked)+150 && time.Since(killed) < 30*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	acked = w.Stop()
	first := w.FirstAckOn(newPrimary)
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

	// The old primary restarts on its data and comes back read-only. Which of three outcomes
	// follows depends on where the SIGKILL landed:
	//   - nothing in flight: it rejoins as a replica;
	//   - a commit in flight that crash recovery kept, with a sequence number the new primary
	//     has not reached: the GTIDs show it, and it is errant;
	//   - the same, once the new primary's sequence numbers passed it: only the new primary's
	//     refusal (error 1236) shows it, and its replication is reported broken, or it is found
	//     diverged and re-seeding is decided.
	// In the last two it is never ready and never promoted, and it really holds a row the new
	// primary does not have.
	c.servers[1].Restart()
	brokenOn1 := "replication stopped with an error on [1]"
	// Or, as a former primary replaced by a failover, it is judged diverged and re-seeding is
	// decided (this harness has no agents to carry it out).
	reseedOf1 := "re-seeding 1 from a healthy peer"
	d = c.converge("old primary back", 60*time.Second, func(d clustering.Decision) bool {
		return d.State == clustering.Healthy || slices.Contains(d.Errant, 1) || strings.Contains(d.Reason, brokenOn1) ||
			strings.Contains(d.Reason, reseedOf1)
	})
	if d.Primary != newPrimary || writableCount(t, c) != 1 {
		t.Errorf("after restart: primary %d (want %d), %d writable", d.Primary, newPrimary, writableCount(t, c))
	}
	if d.State == clustering.Healthy {
		c.assertConverged(newPrimary, 1, other)
		return
	}
	t.Logf("old primary kept a commit nobody acknowledged: %s", d.Reason)
	if d.Ready[1] {
		t.Error("diverged old primary is ready")
	}
	on1, err := mariadb.WriterRows(context.Background(), c.db(1))
	if err != nil {
		t.Fatal(err)
	}
	if extra := c.lost(newPrimary, on1); len(extra) == 0 {
		t.Errorf("old primary reported diverged (%s) but holds no row the new primary lacks", d.Reason)
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
	if err := admin2.ExecSQL(context.Background(), mariadb.Flavor().SetReadOnly(false)); err != nil {
		t.Fatal(err)
	}
	db := c.db(2)
	db.SetMaxOpenConns(1)
	if mariadb.Flavor() == mysql.MariaDB {
		exec(t, db, "SET SESSION gtid_domain_id = 9") // on MySQL the replica's UUID marks it
	}
	exec(t, db, "INSERT INTO app.t VALUES (9999, 'errant')")
	if err := admin2.ExecSQL(context.Background(), mariadb.Flavor().SetReadOnly(true)); err != nil {
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

// A failover right after a switchover with no write in between: the candidate, a demoted
// primary, must not wait for transactions it wrote itself as the primary.
func TestFailoverRightAfterSwitchoverOnMariaDB(t *testing.T) {
	c := newCluster(t, 3)
	c.converge("bootstrap", 30*time.Second, healthy(0))
	createApp(t, c, 0)
	c.m.RequestSwitchover(1)
	c.converge("switchover to 1", 30*time.Second, healthy(1))
	c.servers[1].Kill()
	d := c.converge("failover", 30*time.Second, func(d clustering.Decision) bool {
		return d.Primary >= 0 && d.Primary != 1 && d.Ready[d.Primary]
	})
	var tables int
	if err := c.db(d.Primary).QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'app'").Scan(&tables); err != nil || tables != 1 {
		t.Errorf("new primary %d has %d app tables: %v", d.Primary, tables, err)
	}
}

// crashWithAnUnacknowledgedCommit runs three servers on myCnf, kills the primary while a
// commit waits for its semi-sync acknowledgement (written to its binlog, prepared in InnoDB:
// AFTER_SYNC), fails over, writes past the old primary's sequence number on the new primary
// (so GTID positions alone no longer tell the old primary's extra commit apart) and restarts
// the old primary. It returns the cluster and the new primary.
func crashWithAnUnacknowledgedCommit(t *testing.T, myCnf string) (*cluster, int) {
	cl := newClusterWith(t, 3, mariadb.Options{MyCnf: myCnf})
	servers := cl.servers
	cl.converge("bootstrap", 30*time.Second, healthy(0))
	if err := mariadb.CreateApp(context.Background(), cl.db(0)); err != nil {
		t.Fatal(err)
	}
	cl.checksum(1, cl.executed(0))
	cl.checksum(2, cl.executed(0))
	before := cl.executed(0).String()
	// No acknowledgement can come: the commit waits after its binlog sync.
	exec(t, cl.db(1), "STOP SLAVE IO_THREAD")
	exec(t, cl.db(2), "STOP SLAVE IO_THREAD")
	go func() { _, _ = cl.db(0).Exec("INSERT INTO app.t VALUES (424242, 'unacknowledged')") }()
	for deadline := time.Now().Add(10 * time.Second); cl.executed(0).String() == before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the insert never reached the binlog")
		}
	}
	servers[0].Kill()
	exec(t, cl.db(1), "START SLAVE IO_THREAD")
	exec(t, cl.db(2), "START SLAVE IO_THREAD")
	d := cl.converge("failover", 30*time.Second, func(d clustering.Decision) bool { return d.Primary > 0 })
	for i := 0; i < 5; i++ {
		exec(t, cl.db(d.Primary), "INSERT INTO app.t VALUES (?, 'after the failover')", 500+i)
	}
	var n int
	if err := cl.db(d.Primary).QueryRow("SELECT COUNT(*) FROM app.t WHERE id = 424242").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the new primary has the unacknowledged commit: %d rows (%v)", n, err)
	}
	servers[0].Restart()
	return cl, d.Primary
}

// unacknowledgedRowsFrom counts app.t rows with ids from 100 to 199 on server i.
func (c *cluster) unacknowledgedRowsFrom(i, from int) int {
	c.t.Helper()
	var n int
	if err := c.db(i).QueryRow("SELECT COUNT(*) FROM app.t WHERE id >= ? AND id < ?", from, from+100).Scan(&n); err != nil {
		c.t.Fatal(err)
	}
	return n
}

func (c *cluster) unacknowledgedRows(i int) int {
	c.t.Helper()
	var n int
	if err := c.db(i).QueryRow("SELECT COUNT(*) FROM app.t WHERE id = 424242").Scan(&n); err != nil {
		c.t.Fatal(err)
	}
	return n
}

// mariaDBConfig is the operator's my.cnf for the helper's flavor (MariaDB, or MySQL under
// make test-mysql).
func mariaDBConfig() string {
	return configmap.Render(testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Flavor = v1alpha1.Flavor(mariadb.Flavor())
		c.Spec.Replication.Mode = v1alpha1.ReplicationSemiSync
		// These servers have no certificate; TLS is proven by TestTLSOnMariaDB (pkg/mysql).
		c.Spec.TLS.Disabled = true
	}))
}

// With the operator's configuration (init_rpl_role = SLAVE), MariaDB's crash recovery
// truncates a killed primary's unacknowledged tail from its binlog and rolls the prepared
// commit back, so the old primary simply rejoins the new one: no re-seed, every member ready,
// the same data everywhere, and the commit no client was told succeeded is gone.
func TestCrashedPrimaryDropsItsUnacknowledgedTailAndRejoinsOnMariaDB(t *testing.T) {
	mariadb.RequireMariaDB(t)
	cnf := mariaDBConfig()
	if !strings.Contains(cnf, "init_rpl_role = SLAVE") {
		t.Fatalf("the operator's my.cnf lacks init_rpl_role:\n%s", cnf)
	}
	cl, primary := crashWithAnUnacknowledgedCommit(t, cnf)
	if n := cl.unacknowledgedRows(0); n != 0 {
		t.Fatalf("crash recovery kept the unacknowledged commit (%d rows):\n%s", n, cl.servers[0].ErrorLog())
	}
	if log := cl.servers[0].ErrorLog(); !strings.Contains(log, "truncated binlog") {
		t.Errorf("the error log does not show the binlog truncated:\n%s", log)
	}
	cl.m.Operator.Agents = failingAgents{t}
	d := cl.converge("old primary rejoined", 30*time.Second, func(d clustering.Decision) bool {
		return d.State == clustering.Healthy && slices.Equal(d.Ready, []bool{true, true, true})
	})
	if d.Primary != primary || len(d.Replaced) != 0 {
		t.Errorf("primary %d replaced %v; want %d and none", d.Primary, d.Replaced, primary)
	}
	cl.assertConverged(primary, others3(primary)...)
}

// A server that keeps the tail (before MariaDB 10.6.17 / 10.11.7, or without init_rpl_role)
// cannot follow the new primary, which refuses its position (error 1236). As a replaced former
// primary it is re-seeded by default; under ReseedNever it is reported broken, Degraded with
// the reason, and not repointed again.
func TestCrashedPrimaryThatKeptItsTailIsReseededOnMariaDB(t *testing.T) {
	mariadb.RequireMariaDB(t) // the test removes MariaDB's init_rpl_role to keep the tail
	cnf := strings.Replace(mariaDBConfig(), "loose_init_rpl_role = SLAVE\n", "", 1)
	cl, primary := crashWithAnUnacknowledgedCommit(t, cnf)
	if n := cl.unacknowledgedRows(0); n != 1 {
		t.Fatalf("without init_rpl_role crash recovery is expected to keep the commit: %d rows", n)
	}
	cl.m.Reseed = clustering.ReseedNever
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := cl.m.Step(context.Background())
		if err == nil && d.Primary == primary && d.State == clustering.Degraded && !d.Ready[0] && d.Op.Kind == clustering.OpNone &&
			strings.Contains(d.Reason, "replication stopped with an error on [0]") {
			if !slices.Equal(d.Replaced, []int{0}) {
				t.Errorf("replaced %v, want [0]", d.Replaced)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("diverged member not reported: last decision %s %q (%s), error %v", d.State, d.Op.Kind, d.Reason, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	rs := &recordingReseeder{}
	cl.m.Operator.Agents = rs
	cl.m.Reseed = clustering.ReseedFailedPrimaries
	d, err := cl.m.Step(context.Background())
	if err != nil || d.Op.Kind != clustering.OpReseed || !slices.Equal(rs.calls, []int{0}) {
		t.Fatalf("re-seed of the replaced former primary: %q %v (%s), reseeder called for %v", d.Op.Kind, err, d.Reason, rs.calls)
	}
	if rec := cl.m.Record(); slices.Contains(rec.Replaced, 0) || slices.Contains(rec.Errant, 0) {
		t.Errorf("after the re-seed the manager still marks 0: %+v", rec)
	}

	// A person's request re-seeds a healthy replica once while it stands, and again when made
	// anew; a request for the primary is not carried out.
	replica := others3(primary)[1]
	cl.m.RequestReseed([]int{primary, replica})
	if d, err = cl.m.Step(context.Background()); err != nil || d.Op.Kind != clustering.OpReseed || !slices.Equal(rs.calls, []int{0, replica}) {
		t.Fatalf("requested re-seed of %d: %q %v (%s), reseeder called for %v", replica, d.Op.Kind, err, d.Reason, rs.calls)
	}
	cl.m.RequestReseed([]int{primary, replica})
	if d, err = cl.m.Step(context.Background()); err != nil || d.Op.Kind == clustering.OpReseed {
		t.Fatalf("a standing request was carried out twice: %q %v (%s), reseeder called for %v", d.Op.Kind, err, d.Reason, rs.calls)
	}
	cl.m.RequestReseed(nil)
	cl.m.RequestReseed([]int{replica})
	if d, err = cl.m.Step(context.Background()); err != nil || d.Op.Kind != clustering.OpReseed || !slices.Equal(rs.calls, []int{0, replica, replica}) {
		t.Fatalf("a request made anew: %q %v (%s), reseeder called for %v", d.Op.Kind, err, d.Reason, rs.calls)
	}
	// Each re-seed tells the agent why, for the marker kept with the data set aside.
	if want := []string{"diverged from the primary", "re-seed requested", "re-seed requested"}; !slices.Equal(rs.whys, want) {
		t.Errorf("re-seeds' reasons %q, want %q", rs.whys, want)
	}
}

func others3(p int) []int {
	return slices.DeleteFunc([]int{0, 1, 2}, func(i int) bool { return i == p })
}

// recordingReseeder records re-seeds; corrupt are the members it reports corrupt, asked the
// members it was asked about.
type recordingReseeder struct {
	calls []int
	// whys are the calls' reasons, in order.
	whys    []string
	corrupt map[int]bool
	asked   []int
}

func (r *recordingReseeder) DataCorrupt(_ context.Context, i int) bool {
	r.asked = append(r.asked, i)
	return r.corrupt[i]
}

func (r *recordingReseeder) Reseed(_ context.Context, i int, why string) error {
	r.calls = append(r.calls, i)
	r.whys = append(r.whys, why)
	return nil
}

func (r *recordingReseeder) KillServer(context.Context, int) error { return errors.New("not here") }

type failingAgents struct{ t *testing.T }

func (f failingAgents) Reseed(_ context.Context, i int, _ string) error {
	f.t.Errorf("member %d was re-seeded", i)
	return nil
}

func (f failingAgents) KillServer(_ context.Context, i int) error {
	f.t.Errorf("member %d's server was killed", i)
	return nil
}

func (failingAgents) DataCorrupt(context.Context, int) bool { return false }

// A member whose server is down is waited for while nothing says why, and re-seeded once its
// agent reports its data corrupt; only unreachable members other than the primary are asked.
func TestCorruptMemberIsReseededOnMariaDB(t *testing.T) {
	c := newCluster(t, 3)
	c.converge("bootstrap", 30*time.Second, healthy(0))
	rs := &recordingReseeder{corrupt: map[int]bool{}}
	c.m.Operator.Agents = rs
	c.servers[2].Kill()
	d := c.converge("member 2 down", 30*time.Second, func(d clustering.Decision) bool {
		return d.State == clustering.Degraded && strings.Contains(d.Reason, "unreachable: [2]")
	})
	if d.Op.Kind != clustering.OpNone || len(rs.calls) != 0 {
		t.Fatalf("a member down for no known reason: op %q, re-seeds %v", d.Op.Kind, rs.calls)
	}
	if slices.ContainsFunc(rs.asked, func(i int) bool { return i != 2 }) {
		t.Errorf("agents asked about reachable members: %v", rs.asked)
	}
	rs.corrupt[2] = true
	d, err := c.m.Step(context.Background())
	if err != nil || d.Op.Kind != clustering.OpReseed || !slices.Equal(rs.calls, []int{2}) {
		t.Fatalf("corrupt member: op %q %v (%s), re-seeds %v", d.Op.Kind, err, d.Reason, rs.calls)
	}
	if want := []string{"the server stops at start on corrupt data"}; !slices.Equal(rs.whys, want) {
		t.Errorf("corrupt member re-seeded for %q, want %q", rs.whys, want)
	}
}

// A fence stops the application's writes on three real servers: the primary turns read-only
// and out of service, the operator's own account still writes and its writes replicate, a
// primary that dies meanwhile is not failed over, and lifting the fence brings writes back.
func TestFenceStopsWritesOnMariaDB(t *testing.T) {
	c := newCluster(t, 3)
	c.converge("bootstrap", 30*time.Second, healthy(0))
	createApp(t, c, 0)
	app := c.servers[0].Conn(mariadb.AppUser, mariadb.AppPassword)
	exec(t, app, "INSERT INTO app.t VALUES (1, 'before')")

	c.m.SetFence("MySQLRestore undo")
	d := c.converge("fenced", 30*time.Second, func(d clustering.Decision) bool { return d.State == clustering.Fenced })
	if !slices.Equal(d.Ready, []bool{false, true, true}) || d.Primary != 0 {
		t.Fatalf("fenced decision: primary %d ready %v (%s)", d.Primary, d.Ready, d.Reason)
	}
	if _, err := app.Exec("INSERT INTO app.t VALUES (2, 'while fenced')"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("application write while fenced: %v", err)
	}
	// What a restore does: write through the operator's account; it replicates.
	exec(t, c.db(0), "INSERT INTO app.t VALUES (3, 'restored')")
	c.assertConverged(0, 1, 2)

	// The primary dies while fenced: no failover, however long it stays down.
	c.servers[0].Kill()
	for range 5 {
		d, err := c.m.Step(context.Background())
		if err != nil || d.Op.Kind != clustering.OpNone || d.Primary != 0 {
			t.Fatalf("fenced cluster with its primary down: %s %q primary %d (%v)", d.State, d.Op.Kind, d.Primary, err)
		}
	}
	c.servers[0].Restart()
	c.converge("fenced again after the restart", 30*time.Second, func(d clustering.Decision) bool { return d.State == clustering.Fenced })
	if writableCount(t, c) != 0 {
		t.Fatal("a fenced cluster has a writable instance")
	}

	c.m.SetFence("")
	c.converge("writes back", 30*time.Second, healthy(0))
	exec(t, app, "INSERT INTO app.t VALUES (4, 'after')")
	c.assertConverged(0, 1, 2)
}

// waitingCommits starts n application commits on server i of c and returns once they are
// all running with at least one waiting for a semi-sync acknowledgement (the replicas'
// IO threads are stopped, as when the server is cut off from them). Each commit's outcome
// arrives on the channel.
func waitingCommits(t *testing.T, c *cluster, i, n int) <-chan error {
	t.Helper()
	for r := range c.servers {
		if r != i {
			exec(t, c.db(r), mariadb.Flavor().StopReplicaIO())
		}
	}
	app := c.servers[i].Conn(mariadb.AppUser, mariadb.AppPassword)
	app.SetMaxOpenConns(n)
	results := make(chan error, n)
	for k := range n {
		go func() {
			// No client timeout: the connection must be ended by the fence.
			_, err := app.Exec("INSERT INTO app.t VALUES (?, 'waits for an acknowledgement')", 100+k)
			results <- err
		}()
	}
	admin := c.db(i)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var running, acks int
		var states string
		if err := admin.QueryRow(`SELECT COUNT(*), COALESCE(SUM(STATE LIKE '%semi-sync%'), 0), COALESCE(GROUP_CONCAT(STATE), '')
			FROM information_schema.PROCESSLIST WHERE USER = ? AND INFO LIKE 'INSERT%'`, mariadb.AppUser).Scan(&running, &acks, &states); err != nil {
			t.Fatal(err)
		}
		if running == n && acks >= 1 {
			t.Logf("waiting commits: %s", states)
			return results
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d commits running, %d wait for an acknowledgement: %s", running, n, acks, states)
		}
	}
}

// A primary whose commits wait for a semi-sync acknowledgement that never comes is still
// fenced at once (for a restore or a switchover): SET GLOBAL read_only waits behind those
// commits, so the fence ends the client connections meanwhile, and the primary ends
// read-only within a bound, not after the commits' 49-day timeout. (A commit may still be
// answered OK as its group's leader is killed: on the primary that loses nothing, since the
// next primary waits for everything the old one executed.)
func TestFenceIsNotBlockedBySemiSyncWaitsOnMariaDB(t *testing.T) {
	c := newCluster(t, 3)
	c.converge("bootstrap", 30*time.Second, healthy(0))
	createApp(t, c, 0)
	results := waitingCommits(t, c, 0, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := c.m.Operator.Run(ctx, clustering.Operation{Kind: clustering.OpFenceWritable, Primary: 0, Targets: []int{0}}); err != nil {
		t.Fatalf("fence after %v: %v", time.Since(start), err)
	}
	took := time.Since(start)
	if took > 5*time.Second {
		t.Errorf("fencing took %v", took)
	}
	var ro bool
	if err := c.db(0).QueryRow("SELECT @@read_only").Scan(&ro); err != nil || !ro {
		t.Fatalf("read_only after the fence: %v %v", ro, err)
	}
	for range 4 {
		select {
		case <-results:
		case <-time.After(10 * time.Second):
			t.Fatal("a client still waits after the fence")
		}
	}
	t.Logf("fenced in %v with 4 commits waiting for an acknowledgement", took)
}

// killingAgents kills servers for the operator, as members' agents do.
type killingAgents struct {
	servers []*mariadb.Server
	killed  []int
}

func (a *killingAgents) Reseed(context.Context, int, string) error { return errors.New("not here") }

func (a *killingAgents) DataCorrupt(context.Context, int) bool { return false }

func (a *killingAgents) KillServer(_ context.Context, i int) error {
	a.servers[i].Kill()
	a.killed = append(a.killed, i)
	return nil
}

// A writable member that is not the primary (a former primary back from a partition), whose
// commits wait for acknowledgements no replica will send, is fenced by killing its server:
// no waiting commit is answered OK, and crash recovery with the operator's configuration
// (init_rpl_role) truncates them, so the member comes back holding none of them.
func TestStrayWritableIsFencedByKillingItsServerOnMariaDB(t *testing.T) {
	c := newClusterWith(t, 3, mariadb.Options{MyCnf: mariaDBConfig()})
	servers := c.servers
	c.converge("bootstrap", 30*time.Second, healthy(0))
	createApp(t, c, 0)
	want := c.executed(0)
	results := waitingCommits(t, c, 0, 4)
	agents := &killingAgents{servers: servers}
	c.m.Operator.Agents = agents
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// As a decision recording 1 as the primary fences 0.
	if err := c.m.Operator.Run(ctx, clustering.Operation{Kind: clustering.OpFenceWritable, Primary: 1, Targets: []int{0}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(agents.killed, []int{0}) {
		t.Fatalf("servers killed: %v, want [0]", agents.killed)
	}
	for range 4 {
		select {
		case err := <-results:
			if err == nil {
				t.Error("a commit that no replica acknowledged was answered OK")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a client still waits after the fence")
		}
	}
	servers[0].Restart()
	if n := c.unacknowledgedRowsFrom(0, 100); n != 0 {
		t.Errorf("%d unacknowledged commits survived the crash", n)
	}
	if got := c.executed(0); !want.Contains(got) {
		t.Errorf("after recovery %s holds more than the acknowledged %s", got, want)
	}
}

// A primary SIGKILLed under a writer and restarted at once, before any failover, five times,
// with the operator's configuration: its crash recovery may truncate a commit its replicas
// already received (init_rpl_role = SLAVE), so it must not simply be made writable again. The
// cluster ends Healthy every time, with every acknowledged write on every member and the same
// data everywhere.
func TestPrimaryKilledAndRestartedAtOnceOnMariaDB(t *testing.T) {
	c := newClusterWith(t, 3, mariadb.Options{MyCnf: mariaDBConfig()})
	c.converge("bootstrap", 30*time.Second, healthy(0))
	createApp(t, c, 0)
	w := startWriter(t, c)
	for round := range 5 {
		time.Sleep(300 * time.Millisecond)
		p := c.m.Primary()
		c.servers[p].Kill()
		c.servers[p].Restart()
		d := c.converge("healthy again", 60*time.Second, func(d clustering.Decision) bool {
			return d.State == clustering.Healthy && slices.Equal(d.Ready, []bool{true, true, true})
		})
		t.Logf("round %d: killed %d, primary now %d (epoch %d)", round, p, d.Primary, d.Epoch)
	}
	acked := w.Stop()
	p := c.m.Primary()
	// Waits until the replicas applied all the primary executed.
	c.assertConverged(p, others3(p)...)
	for i := range 3 {
		if missing := c.lost(i, acked); len(missing) > 0 {
			t.Errorf("server %d lacks %d of %d acknowledged writes", i, len(missing), len(acked))
		}
	}
	t.Logf("%d writes acknowledged", len(acked))
}

// The confirmation window with the operator's round interval (500 ms): a primary SIGKILLed and
// restarted in place within the window (FailoverAfter, 1 s) keeps its role though two rounds
// found it down (a count of two failed rounds would have failed it over), and one that stays
// down is failed over no sooner than the window after the kill, and within a round of it.
func TestConfirmationWindowOnMariaDB(t *testing.T) {
	const interval = 500 * time.Millisecond
	c := newClusterWith(t, 3, mariadb.Options{MyCnf: mariaDBConfig()})
	c.converge("bootstrap", 30*time.Second, healthy(0))
	createApp(t, c, 0)
	c.converge("replicas follow", 30*time.Second, healthy(0))
	epoch := c.last.Epoch

	// The runner's loop, on its own goroutine as in the operator.
	type step struct {
		at time.Time
		d  clustering.Decision
	}
	steps := make(chan step, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for ctx.Err() == nil {
			d, _ := c.m.Step(ctx)
			steps <- step{time.Now(), d}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	stopSteps := func() {
		cancel()
		<-stopped
		close(steps)
	}

	// Restarted in place: down for more than a round (two probes fail) but under the window.
	killed := time.Now()
	c.servers[0].Kill()
	time.Sleep(350 * time.Millisecond)
	c.servers[0].Restart()
	down := time.Since(killed)
	time.Sleep(3 * interval)
	if down >= 900*time.Millisecond {
		stopSteps()
		t.Skipf("the server took %v to restart: too slow to show a restart within the 1 s window", down)
	}
	for len(steps) > 0 {
		if s := <-steps; s.d.Op.Kind == clustering.OpFailover || s.d.Primary != 0 || s.d.Epoch != epoch {
			stopSteps()
			t.Fatalf("the primary was down for %v, under the window, and the manager decided %s (primary %d, epoch %d)", down, s.d.Op.Kind, s.d.Primary, s.d.Epoch)
		}
	}
	t.Logf("primary down for %v: kept its role", down.Round(time.Millisecond))

	// Killed for good: failed over once the window has passed.
	killed = time.Now()
	c.servers[0].Kill()
	var failover time.Duration
	for failover == 0 && time.Since(killed) < 10*time.Second {
		select {
		case s := <-steps:
			if s.d.Op.Kind == clustering.OpFailover {
				failover = s.at.Sub(killed)
			}
		case <-time.After(time.Second):
		}
	}
	stopSteps()
	switch {
	case failover == 0:
		t.Fatal("no failover within 10 s of the primary's death")
	case failover < clustering.DefaultFailoverAfter-50*time.Millisecond:
		t.Errorf("failed over %v after the kill, before the 1 s window", failover)
	case failover > time.Second+interval+500*time.Millisecond:
		t.Errorf("failed over %v after the kill: more than the window and a round", failover)
	}
	t.Logf("failed over %v after the kill", failover.Round(time.Millisecond))
}

// A primary whose packets are dropped: on a semi-sync replica STOP SLAVE IO_THREAD connects
// to the source to end its dump thread, and waits up to rpl_semi_sync_slave_kill_conn_timeout
// for it. MariaDB's default (5 s) outlasted the operator's read timeout, so every failover
// from a cut network failed and was retried a round later; with the operator's my.cnf (1 s)
// it succeeds at its first attempt.
func TestFailoverFromASilentPrimaryOnMariaDB(t *testing.T) {
	c := newClusterWith(t, 3, mariadb.Options{MyCnf: mariaDBConfig()})
	// The replicas reach the primary through the proxy; the operator reaches it directly,
	// with the operator's timeouts.
	proxy := mariadb.StartProxy(t, c.servers[0].Addr())
	c.m.Operator.Endpoints[0].Port = proxy.Port
	for i, s := range c.servers {
		db, err := mysql.Open(mysql.ConnConfig{Addr: s.Addr(), User: mariadb.AdminUser, Password: mariadb.AdminPassword, Timeout: clustering.ConnTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		c.m.Operator.Instances[i] = &mysql.Instance{DB: db, Flavor: mariadb.Flavor()}
	}
	c.converge("bootstrap", 30*time.Second, healthy(0))
	createApp(t, c, 0)
	w := startWriter(t, c)
	time.Sleep(500 * time.Millisecond)
	proxy.Silence()
	c.servers[0].Kill()
	start := time.Now()
	for {
		d, err := c.m.Step(context.Background())
		if d.Op.Kind == clustering.OpFailover {
			if err != nil {
				t.Fatalf("failover from a silent primary: %v", err)
			}
			t.Logf("promoted %d %v after the primary went silent", d.Primary, time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("no failover within 30 s: %s %q", d.State, d.Reason)
		}
		time.Sleep(100 * time.Millisecond)
	}
	acked := w.Stop()
	p := c.m.Primary()
	other := 3 - p // the survivors are 1 and 2
	c.converge("the other replica follows", 30*time.Second, func(d clustering.Decision) bool { return d.Ready[other] })
	c.assertConverged(p, other)
	for _, i := range []int{p, other} {
		if missing := c.lost(i, acked); len(missing) > 0 {
			t.Errorf("server %d lacks %d of %d acknowledged writes", i, len(missing), len(acked))
		}
	}
}

// A failover whose candidate received less than another replica by the time every replica
// stopped receiving gives up instead of promoting it: the primary, cut from the operator only,
// went on committing with that replica's acknowledgement after the decision was made. The
// candidate stays read-only, and the commit stays where the next decision will find it.
func TestFailoverRefusesACandidateOvertakenAfterTheDecisionOnMariaDB(t *testing.T) {
	c := newCluster(t, 3)
	c.converge("bootstrap", 30*time.Second, healthy(0))
	createApp(t, c, 0)
	c.converge("replicas follow", 30*time.Second, healthy(0))
	// Replica 1, the candidate the operator chose, stops receiving first; the primary goes on
	// and replica 2 acknowledges a commit.
	exec(t, c.db(1), mariadb.Flavor().StopReplicaIO())
	exec(t, c.db(0), "INSERT INTO app.t VALUES (424242, 'acknowledged by replica 2 only')")
	acked := c.executed(0)
	if err := c.servers[2].Admin().WaitForGTID(context.Background(), acked, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := c.m.Operator.Run(ctx, clustering.Operation{Kind: clustering.OpFailover, Primary: 1, From: 0, Targets: []int{2}})
	if err == nil || !strings.Contains(err.Error(), "replica 2 received after the decision") {
		t.Fatalf("failover to the overtaken candidate: %v", err)
	}
	var ro bool
	if err := c.db(1).QueryRow("SELECT @@read_only").Scan(&ro); err != nil || !ro {
		t.Fatalf("the overtaken candidate was made writable (read_only %v, %v)", ro, err)
	}
}
