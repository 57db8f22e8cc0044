package localcluster

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// writeIDs numbers the rows of every writer of this process: a second writer on the same
// table must not retry the first one's ids, each failing as a duplicate key (which once
// looked like a 20-30 s stall of the cluster in e2e).
var writeIDs atomic.Int64

// Writer commits rows (id, 'w') into app.t through whichever member primary() names, and
// records every id a server acknowledged, and when, per member. Each insert has 2 s; one in
// flight to a member that primary() no longer names is abandoned at once (checked every
// 50 ms), as a client that follows the cluster's status would, so that the time to the first
// write after a failover is the operator's and not this timeout's. Only an insert in flight for
// 50 ms or more is checked, so primary() (an API read) is not called 20 times a second while
// inserts commit in milliseconds. An abandoned insert is not acknowledged, whether or not its
// server committed it.
type Writer struct {
	mu      sync.Mutex
	acked   []int
	ackedOn map[string][]time.Time
	quit    chan struct{}
	done    chan struct{}
	// hold is read-locked around each insert; Hold write-locks it to pause the writer.
	hold sync.RWMutex
	// inflight is the insert in flight: its member, when it was sent and how to abandon it.
	inflight struct {
		sync.Mutex
		member string
		sent   time.Time
		cancel context.CancelFunc
	}
}

// StartWriter starts writing; db returns a pool to a member, primary the member to write to
// ("" to wait).
func StartWriter(db func(member string) (*sql.DB, error), primary func() string) *Writer {
	w := &Writer{ackedOn: map[string][]time.Time{}, quit: make(chan struct{}), done: make(chan struct{})}
	go w.follow(primary)
	go func() {
		defer close(w.done)
		for {
			id := 1_000_000 + int(writeIDs.Add(1))
			select {
			case <-w.quit:
				return
			default:
			}
			m := primary()
			if m == "" {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			pool, err := db(m)
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			w.hold.RLock()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			w.inflight.Lock()
			w.inflight.member, w.inflight.sent, w.inflight.cancel = m, time.Now(), cancel
			w.inflight.Unlock()
			_, err = pool.ExecContext(ctx, "INSERT INTO app.t VALUES (?, 'w')", id)
			w.inflight.Lock()
			w.inflight.cancel = nil
			w.inflight.Unlock()
			cancel()
			w.hold.RUnlock()
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			w.mu.Lock()
			w.acked = append(w.acked, id)
			w.ackedOn[m] = append(w.ackedOn[m], time.Now())
			w.mu.Unlock()
		}
	}()
	return w
}

// follow abandons an insert in flight for 50 ms or more when primary() names another member,
// until Stop.
func (w *Writer) follow(primary func() string) {
	const every = 50 * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
		}
		w.inflight.Lock()
		sent, slow := w.inflight.sent, w.inflight.cancel != nil && time.Since(w.inflight.sent) >= every
		w.inflight.Unlock()
		if !slow {
			continue
		}
		p := primary()
		w.inflight.Lock()
		// The same insert still in flight, sent to a member that is no longer the primary.
		if p != "" && p != w.inflight.member && w.inflight.cancel != nil && w.inflight.sent.Equal(sent) {
			w.inflight.cancel()
		}
		w.inflight.Unlock()
	}
}

// Stop stops the writer and returns the acknowledged ids.
func (w *Writer) Stop() []int {
	close(w.quit)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.acked...)
}

// Hold runs f with the writer paused (no insert in flight), and returns what f returned.
func (w *Writer) Hold(f func() error) error {
	w.hold.Lock()
	defer w.hold.Unlock()
	return f()
}

// Acked returns the ids acknowledged so far.
func (w *Writer) Acked() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.acked...)
}

// MaxGap is the longest time between from and to in which no write was acknowledged (from
// and to count as acknowledgements): the write unavailability the writer saw.
func (w *Writer) MaxGap(from, to time.Time) time.Duration {
	w.mu.Lock()
	var at []time.Time
	for _, times := range w.ackedOn {
		for _, t := range times {
			if t.After(from) && t.Before(to) {
				at = append(at, t)
			}
		}
	}
	w.mu.Unlock()
	slices.SortFunc(at, time.Time.Compare)
	gap, last := time.Duration(0), from
	for _, t := range append(at, to) {
		gap = max(gap, t.Sub(last))
		last = t
	}
	return gap
}

// FirstAckAfter waits up to timeout for a write member m acknowledged after since, and
// returns how long after since it came (-1: none).
func (w *Writer) FirstAckAfter(since time.Time, m string, timeout time.Duration) time.Duration {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		w.mu.Lock()
		for _, at := range w.ackedOn[m] {
			if at.After(since) {
				w.mu.Unlock()
				return at.Sub(since)
			}
		}
		w.mu.Unlock()
	}
	return -1
}

// ClusterManifest is a three-member semi-sync MariaDB MySQLCluster named cluster with an
// application account app (password appPassword, in the Secret app-password) that may
// SELECT, INSERT and CREATE in the schema app, declared as a MySQLUser and a MySQLDatabase.
func ClusterManifest(cluster, appPassword string) string {
	return ClusterManifestN(cluster, appPassword, 3)
}

// ClusterManifestN is ClusterManifest with the given number of members.
func ClusterManifestN(cluster, appPassword string, members int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: app-password}
stringData: {password: %s}
---
apiVersion: mysqlop.io/v1alpha1
kind: MySQLCluster
metadata: {name: %s}
spec:
  flavor: mariadb
  version: 10.11.6
  members: %d
  replication: {mode: semisync}
  volumeClaimTemplate: {resources: {requests: {storage: 1Gi}}}
---
apiVersion: mysqlop.io/v1alpha1
kind: MySQLDatabase
metadata: {name: app}
spec: {clusterRef: {name: %s}, name: app}
---
apiVersion: mysqlop.io/v1alpha1
kind: MySQLUser
metadata: {name: app}
spec:
  clusterRef: {name: %s}
  user: app
  passwordSecretRef: {name: app-password, key: password}
  grants: [{privileges: [SELECT, INSERT, CREATE], database: app}]
`, appPassword, cluster, members, cluster, cluster)
}

// PodReady reports the pod's Ready condition.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// CrashLoop SIGKILLs the container's process, and again each time it restarts, every 100 ms
// until done reports true (it returns true) or timeout passes (false): a member that keeps
// crashing, which the operator must fail over from.
func (c *Cluster) CrashLoop(pod *corev1.Pod, container string, timeout time.Duration, done func() bool) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if pid, err := c.PID(pod, container); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if done() {
			return true
		}
	}
	return false
}
