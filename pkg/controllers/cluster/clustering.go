package cluster

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/clustering"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/agents"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/metrics"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources/certs"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
)

// runnerConfig is everything a clustering runner needs; the controller hands it a new one
// whenever it changes.
type runnerConfig struct {
	flavor       mysql.Flavor
	semiSync     bool
	endpoints    []clustering.Endpoint
	operatorPass string
	replPass     string
	primary      int
	switchoverTo int
	// switchoverWhy is why switchoverTo is set, for the primary-change metric.
	switchoverWhy string
	// reseedRequested holds the member a person asked to re-seed (mysqlop.io/reseed), if any.
	reseedRequested []int
	pods            []string
	// fence stops writes, naming who asked ("" for none); clearErrant forgets errant members.
	fence       string
	clearErrant bool
	// epoch and replaced are the status's record (used when the runner starts); reseed is
	// spec.replication.reseed.
	epoch    int64
	replaced []int
	reseed   clustering.ReseedPolicy
	// caPEM is the CA bundle members serving TLS are verified with; serverNames are the names
	// their certificates must hold, by index ("" for a member without TLS).
	caPEM       []byte
	serverNames []string
}

func (a runnerConfig) sameServers(b runnerConfig) bool {
	return a.flavor == b.flavor && a.semiSync == b.semiSync && slices.Equal(a.endpoints, b.endpoints) &&
		a.operatorPass == b.operatorPass && a.replPass == b.replPass &&
		bytes.Equal(a.caPEM, b.caPEM) && slices.Equal(a.serverNames, b.serverNames)
}

// runner drives one cluster's clustering manager on its own goroutine, so that slow or
// unreachable servers never hold a controller worker.
type runner struct {
	key      cache.ObjectName
	cluster  *v1alpha1.MySQLCluster // for events; replaced on every update
	interval time.Duration

	mu       sync.Mutex
	cfg      runnerConfig
	gen      int
	decision *clustering.Decision
	observed []clustering.Instance
	// archive is the cluster's archiving as runArchive last saw it.
	archive *archiveView
	// corrupt tells members whose server stops on corrupt data (corrupt.go).
	corrupt corruptRuns
	cancel  context.CancelFunc
}

// clusterings runs one clustering manager per cluster. runners is the production one; unit
// fixtures inject a fake to test what the controller does with a decision.
type clusterings interface {
	// ensure hands cfg to key's manager, starting it, and returns its latest decision and
	// what that was based on (nil before its first round).
	ensure(ctx context.Context, key cache.ObjectName, cluster *v1alpha1.MySQLCluster, cfg runnerConfig) (*clustering.Decision, []clustering.Instance)
	// latest returns key's latest decision: nil when none runs or it has not decided yet.
	latest(key cache.ObjectName) *clustering.Decision
	// stop stops key's manager, if any.
	stop(key cache.ObjectName)
	// archive returns key's archiving as last seen: nil when none is configured or seen.
	archive(key cache.ObjectName) *archiveView
}

// runners is the production clusterings: a runner per cluster, on its own goroutine.
type runners struct {
	c  *Controller
	mu sync.Mutex
	m  map[cache.ObjectName]*runner
}

// ensure starts the runner of key or hands it cfg.
func (rs *runners) ensure(ctx context.Context, key cache.ObjectName, cluster *v1alpha1.MySQLCluster, cfg runnerConfig) (*clustering.Decision, []clustering.Instance) {
	return rs.ensureRunner(ctx, key, cluster, cfg).latest()
}

func (rs *runners) ensureRunner(ctx context.Context, key cache.ObjectName, cluster *v1alpha1.MySQLCluster, cfg runnerConfig) *runner {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m == nil {
		rs.m = map[cache.ObjectName]*runner{}
	}
	r, ok := rs.m[key]
	if !ok {
		// The runner lives as long as the controller (ctx) unless the cluster goes first.
		rctx, cancel := context.WithCancel(ctx)
		r = &runner{key: key, cluster: cluster, interval: rs.c.cfg.ClusteringInterval, cfg: cfg, cancel: cancel}
		rs.m[key] = r
		go r.run(rctx, rs.c)
		go r.runArchive(rctx, rs.c)
		return r
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cluster = cluster
	if !r.cfg.sameServers(cfg) || r.cfg.switchoverTo != cfg.switchoverTo || !slices.Equal(r.cfg.pods, cfg.pods) {
		r.cfg = cfg
		r.gen++
	}
	// The fence and the re-seed policy reach the running manager at its next round, without
	// a new one.
	r.cfg.fence, r.cfg.clearErrant, r.cfg.reseed, r.cfg.switchoverWhy = cfg.fence, cfg.clearErrant, cfg.reseed, cfg.switchoverWhy
	r.cfg.reseedRequested = cfg.reseedRequested
	return r
}

// latest returns the latest decision of key's runner, if one runs.
func (rs *runners) latest(key cache.ObjectName) *clustering.Decision {
	rs.mu.Lock()
	r := rs.m[key]
	rs.mu.Unlock()
	if r == nil {
		return nil
	}
	d, _ := r.latest()
	return d
}

// archive returns the archiving view of key's runner, if one runs.
func (rs *runners) archive(key cache.ObjectName) *archiveView {
	rs.mu.Lock()
	r := rs.m[key]
	rs.mu.Unlock()
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.archive
}

// stop stops the runner of key, if any. It does not wait: the runner may be inside an
// operation, which its cancelled context ends soon, and a worker must not wait for that.
func (rs *runners) stop(key cache.ObjectName) {
	rs.mu.Lock()
	r := rs.m[key]
	delete(rs.m, key)
	rs.mu.Unlock()
	if r != nil {
		r.cancel()
	}
}

// latest returns the last decision and what it was based on.
func (r *runner) latest() (*clustering.Decision, []clustering.Instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.decision, r.observed
}

func (r *runner) run(ctx context.Context, c *Controller) {
	logger := klog.FromContext(ctx).WithValues("cluster", r.key)
	var m *clustering.Manager
	var dbs []*sql.DB
	closeAll := func() {
		for _, db := range dbs {
			db.Close()
		}
		dbs = nil
	}
	defer closeAll()
	gen := -1
	queued := time.Now()
	ticker := time.NewTicker(r.interval)
	defer ticker.Stop()
	for {
		r.mu.Lock()
		cfg, g, cluster := r.cfg, r.gen, r.cluster
		r.mu.Unlock()
		if g != gen {
			next, opened, err := buildManager(cfg, m, memberAgents{c: c, r: r}, c.cfg.FailoverAfter)
			if err != nil {
				// Retried next round; nothing here depends on the servers being up.
				logger.Error(err, "Set up clustering")
				if !sleep(ctx, ticker.C) {
					return
				}
				continue
			}
			closeAll()
			m, dbs, gen = next, opened, g
		}
		if cfg.switchoverTo >= 0 && cfg.switchoverTo != m.Primary() {
			m.RequestSwitchover(cfg.switchoverTo)
		}
		m.SetFence(cfg.fence)
		m.Reseed = cfg.reseed
		m.RequestReseed(cfg.reseedRequested)
		if cfg.clearErrant {
			m.ClearErrant()
		}
		before := slices.Clone(m.Errant())
		d, err := m.Step(ctx)
		if ctx.Err() != nil {
			return
		}
		name := func(i int) string {
			if i >= 0 && i < len(cfg.pods) {
				return cfg.pods[i]
			}
			return fmt.Sprint(i)
		}
		switch {
		case err != nil:
			logger.Error(err, "Clustering operation failed", "op", d.Op.Kind)
			events.ClusteringFailed.Record(c.recorder, cluster, d.Op.Kind, err)
		case d.Op.Kind == clustering.OpFailover:
			events.FailOver.Record(c.recorder, cluster, name(d.Op.From), name(d.Op.Primary))
			metrics.PrimaryChanged(cluster.Namespace, cluster.Name, "failover", "primary_unreachable")
		case d.Op.Kind == clustering.OpSwitchover:
			events.SwitchOver.Record(c.recorder, cluster, name(d.Op.From), name(d.Op.Primary))
			metrics.PrimaryChanged(cluster.Namespace, cluster.Name, "switchover", cfg.switchoverWhy)
		case d.Op.Kind == clustering.OpFenceWritable && slices.Equal(d.Op.Targets, []int{d.Op.Primary}):
			events.WritesStopped.Record(c.recorder, cluster, name(d.Op.Primary), cfg.fence)
		case d.Op.Kind == clustering.OpReseed && slices.Equal(d.Op.Targets, cfg.reseedRequested):
			events.MemberReseedRequested.Record(c.recorder, cluster, name(d.Op.Targets[0]), name(d.Primary))
			// Done: the request goes, so that a later manager does not carry it out again.
			clear := objects.Metadata{Annotations: map[string]*string{v1alpha1.AnnotationReseed: nil}}
			if _, err := c.patchCluster(ctx, cluster, clear); err != nil {
				logger.Error(err, "Clear the re-seed request")
			}
		case d.Op.Kind == clustering.OpReseed && slices.ContainsFunc(d.Op.Targets, func(t int) bool { return m.Observed()[t].Corrupt }):
			events.MemberCorruptReseeded.Record(c.recorder, cluster, podNames(d.Op.Targets, name), name(d.Primary))
		case d.Op.Kind == clustering.OpReseed:
			events.MemberReseeded.Record(c.recorder, cluster, podNames(d.Op.Targets, name), name(d.Primary))
		case d.Op.Kind == clustering.OpFenceWritable:
			events.FencedWritable.Record(c.recorder, cluster, podNames(d.Op.Targets, name), name(d.Op.Primary))
		}
		for _, e := range d.Errant {
			if !slices.Contains(before, e) {
				events.ErrantReplica.Record(c.recorder, cluster, name(e))
			}
		}
		r.mu.Lock()
		changed := r.decision == nil || summary(*r.decision) != summary(d)
		r.decision, r.observed = &d, m.Observed()
		r.mu.Unlock()
		if changed {
			// The Services follow the new roles now; the sync queued below does the rest.
			pods, err := c.clusterPods(cluster)
			if err == nil {
				err = c.labelRoles(ctx, cluster, pods, &d)
			}
			if err != nil && ctx.Err() == nil {
				logger.Error(err, "Move the role labels to the new decision")
			}
		}
		// A changed decision (a failover above all) is applied at once and jumps the queue: behind
		// a burst of new clusters it would wait for each of them. GTIDs and lag in the status are
		// refreshed every statusRefreshEvery, not every round, to keep status writes bounded
		// whatever the round interval.
		switch {
		case changed:
			queued = time.Now()
			c.loop.AddUrgent(r.key)
		case time.Since(queued) >= statusRefreshEvery:
			queued = time.Now()
			c.loop.Add(r.key)
		}
		if !sleep(ctx, ticker.C) {
			return
		}
	}
}

// sleep waits for the next tick; false when ctx ended first.
func sleep(ctx context.Context, tick <-chan time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-tick:
		return true
	}
}

// probeTimeout bounds one probe of a member. A healthy member answers in milliseconds; a
// member whose packets are dropped answers never, and failover waits for two such probes (the
// second begins when the first times out), so this bound is most of the time to fail over
// from a cut network.
const probeTimeout = time.Second

// buildManager opens one connection pool per member and returns a manager that resumes from
// prev's record (or the status's when there is no prev).
func buildManager(cfg runnerConfig, prev *clustering.Manager, agents clustering.Agents, failoverAfter time.Duration) (*clustering.Manager, []*sql.DB, error) {
	rec := clustering.Record{Primary: cfg.primary, Epoch: cfg.epoch, Replaced: cfg.replaced}
	if prev != nil {
		rec = prev.Record()
	}
	// Members beyond a scale-down are gone: nothing to remember of them.
	rec.Replaced = slices.DeleteFunc(rec.Replaced, func(i int) bool { return i >= len(cfg.endpoints) })
	rec.Errant = slices.DeleteFunc(rec.Errant, func(i int) bool { return i >= len(cfg.endpoints) })
	op := &clustering.Operator{
		Flavor: cfg.flavor, Endpoints: cfg.endpoints, ReplUser: mysql.ReplicationUser, ReplPassword: cfg.replPass,
		SemiSync: cfg.semiSync, ProtectedUsers: []string{mysql.OperatorUser}, ApplyTimeout: time.Minute, Agents: agents,
	}
	if cfg.caPEM != nil {
		op.TLSCAFile = configmap.TLSCAFile
	}
	var dbs []*sql.DB
	for i, e := range cfg.endpoints {
		conn := mysql.ConnConfig{Addr: fmt.Sprintf("%s:%d", e.Host, e.Port), User: mysql.OperatorUser, Password: cfg.operatorPass, Timeout: clustering.ConnTimeout}
		var err error
		if e.TLS {
			conn.TLS, err = certs.ClientTLS(cfg.caPEM, cfg.serverNames[i])
		}
		var db *sql.DB
		if err == nil {
			db, err = mysql.Open(conn)
		}
		if err != nil {
			for _, d := range dbs {
				d.Close()
			}
			return nil, nil, fmt.Errorf("connection to %s: %w", e.Host, err)
		}
		dbs = append(dbs, db)
		op.Instances = append(op.Instances, &mysql.Instance{DB: db, Flavor: cfg.flavor})
	}
	m := clustering.Resume(op, len(cfg.endpoints), rec)
	m.ProbeTimeout, m.FailoverAfter = probeTimeout, failoverAfter
	return m, dbs, nil
}

// memberAgents does for the clustering manager what SQL cannot, through the members' agents.
type memberAgents struct {
	c *Controller
	r *runner
}

// member returns member i's pod and a client of its agent.
func (a memberAgents) member(i int) (*corev1.Pod, agents.Client, error) {
	a.r.mu.Lock()
	cluster, pods := a.r.cluster, a.r.cfg.pods
	a.r.mu.Unlock()
	if i < 0 || i >= len(pods) {
		return nil, nil, fmt.Errorf("member %d is not in the cluster", i)
	}
	pod, err := a.c.pods.Pods(cluster.Namespace).Get(pods[i])
	if err != nil {
		return nil, nil, fmt.Errorf("pod %s: %w", pods[i], err)
	}
	client, err := a.c.dial(cluster, pod.Name)
	return pod, client, err
}

// Reseed has the member's agent mark its datadir, then deletes its pod; the StatefulSet
// recreates it and init replaces the datadir with a copy of a healthy peer before the server
// starts (pkg/agent/reseed.go).
func (a memberAgents) Reseed(ctx context.Context, i int, why string) error {
	pod, client, err := a.member(i)
	if err != nil {
		return err
	}
	if err := client.Reseed(ctx, why); err != nil {
		return fmt.Errorf("mark %s for re-seeding: %w", pod.Name, err)
	}
	// The UID precondition deletes the pod whose agent marked the datadir, not a successor.
	uid := pod.UID
	err = a.c.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s to re-seed it: %w", pod.Name, err)
	}
	klog.FromContext(ctx).Info("Re-seeding a member", "pod", klog.KObj(pod), "why", why)
	return nil
}

// KillServer has the member's agent SIGKILL its server.
func (a memberAgents) KillServer(ctx context.Context, i int) error {
	pod, client, err := a.member(i)
	if err != nil {
		return err
	}
	if err := client.KillServer(ctx); err != nil {
		return fmt.Errorf("kill the server of %s: %w", pod.Name, err)
	}
	klog.FromContext(ctx).Info("Killed the server of a writable member that is not the primary", "pod", klog.KObj(pod))
	return nil
}

func podNames(idx []int, name func(int) string) []string {
	out := make([]string, len(idx))
	for i, x := range idx {
		out[i] = name(x)
	}
	return out
}

// statusRefreshEvery is how long may pass before the status's GTIDs and lag are refreshed
// without a change of decision.
const statusRefreshEvery = 10 * time.Second

// summary is what of a decision the cluster's labels and status depend on.
func summary(d clustering.Decision) string {
	return fmt.Sprint(d.State, d.Primary, d.Ready, d.Errant, d.Reason, d.Fence, d.Epoch, d.Replaced)
}
