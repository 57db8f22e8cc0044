package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/clustering"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// AnnotationSwitchoverTo on a MySQLCluster requests a switchover to the named member pod. The
// operator removes it once that member is the primary.
const AnnotationSwitchoverTo = "mysqlop.io/switchover-to"

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
	pods         []string
	// fence stops writes, naming who asked ("" for none); clearErrant forgets errant members.
	fence       string
	clearErrant bool
}

func (a runnerConfig) sameServers(b runnerConfig) bool {
	return a.flavor == b.flavor && a.semiSync == b.semiSync && slices.Equal(a.endpoints, b.endpoints) &&
		a.operatorPass == b.operatorPass && a.replPass == b.replPass
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
	cancel   context.CancelFunc
}

// runners is the controller's set of running runners.
type runners struct {
	mu sync.Mutex
	m  map[cache.ObjectName]*runner
}

// ensure starts the runner of key or hands it cfg.
func (c *Controller) ensureRunner(ctx context.Context, key cache.ObjectName, cluster *v1alpha1.MySQLCluster, cfg runnerConfig) *runner {
	c.runners.mu.Lock()
	defer c.runners.mu.Unlock()
	if c.runners.m == nil {
		c.runners.m = map[cache.ObjectName]*runner{}
	}
	r, ok := c.runners.m[key]
	if !ok {
		// The runner lives as long as the controller (ctx) unless the cluster goes first.
		rctx, cancel := context.WithCancel(ctx)
		r = &runner{key: key, cluster: cluster, interval: c.cfg.ClusteringInterval, cfg: cfg, cancel: cancel}
		c.runners.m[key] = r
		go r.run(rctx, c)
		return r
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cluster = cluster
	if !r.cfg.sameServers(cfg) || r.cfg.switchoverTo != cfg.switchoverTo || !slices.Equal(r.cfg.pods, cfg.pods) {
		r.cfg = cfg
		r.gen++
	}
	// The fence reaches the running manager at its next round, without a new one.
	r.cfg.fence, r.cfg.clearErrant = cfg.fence, cfg.clearErrant
	return r
}

// runner returns the runner of key, or nil.
func (c *Controller) runner(key cache.ObjectName) *runner {
	c.runners.mu.Lock()
	defer c.runners.mu.Unlock()
	return c.runners.m[key]
}

// stopRunner stops the runner of key, if any. It does not wait: the runner may be inside an
// operation, which its cancelled context ends soon, and a worker must not wait for that.
func (c *Controller) stopRunner(key cache.ObjectName) {
	c.runners.mu.Lock()
	r := c.runners.m[key]
	delete(c.runners.m, key)
	c.runners.mu.Unlock()
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
	rounds := 0
	ticker := time.NewTicker(r.interval)
	defer ticker.Stop()
	for {
		r.mu.Lock()
		cfg, g, cluster := r.cfg, r.gen, r.cluster
		r.mu.Unlock()
		if g != gen {
			next, opened, err := buildManager(cfg, m)
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
			c.recorder.Eventf(cluster, corev1.EventTypeWarning, events.ClusteringFailed, "%s failed: %v", d.Op.Kind, err)
		case d.Op.Kind == clustering.OpFailover:
			c.recorder.Eventf(cluster, corev1.EventTypeWarning, events.FailOver, "Primary %s is down: promoted %s", name(d.Op.From), name(d.Op.Primary))
		case d.Op.Kind == clustering.OpSwitchover:
			c.recorder.Eventf(cluster, corev1.EventTypeNormal, events.SwitchOver, "Switched over from %s to %s", name(d.Op.From), name(d.Op.Primary))
		case d.Op.Kind == clustering.OpFenceWritable && slices.Equal(d.Op.Targets, []int{d.Op.Primary}):
			c.recorder.Eventf(cluster, corev1.EventTypeNormal, events.WritesStopped, "Made primary %s read-only: writes are stopped (%s)", name(d.Op.Primary), cfg.fence)
		case d.Op.Kind == clustering.OpFenceWritable:
			c.recorder.Eventf(cluster, corev1.EventTypeWarning, events.FencedWritable, "Made %v read-only: only the primary %s may be writable", podNames(d.Op.Targets, name), name(d.Op.Primary))
		}
		for _, e := range d.Errant {
			if !slices.Contains(before, e) {
				c.recorder.Eventf(cluster, corev1.EventTypeWarning, events.ErrantReplica, "%s has transactions the primary does not have; it is out of service until re-seeded", name(e))
			}
		}
		r.mu.Lock()
		changed := r.decision == nil || summary(*r.decision) != summary(d)
		r.decision, r.observed = &d, m.Observed()
		r.mu.Unlock()
		// A changed decision is applied at once; GTIDs and lag in the status are refreshed every
		// statusRefreshRounds rounds, not every round, to keep status writes bounded.
		if rounds++; changed || rounds >= statusRefreshRounds {
			rounds = 0
			c.queue.Add(r.key)
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

// buildManager opens one connection pool per member and returns a manager that resumes from
// prev's primary and errant replicas (or the recorded primary when there is no prev).
func buildManager(cfg runnerConfig, prev *clustering.Manager) (*clustering.Manager, []*sql.DB, error) {
	primary, errant := cfg.primary, []int(nil)
	if prev != nil {
		primary, errant = prev.Primary(), prev.Errant()
	}
	op := &clustering.Operator{
		Flavor: cfg.flavor, Endpoints: cfg.endpoints, ReplUser: mysql.ReplicationUser, ReplPassword: cfg.replPass,
		SemiSync: cfg.semiSync, ProtectedUsers: []string{mysql.OperatorUser}, ApplyTimeout: time.Minute,
	}
	var dbs []*sql.DB
	for _, e := range cfg.endpoints {
		db, err := mysql.Open(mysql.ConnConfig{Addr: fmt.Sprintf("%s:%d", e.Host, e.Port), User: mysql.OperatorUser, Password: cfg.operatorPass, Timeout: 2 * time.Second})
		if err != nil {
			for _, d := range dbs {
				d.Close()
			}
			return nil, nil, fmt.Errorf("connection to %s: %w", e.Host, err)
		}
		dbs = append(dbs, db)
		op.Instances = append(op.Instances, &mysql.Instance{DB: db, Flavor: cfg.flavor})
	}
	m := clustering.Resume(op, len(cfg.endpoints), primary, errant)
	m.ProbeTimeout = 2 * time.Second
	return m, dbs, nil
}

func podNames(idx []int, name func(int) string) []string {
	out := make([]string, len(idx))
	for i, x := range idx {
		out[i] = name(x)
	}
	return out
}

// statusRefreshRounds is how many clustering rounds may pass before the status's GTIDs and lag
// are refreshed without a change of decision.
const statusRefreshRounds = 10

// summary is what of a decision the cluster's labels and status depend on.
func summary(d clustering.Decision) string {
	return fmt.Sprint(d.State, d.Primary, d.Ready, d.Errant, d.Reason, d.Fence)
}
