package clustering

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

func pos(s string) mysql.GTIDSet {
	p, err := mysql.ParseMariaDBPosition(s)
	if err != nil {
		panic(err)
	}
	return p
}

func port(i int) int { return 3306 + i }

// primaryInst is a healthy writable semi-sync primary with executed position exec.
func primaryInst(i int, exec string) Instance {
	return Instance{Index: i, Host: "h", Port: port(i), Status: &mysql.Status{
		Executed: pos(exec), SemiSyncSource: true, SemiSyncSourceActive: true,
	}}
}

// replicaInst follows source with the given executed and received positions.
func replicaInst(i, source int, exec, received string) Instance {
	return Instance{Index: i, Host: "h", Port: port(i), Status: &mysql.Status{
		ReadOnly: true, Executed: pos(exec), SemiSyncReplica: true,
		Replica: &mysql.ReplicaStatus{SourceHost: "h", SourcePort: port(source), IORunning: true, SQLRunning: true, Retrieved: pos(received)},
	}}
}

func down(i int) Instance {
	return Instance{Index: i, Host: "h", Port: port(i), Err: errors.New("connection refused")}
}

func emptyInst(i int) Instance {
	return Instance{Index: i, Host: "h", Port: port(i), Status: &mysql.Status{ReadOnly: true, Executed: pos("")}}
}

// readOnly is in made read-only (a fenced primary).
func readOnly(in Instance) Instance {
	in.Status.ReadOnly = true
	return in
}

func spec(primary int) Spec {
	return Spec{Members: 3, SemiSync: true, Primary: primary, SwitchoverTo: -1}
}

// fenced is s with writes stopped for a restore.
func fenced(s Spec) Spec {
	s.Fence = "MySQLRestore undo"
	return s
}

// restored is an instance just restarted onto restored data: read-only, no replication.
func restored(i int, exec string) Instance {
	return Instance{Index: i, Host: "h", Port: port(i), Status: &mysql.Status{ReadOnly: true, Executed: pos(exec)}}
}

func TestDecide(t *testing.T) {
	lagging := replicaInst(2, 0, "0-100-5", "0-100-9")
	stoppedWithError := replicaInst(1, 0, "0-100-5", "0-100-5")
	stoppedWithError.Status.Replica.SQLRunning = false
	stoppedWithError.Status.Replica.LastSQLError = "Duplicate entry '1' for key 'PRIMARY'"
	diverged := replicaInst(1, 0, "0-100-10", "0-100-10")
	diverged.Status.Replica.IORunning = false
	diverged.Status.Replica.LastIOError = "Got fatal error 1236 from master when reading data from binary log: 'Error: connecting slave requested to start from GTID 0-100-10, which is not in the master's binlog'"
	brokenBehind := replicaInst(1, 0, "0-100-9", "0-100-9")
	brokenBehind.Status.Replica.SQLRunning = false
	brokenBehind.Status.Replica.LastSQLError = "Duplicate entry '1' for key 'PRIMARY'"
	ioStopped := replicaInst(1, 0, "0-100-9", "0-100-9")
	ioStopped.Status.Replica.IORunning = false
	wrongSource := replicaInst(2, 1, "0-100-9", "0-100-9")
	secondWritable := replicaInst(2, 0, "0-100-9", "0-100-9")
	secondWritable.Status.ReadOnly = false
	readOnlyPrimary := primaryInst(0, "0-100-9")
	readOnlyPrimary.Status.ReadOnly = true
	fellBack := primaryInst(0, "0-100-9")
	fellBack.Status.SemiSyncSourceActive = false
	switchover := spec(0)
	withTLS := func(in Instance, replicating bool) Instance {
		in.TLS = true
		if in.Status.Replica != nil {
			in.Status.Replica.TLS = replicating
		}
		return in
	}
	switchover.SwitchoverTo = 2
	primaryDown := spec(0)
	primaryDown.PrimaryDown = true
	primaryDownOn := func(p int) Spec { s := spec(p); s.PrimaryDown = true; return s }
	knownErrant := primaryDown
	knownErrant.Errant = []int{2}
	fencedPrimary := primaryInst(0, "0-100-9")
	fencedPrimary.Status.ReadOnly = true

	for _, tc := range []struct {
		name      string
		spec      Spec
		instances []Instance
		state     State
		op        OpKind
		primary   int
		targets   []int
		ready     []bool
		errant    []int
	}{
		{
			name:      "healthy",
			spec:      spec(0),
			instances: []Instance{primaryInst(0, "0-100-9"), replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Healthy, primary: 0, ready: []bool{true, true, true},
		},
		{
			name:      "replica lagging is still ready",
			spec:      spec(0),
			instances: []Instance{primaryInst(0, "0-100-9"), replicaInst(1, 0, "0-100-9", "0-100-9"), lagging},
			state:     Healthy, primary: 0, ready: []bool{true, true, true},
		},
		{
			name:      "replica stopped with an error",
			spec:      spec(0),
			instances: []Instance{primaryInst(0, "0-100-9"), stoppedWithError, replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Degraded, primary: 0, ready: []bool{true, false, true},
		},
		{
			// A crashed primary that kept an unacknowledged commit: repointing cannot help.
			name:      "replica the source refuses (1236) is broken, not reconfigured",
			spec:      spec(0),
			instances: []Instance{primaryInst(0, "0-101-12"), diverged, replicaInst(2, 0, "0-101-12", "0-101-12")},
			state:     Degraded, primary: 0, ready: []bool{true, false, true},
		},
		{
			name:      "replica IO thread stopped without error is restarted",
			spec:      spec(0),
			instances: []Instance{primaryInst(0, "0-100-9"), ioStopped, replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Degraded, op: OpConfigureReplicas, primary: 0, targets: []int{1}, ready: []bool{true, false, true},
		},
		{
			name:      "replica of the wrong source is repointed",
			spec:      spec(0),
			instances: []Instance{primaryInst(0, "0-100-9"), replicaInst(1, 0, "0-100-9", "0-100-9"), wrongSource},
			state:     Degraded, op: OpConfigureReplicas, primary: 0, targets: []int{2}, ready: []bool{true, true, false},
		},
		{
			name: "a replica restarted with TLS is repointed to replicate over TLS; one without TLS follows as it is",
			spec: spec(0),
			instances: []Instance{withTLS(primaryInst(0, "0-100-9"), false), withTLS(replicaInst(1, 0, "0-100-9", "0-100-9"), false),
				replicaInst(2, 0, "0-100-9", "0-100-9")},
			state: Degraded, op: OpConfigureReplicas, primary: 0, targets: []int{1}, ready: []bool{true, false, true},
		},
		{
			name: "replicas over TLS from a TLS primary follow",
			spec: spec(0),
			instances: []Instance{withTLS(primaryInst(0, "0-100-9"), false), withTLS(replicaInst(1, 0, "0-100-9", "0-100-9"), true),
				withTLS(replicaInst(2, 0, "0-100-9", "0-100-9"), true)},
			state: Healthy, ready: []bool{true, true, true},
		},
		{
			name: "a replica still replicating over TLS from a primary without it is repointed",
			spec: spec(0),
			instances: []Instance{primaryInst(0, "0-100-9"), withTLS(replicaInst(1, 0, "0-100-9", "0-100-9"), true),
				replicaInst(2, 0, "0-100-9", "0-100-9")},
			state: Degraded, op: OpConfigureReplicas, primary: 0, targets: []int{1}, ready: []bool{true, false, true},
		},
		{
			name:      "errant replica is never ready",
			spec:      spec(0),
			instances: []Instance{primaryInst(0, "0-100-9"), replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9,7-102-1", "0-100-9")},
			state:     Degraded, primary: 0, ready: []bool{true, true, false}, errant: []int{2},
		},
		{
			// Healed after a failover, fenced, not yet rejoined: its tail (0-100-12) was never
			// acknowledged, and it must not take the role back from the members that follow 1.
			name:      "new primary down: a fenced former primary is never promoted, its tail not needed",
			spec:      primaryDownOn(1),
			instances: []Instance{restored(0, "0-100-12"), down(1), replicaInst(2, 1, "0-101-14", "0-101-14")},
			state:     FailingOver, op: OpFailover, primary: 2, targets: []int{0, 1}, ready: []bool{false, false, false},
		},
		{
			name:      "new primary down: the only other member is a fenced former primary",
			spec:      primaryDownOn(1),
			instances: []Instance{restored(0, "0-100-20"), down(1), down(2)},
			state:     Lost, primary: 1, ready: []bool{false, false, false},
		},
		{
			name:      "primary down: a broken replica is never promoted",
			spec:      primaryDown,
			instances: []Instance{down(0), brokenBehind, replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     FailingOver, op: OpFailover, primary: 2, targets: []int{0, 1}, ready: []bool{false, false, false},
		},
		{
			// The operator promoted 2 and stopped before recording it.
			name:      "primary down: a writable member promoted by an unrecorded failover takes the role",
			spec:      primaryDown,
			instances: []Instance{down(0), replicaInst(1, 2, "0-102-11", "0-102-11"), primaryInst(2, "0-102-11")},
			state:     FailingOver, op: OpFailover, primary: 2, targets: []int{0, 1}, ready: []bool{false, false, false},
		},
		{
			name:      "primary unreachable, not yet confirmed",
			spec:      spec(0),
			instances: []Instance{down(0), replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Degraded, primary: 0, ready: []bool{false, false, false},
		},
		{
			name:      "primary down: the replica that received most is promoted",
			spec:      primaryDown,
			instances: []Instance{down(0), replicaInst(1, 0, "0-100-7", "0-100-8"), replicaInst(2, 0, "0-100-5", "0-100-9")},
			state:     FailingOver, op: OpFailover, primary: 2, targets: []int{0, 1}, ready: []bool{false, false, false},
		},
		{
			name:      "primary down: an errant replica is never promoted",
			spec:      knownErrant,
			instances: []Instance{down(0), replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9,7-102-5", "0-100-9")},
			state:     FailingOver, op: OpFailover, primary: 1, targets: []int{0, 2}, ready: []bool{false, false, false}, errant: []int{2},
		},
		{
			name:      "primary down: acknowledged writes only on an errant replica",
			spec:      knownErrant,
			instances: []Instance{down(0), replicaInst(1, 0, "0-100-7", "0-100-7"), replicaInst(2, 0, "0-100-9,7-102-5", "0-100-9")},
			state:     Lost, primary: 0, ready: []bool{false, false, false}, errant: []int{2},
		},
		{
			name:      "primary down: diverging replicas are not promoted",
			spec:      primaryDown,
			instances: []Instance{down(0), replicaInst(1, 0, "0-100-7,1-101-3", "0-100-7"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Lost, primary: 0, ready: []bool{false, false, false},
		},
		{
			name:      "primary down and no replica",
			spec:      primaryDown,
			instances: []Instance{down(0), down(1), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     FailingOver, op: OpFailover, primary: 2, targets: []int{0, 1}, ready: []bool{false, false, false},
		},
		{
			name:      "two writable instances: the other is fenced",
			spec:      spec(0),
			instances: []Instance{primaryInst(0, "0-100-9"), replicaInst(1, 0, "0-100-9", "0-100-9"), secondWritable},
			state:     Degraded, op: OpFenceWritable, primary: 0, targets: []int{2}, ready: []bool{false, false, false},
		},
		{
			name:      "nothing reachable",
			spec:      spec(0),
			instances: []Instance{down(0), down(1), down(2)},
			state:     Lost, primary: 0, ready: []bool{false, false, false},
		},
		{
			name:      "new cluster: bootstrap instance 0",
			spec:      spec(-1),
			instances: []Instance{emptyInst(0), emptyInst(1), emptyInst(2)},
			state:     Bootstrapping, op: OpBootstrapPrimary, primary: 0, ready: []bool{false, false, false},
		},
		{
			name:      "new cluster waits for every member",
			spec:      spec(-1),
			instances: []Instance{emptyInst(0), down(1), emptyInst(2)},
			state:     Bootstrapping, primary: -1, ready: []bool{false, false, false},
		},
		{
			name:      "new empty member is configured as a replica",
			spec:      spec(0),
			instances: []Instance{primaryInst(0, "0-100-9"), replicaInst(1, 0, "0-100-9", "0-100-9"), emptyInst(2)},
			state:     Degraded, op: OpConfigureReplicas, primary: 0, targets: []int{2}, ready: []bool{true, true, false},
		},
		{
			name:      "restarted primary comes back read-only and is made writable",
			spec:      spec(0),
			instances: []Instance{readOnlyPrimary, replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Degraded, op: OpConfigurePrimary, primary: 0, ready: []bool{false, false, false},
		},
		{
			name:      "semi-sync fell back to async: reported, never ignored",
			spec:      spec(0),
			instances: []Instance{fellBack, replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Degraded, primary: 0, ready: []bool{true, true, true},
		},
		{
			name:      "switchover to a healthy replica",
			spec:      switchover,
			instances: []Instance{primaryInst(0, "0-100-9"), replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Degraded, op: OpSwitchover, primary: 2, targets: []int{0, 1}, ready: []bool{true, true, true},
		},
		{
			name:      "fenced: the writable primary is made read-only",
			spec:      fenced(spec(0)),
			instances: []Instance{primaryInst(0, "0-100-9"), replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Degraded, op: OpFenceWritable, primary: 0, targets: []int{0}, ready: []bool{false, false, false},
		},
		{
			name:      "fenced: read-only primary and following replicas",
			spec:      fenced(spec(0)),
			instances: []Instance{fencedPrimary, replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Fenced, primary: 0, ready: []bool{false, true, true},
		},
		{
			name:      "fenced: a primary that is down never fails over",
			spec:      fenced(primaryDown),
			instances: []Instance{down(0), replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Degraded, primary: 0, ready: []bool{false, false, false},
		},
		{
			// Read-only, it takes no commit: its replicas are set up first, then semi-sync.
			name:      "fenced: a restarted primary stays read-only while its replicas are set up",
			spec:      fenced(spec(0)),
			instances: []Instance{restored(0, "0-100-9"), restored(1, "0-100-9"), restored(2, "0-100-9")},
			state:     Degraded, op: OpConfigureReplicas, primary: 0, targets: []int{1, 2}, ready: []bool{false, false, false},
		},
		{
			name:      "fenced: once a replica follows, the read-only primary's semi-sync is turned on",
			spec:      fenced(spec(0)),
			instances: []Instance{restored(0, "0-100-9"), replicaInst(1, 0, "0-100-9", "0-100-9"), restored(2, "0-100-9")},
			state:     Degraded, op: OpConfigurePrimary, primary: 0, ready: []bool{false, true, false},
		},
		{
			name:      "fenced: restarted replicas are configured to follow",
			spec:      fenced(spec(0)),
			instances: []Instance{fencedPrimary, restored(1, "0-100-9"), restored(2, "0-100-9")},
			state:     Degraded, op: OpConfigureReplicas, primary: 0, targets: []int{1, 2}, ready: []bool{false, false, false},
		},
		{
			name:      "fenced: members re-filled on purpose are not taken for errant",
			spec:      fenced(spec(0)),
			instances: []Instance{fencedPrimary, replicaInst(1, 0, "0-100-12", "0-100-12"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Fenced, primary: 0, ready: []bool{false, true, true},
		},
		{
			name:      "fenced: a requested switchover waits",
			spec:      fenced(switchover),
			instances: []Instance{fencedPrimary, replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			state:     Fenced, primary: 0, ready: []bool{false, true, true},
		},
		{
			name:      "fenced: a new cluster bootstraps read-only",
			spec:      fenced(spec(-1)),
			instances: []Instance{emptyInst(0), emptyInst(1), emptyInst(2)},
			state:     Bootstrapping, op: OpBootstrapPrimary, primary: 0, ready: []bool{false, false, false},
		},
		{
			// A physical restore restarts the primary first: a replica still on the old data
			// asks it for transactions it no longer has and is refused; it is not errant.
			name: "fenced: a replica still on the old data is refused by the restored primary",
			spec: fenced(spec(0)),
			instances: []Instance{fencedPrimary, func() Instance {
				r := replicaInst(1, 0, "0-100-14", "0-100-14")
				r.Status.Replica.IORunning = false
				r.Status.Replica.LastIOError = "Got fatal error 1236 from master when reading data from binary log"
				return r
			}(), restored(2, "0-100-9")},
			state: Degraded, op: OpConfigureReplicas, primary: 0, targets: []int{2}, ready: []bool{false, false, false},
		},
		{
			name:      "lost status: the one writable instance is the primary",
			spec:      spec(-1),
			instances: []Instance{replicaInst(0, 1, "0-100-9", "0-100-9"), primaryInst(1, "0-100-9"), replicaInst(2, 1, "0-100-9", "0-100-9")},
			state:     Healthy, primary: 1, ready: []bool{true, true, true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.spec, tc.instances)
			if d.State != tc.state || d.Op.Kind != tc.op || d.Primary != tc.primary {
				t.Errorf("state %s op %q primary %d (%s); want %s %q %d", d.State, d.Op.Kind, d.Primary, d.Reason, tc.state, tc.op, tc.primary)
			}
			if tc.targets != nil && !slices.Equal(d.Op.Targets, tc.targets) {
				t.Errorf("targets %v, want %v", d.Op.Targets, tc.targets)
			}
			if fmt.Sprint(d.Ready) != fmt.Sprint(tc.ready) {
				t.Errorf("ready %v, want %v", d.Ready, tc.ready)
			}
			if fmt.Sprint(d.Errant) != fmt.Sprint(tc.errant) && !(len(d.Errant) == 0 && len(tc.errant) == 0) {
				t.Errorf("errant %v, want %v", d.Errant, tc.errant)
			}
			checkInvariants(t, tc.spec, tc.instances, d)
		})
	}
}

// checkInvariants holds for every decision.
func checkInvariants(t *testing.T, spec Spec, instances []Instance, d Decision) {
	t.Helper()
	for _, e := range d.Errant {
		if d.Ready[e] {
			t.Errorf("errant instance %d is ready", e)
		}
		if (d.Op.Kind == OpFailover || d.Op.Kind == OpSwitchover || d.Op.Kind == OpBootstrapPrimary) && d.Op.Primary == e {
			t.Errorf("errant instance %d is promoted", e)
		}
	}
	writables := 0
	for i, in := range instances {
		if writable(in) {
			writables++
		}
		if d.Ready[i] && !reachable(in) {
			t.Errorf("unreachable instance %d is ready", i)
		}
	}
	if writables > 1 && d.Op.Kind != OpFenceWritable && d.State != Lost {
		t.Errorf("%d writable instances and no fencing", writables)
	}
	if d.Fence != spec.Fence {
		t.Errorf("decision made under fence %q records %q", spec.Fence, d.Fence)
	}
	if spec.Fence != "" {
		// Writes stay stopped: no promotion, no writable primary, the primary out of service.
		switch d.Op.Kind {
		case OpFailover, OpSwitchover:
			t.Errorf("fenced cluster runs %s", d.Op.Kind)
		case OpBootstrapPrimary, OpConfigurePrimary:
			if !d.Op.ReadOnly {
				t.Errorf("fenced cluster makes %d writable", d.Op.Primary)
			}
		}
		if d.Primary >= 0 && d.Ready[d.Primary] {
			t.Errorf("fenced primary %d is ready", d.Primary)
		}
		if len(d.Errant) > len(spec.Errant) {
			t.Errorf("fenced cluster recorded new errant instances %v", d.Errant)
		}
	}
	if d.Op.Kind == OpFailover {
		// No acknowledged write is lost: the candidate holds everything any reachable replica,
		// errant or not, received from the old primary.
		c := instances[d.Op.Primary].Status
		got := c.Executed
		if c.Replica != nil {
			got = got.Union(c.Replica.Retrieved)
		}
		for _, in := range instances {
			if reachable(in) && in.Status.Replica != nil && !got.Contains(in.Status.Replica.Retrieved) {
				t.Errorf("candidate %d lacks what %d received", d.Op.Primary, in.Index)
			}
		}
	}
}

func TestDecideIsPure(t *testing.T) {
	instances := []Instance{primaryInst(0, "0-100-9"), replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9,7-1-1", "0-100-9")}
	s := spec(0)
	first := Decide(s, instances)
	for range 10 {
		if got := Decide(s, instances); fmt.Sprint(got) != fmt.Sprint(first) {
			t.Fatalf("Decide changed its answer: %v vs %v", got, first)
		}
	}
	if len(s.Errant) != 0 {
		t.Error("Decide modified its spec")
	}
}

// Former primaries, epochs, re-seeding and when semi-sync is turned on.
func TestDecideRejoinAndReseed(t *testing.T) {
	with := func(s Spec, f func(*Spec)) Spec { f(&s); return s }
	brokenOn := func(i, source int, exec string) Instance {
		in := replicaInst(i, source, exec, exec)
		in.Status.Replica.IORunning = false
		in.Status.Replica.LastIOError = "Got fatal error 1236 from master when reading data from binary log"
		return in
	}
	asyncPrimary := primaryInst(0, "0-100-9")
	asyncPrimary.Status.SemiSyncSource, asyncPrimary.Status.SemiSyncSourceActive = false, false
	replaced0 := with(spec(1), func(s *Spec) { s.Replaced, s.Epoch = []int{0}, 3 })
	healthyOn1 := []Instance{brokenOn(0, 1, "0-100-12"), primaryInst(1, "0-101-14"), replicaInst(2, 1, "0-101-14", "0-101-14")}
	errantReplica := replicaInst(2, 1, "0-101-14,5-102-1", "0-101-14")
	corrupt := func(i int) Instance { in := down(i); in.Corrupt = true; return in }
	corruptReplaced := []Instance{corrupt(0), primaryInst(1, "0-101-14"), replicaInst(2, 1, "0-101-14", "0-101-14")}

	for _, tc := range []struct {
		name      string
		spec      Spec
		instances []Instance
		op        OpKind
		targets   []int
		epoch     int64
		replaced  []int
		ready     []bool
	}{
		{
			name:      "a failover starts an epoch and records the old primary as replaced",
			spec:      with(spec(0), func(s *Spec) { s.PrimaryDown, s.Epoch = true, 2 }),
			instances: []Instance{down(0), replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			op:        OpFailover, targets: []int{0, 2}, epoch: 3, replaced: []int{0}, ready: []bool{false, false, false},
		},
		{
			name:      "a switchover starts an epoch; the old primary is not replaced (it has no tail)",
			spec:      with(spec(0), func(s *Spec) { s.SwitchoverTo, s.Epoch = 2, 2 }),
			instances: []Instance{primaryInst(0, "0-100-9"), replicaInst(1, 0, "0-100-9", "0-100-9"), replicaInst(2, 0, "0-100-9", "0-100-9")},
			op:        OpSwitchover, targets: []int{0, 1}, epoch: 3, ready: []bool{true, true, true},
		},
		{
			name:      "a replaced former primary that diverged is re-seeded",
			spec:      replaced0,
			instances: healthyOn1,
			op:        OpReseed, targets: []int{0}, epoch: 3, replaced: []int{0}, ready: []bool{false, true, true},
		},
		{
			name:      "not re-seeded under ReseedNever: reported",
			spec:      with(replaced0, func(s *Spec) { s.Reseed = ReseedNever }),
			instances: healthyOn1,
			epoch:     3, replaced: []int{0}, ready: []bool{false, true, true},
		},
		{
			name:      "not re-seeded while another member is unreachable",
			spec:      replaced0,
			instances: []Instance{brokenOn(0, 1, "0-100-12"), primaryInst(1, "0-101-14"), down(2)},
			epoch:     3, replaced: []int{0}, ready: []bool{false, true, false},
		},
		{
			name:      "a replaced former primary that follows again has rejoined",
			spec:      replaced0,
			instances: []Instance{replicaInst(0, 1, "0-101-14", "0-101-14"), primaryInst(1, "0-101-14"), replicaInst(2, 1, "0-101-14", "0-101-14")},
			epoch:     3, ready: []bool{true, true, true},
		},
		{
			name:      "an errant replica that was never primary is reported, not re-seeded",
			spec:      spec(1),
			instances: []Instance{replicaInst(0, 1, "0-101-14", "0-101-14"), primaryInst(1, "0-101-14"), errantReplica},
			ready:     []bool{true, true, false},
		},
		{
			name:      "with ReseedDiverged an errant replica is re-seeded too",
			spec:      with(spec(1), func(s *Spec) { s.Reseed = ReseedDiverged }),
			instances: []Instance{replicaInst(0, 1, "0-101-14", "0-101-14"), primaryInst(1, "0-101-14"), errantReplica},
			op:        OpReseed, targets: []int{2}, ready: []bool{true, true, false},
		},
		{
			name:      "a requested re-seed replaces a healthy replica's data",
			spec:      with(spec(1), func(s *Spec) { s.ReseedRequested = []int{2} }),
			instances: []Instance{replicaInst(0, 1, "0-101-14", "0-101-14"), primaryInst(1, "0-101-14"), replicaInst(2, 1, "0-101-14", "0-101-14")},
			op:        OpReseed, targets: []int{2}, ready: []bool{true, true, true},
		},
		{
			name:      "a requested re-seed goes first even under ReseedNever, and before a diverged member",
			spec:      with(spec(1), func(s *Spec) { s.ReseedRequested, s.Reseed = []int{0}, ReseedNever }),
			instances: []Instance{replicaInst(0, 1, "0-101-14", "0-101-14"), primaryInst(1, "0-101-14"), errantReplica},
			op:        OpReseed, targets: []int{0}, ready: []bool{true, true, false},
		},
		{
			name:      "a requested re-seed of the primary, or of no member, is not carried out",
			spec:      with(spec(1), func(s *Spec) { s.ReseedRequested = []int{1, 7} }),
			instances: []Instance{replicaInst(0, 1, "0-101-14", "0-101-14"), primaryInst(1, "0-101-14"), replicaInst(2, 1, "0-101-14", "0-101-14")},
			ready:     []bool{true, true, true},
		},
		{
			name:      "a requested re-seed waits while another member is unreachable",
			spec:      with(spec(1), func(s *Spec) { s.ReseedRequested = []int{2} }),
			instances: []Instance{down(0), primaryInst(1, "0-101-14"), replicaInst(2, 1, "0-101-14", "0-101-14")},
			ready:     []bool{false, true, true},
		},
		{
			// The flake of stop 27: the crash-looped old primary's recovery found corrupt undo.
			name:      "a replaced former primary whose server stops on corrupt data is re-seeded",
			spec:      replaced0,
			instances: corruptReplaced,
			op:        OpReseed, targets: []int{0}, epoch: 3, replaced: []int{0}, ready: []bool{false, true, true},
		},
		{
			name:      "a replica whose server stops on corrupt data is re-seeded by default",
			spec:      spec(1),
			instances: []Instance{replicaInst(0, 1, "0-101-14", "0-101-14"), primaryInst(1, "0-101-14"), corrupt(2)},
			op:        OpReseed, targets: []int{2}, ready: []bool{true, true, false},
		},
		{
			name:      "a corrupt member is not re-seeded under ReseedNever",
			spec:      with(replaced0, func(s *Spec) { s.Reseed = ReseedNever }),
			instances: corruptReplaced,
			epoch:     3, replaced: []int{0}, ready: []bool{false, true, true},
		},
		{
			name:      "a corrupt member waits while another member is unreachable",
			spec:      spec(1),
			instances: []Instance{corrupt(0), primaryInst(1, "0-101-14"), down(2)},
			ready:     []bool{false, true, false},
		},
		{
			name:      "a corrupt member is not re-seeded while writes are stopped",
			spec:      fenced(spec(1)),
			instances: []Instance{corrupt(0), readOnly(primaryInst(1, "0-101-14")), replicaInst(2, 1, "0-101-14", "0-101-14")},
			ready:     []bool{false, false, true},
		},
		{
			// Only the primary's own unreachability decides its failover.
			name:      "a primary reported corrupt is failed over from, as any unreachable primary",
			spec:      with(spec(1), func(s *Spec) { s.PrimaryDown = true }),
			instances: []Instance{replicaInst(0, 1, "0-101-14", "0-101-14"), corrupt(1), replicaInst(2, 1, "0-101-14", "0-101-14")},
			op:        OpFailover, targets: []int{1, 2}, epoch: 1, replaced: []int{1}, ready: []bool{false, false, false},
		},
		{
			name:      "a replaced member is never promoted, even writable",
			spec:      with(replaced0, func(s *Spec) { s.PrimaryDown = true }),
			instances: []Instance{primaryInst(0, "0-100-20"), down(1), replicaInst(2, 1, "0-101-14", "0-101-14")},
			op:        OpFailover, targets: []int{0, 1}, epoch: 4, replaced: []int{0, 1}, ready: []bool{false, false, false},
		},
		{
			// Its crash recovery truncated 0-100-12, which both replicas had received.
			name:      "a restarted primary behind its replicas is failed over from, not made writable",
			spec:      spec(0),
			instances: []Instance{restored(0, "0-100-11"), replicaInst(1, 0, "0-100-12", "0-100-12"), replicaInst(2, 0, "0-100-11", "0-100-12")},
			op:        OpFailover, targets: []int{0, 2}, epoch: 1, replaced: []int{0}, ready: []bool{false, false, false},
		},
		{
			// They reconnected first and were refused: they ask for 0-100-12, which it lacks.
			name:      "a restarted primary that refuses replicas ahead of it is failed over from",
			spec:      spec(0),
			instances: []Instance{restored(0, "0-100-11"), brokenOn(1, 0, "0-100-12"), brokenOn(2, 0, "0-100-12")},
			op:        OpFailover, targets: []int{0, 2}, epoch: 1, replaced: []int{0}, ready: []bool{false, false, false},
		},
		{
			name:      "a restarted primary that holds all its replicas received is configured again",
			spec:      spec(0),
			instances: []Instance{restored(0, "0-100-12"), replicaInst(1, 0, "0-100-12", "0-100-12"), replicaInst(2, 0, "0-100-11", "0-100-12")},
			op:        OpConfigurePrimary, ready: []bool{false, false, false},
		},
		{
			// Growing from one member: commits must not block before anything can acknowledge.
			name:      "semi-sync stays off while no replica follows; the primary serves",
			spec:      spec(0),
			instances: []Instance{asyncPrimary, emptyInst(1), emptyInst(2)},
			op:        OpConfigureReplicas, targets: []int{1, 2}, ready: []bool{true, false, false},
		},
		{
			name:      "semi-sync is turned on once a replica follows; the primary keeps serving",
			spec:      spec(0),
			instances: []Instance{asyncPrimary, replicaInst(1, 0, "0-100-9", "0-100-9"), emptyInst(2)},
			op:        OpConfigurePrimary, ready: []bool{true, true, false},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.spec, tc.instances)
			if d.Op.Kind != tc.op || (tc.targets != nil && !slices.Equal(d.Op.Targets, tc.targets)) {
				t.Errorf("op %q %v (%s), want %q %v", d.Op.Kind, d.Op.Targets, d.Reason, tc.op, tc.targets)
			}
			if d.Epoch != tc.epoch || fmt.Sprint(d.Replaced) != fmt.Sprint(tc.replaced) && len(d.Replaced)+len(tc.replaced) > 0 {
				t.Errorf("epoch %d replaced %v, want %d %v", d.Epoch, d.Replaced, tc.epoch, tc.replaced)
			}
			if fmt.Sprint(d.Ready) != fmt.Sprint(tc.ready) {
				t.Errorf("ready %v, want %v", d.Ready, tc.ready)
			}
			if d.Op.Kind == OpFailover && slices.Contains(tc.spec.Replaced, d.Op.Primary) {
				t.Errorf("replaced member %d promoted", d.Op.Primary)
			}
			checkInvariants(t, tc.spec, tc.instances, d)
		})
	}
}
