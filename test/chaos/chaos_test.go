package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
	"github.com/mysqlop/mysql-operator/pkg/resources/statefulset"
	"github.com/mysqlop/mysql-operator/test/localcluster"
	"github.com/mysqlop/mysql-operator/test/localkubelet"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

const (
	ns          = "chaos"
	name        = "db"
	appPassword = "app-Chaos-Pa55"
)

// kind is a kind of fault.
type kind string

// The fault kinds, in the order each round injects them.
const (
	killOnce        kind = "SIGKILL of the primary's mysqld"
	crashLoop       kind = "primary's mysqld crash-looping"
	partition       kind = "primary's pod network cut"
	cutFromReplicas kind = "primary cut from its replicas"
	operatorCut     kind = "operator cut from the primary"
	nodeKilled      kind = "every pod of the primary's node killed"
	operatorKilled  kind = "operator killed during a failover"
	secondCrash     kind = "second primary crash during the repair"
	reseedKilled    kind = "operator killed during a re-seed"
	corruptReplica  kind = "replica's datadir corrupt"
	blip            kind = "primary's pod network cut for 0.5 s"
	cpuSaturated    kind = "every core saturated for 20 s"
)

var kinds = []kind{killOnce, crashLoop, partition, cutFromReplicas, operatorCut, nodeKilled, operatorKilled, secondCrash, reseedKilled, corruptReplica, blip, cpuSaturated}

// keepsPrimary are the kinds after which the primary must be the same: none takes the primary
// away for longer than the confirmation window (--failover-after, 1 s).
var keepsPrimary = []kind{cutFromReplicas, reseedKilled, corruptReplica, blip, cpuSaturated}

// blipFor is how long blip cuts the primary's network: half the confirmation window, so
// that two probes of the primary may fail but never for the whole window.
const blipFor = 500 * time.Millisecond

// outcome is what one fault did.
type outcome struct {
	kind kind
	// newPrimary is from the fault to another primary in status (0: none was named).
	newPrimary time.Duration
	// unavailable is the longest time without an acknowledged write, from the fault to Healthy.
	unavailable time.Duration
	// healthy is from the fault to Healthy with every member ready again.
	healthy time.Duration
	acked   int
	lost    int
}

// suite is the running cluster under its writer and monitor.
type suite struct {
	t      *testing.T
	apps   *localcluster.Pools
	admins *localcluster.Pools
	w      *localcluster.Writer
	mon    *monitor
	bound  time.Duration
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestChaos grows a cluster from one member to three under writes, then injects every fault
// kind CHAOS_ROUNDS times in sequence, each once the cluster healed from the one before.
func TestChaos(t *testing.T) {
	ctx := context.Background()
	rounds := envInt("CHAOS_ROUNDS", 1)
	s := &suite{t: t, bound: time.Duration(envInt("CHAOS_HEAL_SECONDS", 180)) * time.Second}
	// The members' pods must pass the restricted Pod Security profile.
	if err := lc.RestrictNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte(localcluster.ClusterManifestN(name, appPassword, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Kubectl(ctx, "apply", "-n", ns, "-f", path); err != nil {
		t.Fatal(err)
	}
	s.waitHealthy(1, 5*time.Minute)
	s.apps = lc.Pools(ns, "app", appPassword)
	defer s.apps.Close()
	sec, err := lc.CP.Kube.CoreV1().Secrets(ns).Get(ctx, name+"-credentials", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.admins = lc.Pools(ns, "mysqlop", string(sec.Data[resources.SecretKeyOperatorPassword]))
	defer s.admins.Close()
	eventually(t, 2*time.Minute, "app.t created", func(ctx context.Context) (bool, error) {
		db, err := s.apps.Get(statusPrimary())
		if err != nil {
			return false, nil
		}
		_, err = db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS app.t (id INT PRIMARY KEY, v TEXT)")
		return err == nil, nil
	})

	s.mon = startMonitor(s.admins)
	s.w = localcluster.StartWriter(s.apps.Get, statusPrimary)
	defer func() {
		s.w.Stop()
		for _, v := range s.mon.stop() {
			t.Errorf("invariant violated: %s", v)
		}
	}()

	// Growing from one member under writes: the new members are seeded from the primary while
	// it commits, and writes must not wait for them.
	time.Sleep(2 * time.Second)
	start := time.Now()
	patch := []byte(`{"spec":{"members":3}}`)
	if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitHealthy(3, 5*time.Minute)
	grown := time.Since(start)
	gap := s.w.MaxGap(start, time.Now())
	t.Logf("scale 1 -> 3 under writes: Healthy after %v, longest time without an acknowledged write %v", grown.Round(time.Millisecond), gap.Round(time.Millisecond))
	if gap > 10*time.Second {
		t.Errorf("writes stalled for %v while the cluster grew from one member", gap)
	}
	s.check()

	var outcomes []outcome
	for r := 1; r <= rounds; r++ {
		for _, k := range kinds {
			// CHAOS_ONLY (parts of kinds' names, comma-separated) runs those kinds, to look into them.
			if only := os.Getenv("CHAOS_ONLY"); only != "" && !slices.ContainsFunc(strings.Split(only, ","), func(part string) bool {
				return strings.Contains(string(k), part)
			}) {
				continue
			}
			o := s.inject(k)
			t.Logf("round %d: %s: new primary after %v, %v without an acknowledged write, Healthy after %v, %d acknowledged, %d lost",
				r, k, o.newPrimary.Round(time.Millisecond), o.unavailable.Round(time.Millisecond), o.healthy.Round(time.Millisecond), o.acked, o.lost)
			outcomes = append(outcomes, o)
			if t.Failed() {
				fmt.Print(report(outcomes))
				t.FailNow()
			}
		}
		// Written after every round: a long run cut short still leaves its figures.
		if f := os.Getenv("CHAOS_REPORT"); f != "" {
			_ = os.WriteFile(f, []byte(fmt.Sprintf("%d rounds\n%s", r, report(outcomes))), 0o644)
		}
	}
	fmt.Print(report(outcomes))
}

// inject runs one fault of kind k, waits until the cluster healed without help, and checks
// every acknowledged write and the checksums on every member.
func (s *suite) inject(k kind) outcome {
	t := s.t
	t.Helper()
	old := statusPrimary()
	victim := pod(t, old)
	o := outcome{kind: k}
	newPrimary := func() bool {
		p := statusPrimary()
		return p != "" && p != old
	}
	start := time.Now()
	// The first time the status names another primary, whatever the fault does meanwhile.
	promotedAt := make(chan time.Time, 1)
	quit := make(chan struct{})
	go func() {
		for {
			if newPrimary() {
				promotedAt <- time.Now()
				return
			}
			select {
			case <-quit:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	switch k {
	case killOnce:
		if pid, err := lc.PID(victim, resources.ContainerMySQL); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	case crashLoop:
		if !lc.CrashLoop(victim, resources.ContainerMySQL, 2*time.Minute, newPrimary) {
			t.Fatalf("%s: no failover from %s", k, old)
		}
	case partition:
		s.cut(k, func(cut bool) error { return lc.SetNetwork(victim, !cut) }, newPrimary)
	case cutFromReplicas:
		// The operator still reaches the primary: no failover; commits wait for the
		// acknowledgements of replicas that cannot connect until the cut heals.
		replicas := s.otherPods(old)
		s.cut(k, func(cut bool) error {
			var ips []string
			for _, r := range replicas {
				ips = append(ips, r.Status.PodIP)
				if err := lc.SetRoutes(r, []string{victim.Status.PodIP}, cut); err != nil {
					return err
				}
			}
			return lc.SetRoutes(victim, ips, cut)
		}, nil)
	case operatorCut:
		op := operatorPod(t)
		s.cut(k, func(cut bool) error {
			if err := lc.SetRoutes(op, []string{victim.Status.PodIP}, cut); err != nil {
				return err
			}
			return lc.SetRoutes(victim, []string{op.Status.PodIP}, cut)
		}, newPrimary)
	case nodeKilled:
		killNode(t, victim.Spec.NodeName)
	case operatorKilled:
		done := make(chan bool, 1)
		go func() { done <- lc.CrashLoop(victim, resources.ContainerMySQL, 2*time.Minute, newPrimary) }()
		// Before the confirmation window (1 s from the first failed probe, which comes
		// within a 500 ms round) has passed: the failover is left to the restarted operator.
		time.Sleep(800 * time.Millisecond)
		if pid, err := lc.PID(operatorPod(t), "operator"); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if !<-done {
			t.Fatalf("%s: no failover from %s", k, old)
		}
	case secondCrash:
		if !lc.CrashLoop(victim, resources.ContainerMySQL, 2*time.Minute, newPrimary) {
			t.Fatalf("%s: no failover from %s", k, old)
		}
		// The first casualty is still restarting or rejoining: crash its replacement too.
		second := statusPrimary()
		if !lc.CrashLoop(pod(t, second), resources.ContainerMySQL, 2*time.Minute, func() bool {
			p := statusPrimary()
			return p != "" && p != second
		}) {
			t.Fatalf("%s: no failover from %s", k, second)
		}
	case reseedKilled:
		victim = s.reseedKilled(start)
		defer s.setReseed("")
	case corruptReplica:
		victim = s.otherPods(old)[0]
		s.corrupt(victim)
	case blip:
		if err := lc.SetNetwork(victim, false); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		time.Sleep(blipFor)
		if err := lc.SetNetwork(victim, true); err != nil {
			t.Fatalf("%s: heal: %v", k, err)
		}
		time.Sleep(5 * time.Second)
	case cpuSaturated:
		saturate(t, 20*time.Second)
	}
	// A fault the status has not shown yet (a server that restarted within a second) is not
	// over: give it up to 5 s to show before waiting for Healthy.
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && c.Status.Phase != v1alpha1.ClusterHealthy, nil
	})
	s.waitHealthy(3, s.bound)
	o.healthy = time.Since(start)
	switch k {
	case reseedKilled:
		s.errantGone(victim.Name)
	case corruptReplica:
		if !s.eventSince(events.MemberCorruptReseeded.Reason, start, victim.Name, "corrupt data") {
			t.Errorf("%s: healthy again, but no event says %s was re-seeded for corrupt data", k, victim.Name)
		}
	}
	close(quit)
	select {
	case at := <-promotedAt:
		o.newPrimary = at.Sub(start)
	default:
	}
	o.unavailable = s.w.MaxGap(start, time.Now())
	if slices.Contains(keepsPrimary, k) {
		if p := statusPrimary(); o.newPrimary > 0 || p != old {
			t.Errorf("%s: the primary moved from %s to %s after %v: a false failover", k, old, p, o.newPrimary.Round(time.Millisecond))
		}
	}

	o.acked, o.lost = s.check()
	return o
}

// reseedKilled makes a replica diverge (a transaction of its own, written past read_only with
// the operator's account) under a policy that re-seeds diverged members, and SIGKILLs the
// operator as soon as the re-seed began: the next operator must finish the repair. It
// returns the diverged replica.
func (s *suite) reseedKilled(since time.Time) *corev1.Pod {
	t := s.t
	t.Helper()
	s.setReseed(v1alpha1.ReseedDiverged)
	victim := s.otherPods(statusPrimary())[0]
	db, err := s.admins.Get(victim.Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE DATABASE " + errantSchema); err != nil {
		t.Fatalf("%s: errant write on %s: %v", reseedKilled, victim.Name, err)
	}
	eventually(t, time.Minute, "a re-seed of "+victim.Name+" begun", func(ctx context.Context) (bool, error) {
		return s.eventSince(events.MemberReseeded.Reason, since, victim.Name), nil
	})
	if pid, err := lc.PID(operatorPod(t), "operator"); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return victim
}

// eventSince reports whether the cluster has an event of reason since the time given whose
// message holds every one of words.
func (s *suite) eventSince(reason string, since time.Time, words ...string) bool {
	list, err := lc.CP.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
	if err != nil {
		return false
	}
	for _, e := range list.Items {
		if !e.LastTimestamp.Time.Before(since.Truncate(time.Second)) && !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(e.Message, w) }) {
			return true
		}
	}
	return false
}

// corrupt damages a member's system tablespace, as a disk that returned garbage would, and
// SIGKILLs its server: crash recovery finds the tablespace corrupt and the server stops at
// every start. Its first 200 pages are overwritten, the doublewrite buffer (pages 64-191)
// with them, so that recovery cannot restore a page from a copy.
func (s *suite) corrupt(victim *corev1.Pod) {
	t := s.t
	t.Helper()
	dir, err := localkubelet.ClaimPath(context.Background(), lc.CP.Kube, ns, statefulset.VolumeData+"-"+victim.Name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, filepath.Base(configmap.DataDir), "ibdata1"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 200*16384)
	for i := range junk {
		junk[i] = 0xde
	}
	_, err = f.WriteAt(junk, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := lc.PID(victim, resources.ContainerMySQL); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// saturate keeps every core of the machine busy for d with two spinning processes per core,
// at the priority of everything else: the operator, the control plane and the servers all
// get less CPU than they want, as on a node whose CPU is saturated.
func saturate(t *testing.T, d time.Duration) {
	t.Helper()
	var spinners []*exec.Cmd
	defer func() {
		for _, c := range spinners {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	for range 2 * runtime.NumCPU() {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatalf("%s: %v", cpuSaturated, err)
		}
		spinners = append(spinners, c)
	}
	time.Sleep(d)
}

// errantGone checks that a re-seeded member lost the schema it alone had. (An errant member
// is never ready, so Healthy already means re-seeded, and check finds its position equal
// to the others'.)
func (s *suite) errantGone(member string) {
	eventually(s.t, time.Minute, "the errant schema gone from "+member, func(ctx context.Context) (bool, error) {
		db, err := s.admins.Get(member)
		if err != nil {
			return false, nil
		}
		var n int
		err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", errantSchema).Scan(&n)
		return err == nil && n == 0, nil
	})
}

// errantSchema is what reseedKilled writes on a replica alone.
const errantSchema = "chaos_errant"

// setReseed sets spec.replication.reseed ("" for the default).
func (s *suite) setReseed(p v1alpha1.ReseedPolicy) {
	s.t.Helper()
	patch := []byte(`{"spec":{"replication":{"reseed":null}}}`)
	if p != "" {
		patch = []byte(fmt.Sprintf(`{"spec":{"replication":{"reseed":%q}}}`, p))
	}
	if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		s.t.Fatalf("set reseed %q: %v", p, err)
	}
}

// cut applies a network fault, keeps it until moved reports a new primary (within a minute)
// and 2 s more, or for 10 s when moved is nil, then heals it.
func (s *suite) cut(k kind, apply func(cut bool) error, moved func() bool) {
	t := s.t
	t.Helper()
	if err := apply(true); err != nil {
		t.Fatalf("%s: %v", k, err)
	}
	defer func() {
		if err := apply(false); err != nil {
			t.Fatalf("%s: heal: %v", k, err)
		}
	}()
	if moved == nil {
		time.Sleep(10 * time.Second)
		return
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return moved(), nil
	}); err != nil {
		t.Errorf("%s: no failover within a minute", k)
		return
	}
	time.Sleep(2 * time.Second)
}

// check pauses the writer until every member applied the same transactions, then asserts
// that each holds every acknowledged write and that the table checksums are equal.
func (s *suite) check() (acked, lost int) {
	t := s.t
	t.Helper()
	err := s.w.Hold(func() error {
		ids := s.w.Acked()
		acked = len(ids)
		var pos []string
		var lastErr error
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			pos = pos[:0]
			for _, m := range members(3) {
				db, err := s.apps.Get(m)
				if err != nil {
					lastErr = err
					return false, nil
				}
				var p string
				if err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&p); err != nil {
					lastErr = fmt.Errorf("%s: %w", m, err)
					return false, nil
				}
				pos = append(pos, p)
			}
			return pos[0] == pos[1] && pos[1] == pos[2], nil
		})
		if err != nil {
			s.dump()
			return fmt.Errorf("members never reached one position: %v (last error: %v)", pos, lastErr)
		}
		sums := map[string]int64{}
		for _, m := range members(3) {
			db, err := s.apps.Get(m)
			if err != nil {
				return err
			}
			missing, err := mariadb.Lost(context.Background(), db, ids)
			if err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			if len(missing) > 0 {
				lost = max(lost, len(missing))
				t.Errorf("%s lacks %d acknowledged writes, e.g. %v", m, len(missing), missing[:min(5, len(missing))])
			}
			var table string
			var sum sql.NullInt64
			if err := db.QueryRow("CHECKSUM TABLE app.t").Scan(&table, &sum); err != nil {
				return fmt.Errorf("checksum on %s: %w", m, err)
			}
			sums[m] = sum.Int64
		}
		if sums[members(3)[0]] != sums[members(3)[1]] || sums[members(3)[1]] != sums[members(3)[2]] {
			t.Errorf("table checksums differ: %v", sums)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	return acked, lost
}

// waitHealthy waits until the cluster is Healthy with n ready members and no former primary
// left to rejoin; a person never helps.
func (s *suite) waitHealthy(n int32, timeout time.Duration) {
	s.t.Helper()
	var last v1alpha1.MySQLClusterStatus
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = c.Status
		return c.Spec.Members == n && c.Status.Phase == v1alpha1.ClusterHealthy && c.Status.ReadyMembers == n && len(c.Status.Replaced) == 0, nil
	})
	if err != nil {
		var conds []string
		for _, c := range last.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Message))
		}
		s.dump()
		s.t.Fatalf("not Healthy with %d ready members within %v, and nobody may help: phase %s, primary %s, ready %d, replaced %v, %s",
			n, timeout, last.Phase, last.Primary, last.ReadyMembers, last.Replaced, strings.Join(conds, "; "))
	}
}

// dump logs what a failure needs: the members' pods and the tails of their server logs.
func (s *suite) dump() {
	for _, m := range members(3) {
		p, err := lc.CP.Kube.CoreV1().Pods(ns).Get(context.Background(), m, metav1.GetOptions{})
		if err != nil {
			s.t.Logf("%s: %v", m, err)
			continue
		}
		var cs []string
		for _, c := range p.Status.ContainerStatuses {
			cs = append(cs, fmt.Sprintf("%s ready=%v restarts=%d", c.Name, c.Ready, c.RestartCount))
		}
		log := strings.Split(strings.TrimRight(lc.Log(p, resources.ContainerMySQL), "\n"), "\n")
		s.t.Logf("%s: phase %s ip %s node %s labels %v %v; mysqld log:\n%s", m, p.Status.Phase, p.Status.PodIP, p.Spec.NodeName,
			p.Labels[v1alpha1.LabelRole], cs, strings.Join(log[max(0, len(log)-15):], "\n"))
	}
}

func (s *suite) otherPods(primary string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, m := range members(3) {
		if m != primary {
			out = append(out, pod(s.t, m))
		}
	}
	return out
}

// killNode SIGKILLs every container process of every pod on node at once, as a node's crash.
func killNode(t *testing.T, node string) {
	t.Helper()
	pods, err := lc.CP.Kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for i := range pods.Items {
		p := &pods.Items[i]
		for _, c := range p.Spec.Containers {
			if pid, err := lc.PID(p, c.Name); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func statusPrimary() string {
	c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return c.Status.Primary
}

func members(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", name, i)
	}
	return out
}

func pod(t *testing.T, m string) *corev1.Pod {
	t.Helper()
	p, err := lc.CP.Kube.CoreV1().Pods(ns).Get(context.Background(), m, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func operatorPod(t *testing.T) *corev1.Pod {
	t.Helper()
	var out *corev1.Pod
	eventually(t, 2*time.Minute, "a running operator pod", func(ctx context.Context) (bool, error) {
		pods, err := lc.CP.Kube.CoreV1().Pods(operatorNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp == nil && p.Status.PodIP != "" && localcluster.PodReady(p) {
				out = p
				return true, nil
			}
		}
		return false, nil
	})
	return out
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("%s: not within %v: %v", what, timeout, err)
	}
}

// report returns the figures per fault kind (and all kinds together), as a table.
func report(outcomes []outcome) string {
	byKind := map[kind][]outcome{}
	for _, o := range outcomes {
		byKind[o.kind] = append(byKind[o.kind], o)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| fault | runs | new primary p50 / p99 | no acknowledged write p50 / p99 | Healthy p50 / p99 | acknowledged | lost | manual steps |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|\n")
	row := func(label string, os []outcome) {
		var np, un, he []time.Duration
		acked, lost := 0, 0
		for _, o := range os {
			if o.newPrimary > 0 {
				np = append(np, o.newPrimary)
			}
			un, he = append(un, o.unavailable), append(he, o.healthy)
			acked, lost = max(acked, o.acked), lost+o.lost
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %d | %d | 0 |\n", label, len(os), pct(np), pct(un), pct(he), acked, lost)
	}
	for _, k := range kinds {
		if len(byKind[k]) > 0 {
			row(string(k), byKind[k])
		}
	}
	row("all", outcomes)
	return b.String()
}

// pct is "p50 / p99" of ds ("-" when empty; p99 of fewer than 100 values is the maximum).
func pct(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return fmt.Sprintf("%.1f s / %.1f s", at(0.5).Seconds(), at(0.99).Seconds())
}

// sample is what the monitor last read of one member.
type sample struct {
	at                 time.Time
	writable, semiSync bool
	waits, uptimeSec   int64
	// source is the host this member's IO thread receives from while it runs ("" otherwise).
	source string
}

// monitor polls every member every 100 ms, and the cluster's status, and records every
// violation of the invariants: at most one member can acknowledge a commit (writable, and
// with semi-sync off or a replica whose IO thread runs against it); the recorded
// primary is never a replaced former primary; semi-sync is never turned off on a member with
// commits waiting for an acknowledgement.
type monitor struct {
	admins *localcluster.Pools
	quit   chan struct{}
	wg     sync.WaitGroup

	mu         sync.Mutex
	last       map[string]sample
	violations []string
}

func startMonitor(admins *localcluster.Pools) *monitor {
	m := &monitor{admins: admins, quit: make(chan struct{}), last: map[string]sample{}}
	for _, member := range members(3) {
		m.wg.Add(1)
		go m.poll(member)
	}
	m.wg.Add(1)
	go m.judge()
	return m
}

func (m *monitor) violate(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.violations) < 50 {
		m.violations = append(m.violations, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
	}
}

func (m *monitor) poll(member string) {
	defer m.wg.Done()
	for {
		select {
		case <-m.quit:
			return
		case <-time.After(100 * time.Millisecond):
		}
		s, ok := m.read(member)
		if !ok {
			continue
		}
		m.mu.Lock()
		prev, had := m.last[member]
		m.last[member] = s
		m.mu.Unlock()
		if had && prev.semiSync && prev.waits > 0 && !s.semiSync && s.uptimeSec >= prev.uptimeSec {
			m.violate("semi-sync turned off on %s while %d commits waited for an acknowledgement", member, prev.waits)
		}
	}
}

func (m *monitor) read(member string) (sample, bool) {
	db, err := m.admins.Get(member)
	if err != nil {
		return sample{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	s := sample{at: time.Now()}
	var ro bool
	if err := db.QueryRowContext(ctx, "SELECT @@read_only, @@rpl_semi_sync_master_enabled").Scan(&ro, &s.semiSync); err != nil {
		return sample{}, false
	}
	s.writable = !ro
	if err := replicaSource(ctx, db, &s); err != nil {
		return sample{}, false
	}
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Rpl_semi_sync_master_wait_sessions', 'Uptime')")
	if err != nil {
		return sample{}, false
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return sample{}, false
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "Rpl_semi_sync_master_wait_sessions":
			s.waits = n
		case "Uptime":
			s.uptimeSec = n
		}
	}
	return s, rows.Err() == nil
}

// replicaSource sets s.source from SHOW SLAVE STATUS: the source host while the IO thread runs.
func replicaSource(ctx context.Context, db *sql.DB, s *sample) error {
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = vals[i].String
		}
		if row["Slave_IO_Running"] == "Yes" {
			s.source = row["Master_Host"]
		}
	}
	return rows.Err()
}

// judge checks, every 100 ms, what needs several members or the status.
func (m *monitor) judge() {
	defer m.wg.Done()
	for {
		select {
		case <-m.quit:
			return
		case <-time.After(100 * time.Millisecond):
		}
		c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && c.Status.Primary != "" && slices.Contains(c.Status.Replaced, c.Status.Primary) {
			m.violate("status.primary %s is a replaced former primary %v", c.Status.Primary, c.Status.Replaced)
		}
		m.mu.Lock()
		var ackers []string
		for member, s := range m.last {
			// Only fresh samples: a member that stopped answering takes no client's commit
			// through this monitor's network either.
			if time.Since(s.at) >= 300*time.Millisecond || !s.writable {
				continue
			}
			fed := false
			for other, r := range m.last {
				// Sources are the members' DNS names: <pod>.<headless service>...
				fed = fed || other != member && time.Since(r.at) < 300*time.Millisecond && strings.HasPrefix(r.source, member+".")
			}
			if !s.semiSync || fed {
				ackers = append(ackers, member)
			}
		}
		m.mu.Unlock()
		if len(ackers) > 1 {
			slices.Sort(ackers)
			m.violate("%d members can acknowledge a commit: %v", len(ackers), ackers)
		}
	}
}

func (m *monitor) stop() []string {
	close(m.quit)
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.violations
}
