package cluster

// Binary log archiving (spec.binlogArchive): the operator configures every member's agent, and
// the agent of whichever member is writable archives (pkg/archive), so that archiving goes on
// through a failover while the operator is away. Each runner keeps its cluster's agents
// configured on a goroutine of its own, never on the clustering loop's, whose rounds bound the
// time to fail over, and never on a controller worker. The primary's report becomes
// status.binlogArchive and the Archiving condition.

import (
	"context"
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/agents"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/job"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

const (
	// archivePeriod is how often a runner checks its members' archivers.
	archivePeriod = 10 * time.Second
	// archiveCallTimeout bounds one call to an agent.
	archiveCallTimeout = 5 * time.Second
	// storageTTL is how long read storage credentials are used before they are read again
	// (they can be rotated in their Secret).
	storageTTL = time.Minute
	// defaultArchiveInterval is spec.binlogArchive.interval's default.
	defaultArchiveInterval = time.Minute
)

// archiveView is the cluster's archiving as the runner last saw it.
type archiveView struct {
	// Member is the primary, whose archiver reports.
	Member string
	// State is its report; nil when it could not be read.
	State *agentapi.ArchiveState
	// Err says why archiving could not be configured or read ("" when it was).
	Err string
	// Paused names the restore that paused archiving ("" when none did).
	Paused string
}

// archiver keeps one cluster's agents configured.
type archiver struct {
	// req and reqTime cache the request built from the spec and the credentials Secret.
	req     *agentapi.ArchiveRequest
	reqSpec *v1alpha1.BinlogArchiveSpec
	reqTime time.Time
	// configured says some agent may be archiving: when the spec goes, each is told to stop.
	configured bool
	// checked is set once the agents were asked whether an earlier operator process left them
	// archiving: a spec dropped while no operator ran must still stop them.
	checked bool
}

// archiveInterval is spec's interval or its default.
func archiveInterval(spec *v1alpha1.BinlogArchiveSpec) time.Duration {
	if spec.Interval != nil && spec.Interval.Duration > 0 {
		return spec.Interval.Duration
	}
	return defaultArchiveInterval
}

// runArchive checks the members' archivers every archivePeriod until ctx ends.
func (r *runner) runArchive(ctx context.Context, c *Controller) {
	var a archiver
	t := time.NewTicker(archivePeriod)
	defer t.Stop()
	for {
		r.mu.Lock()
		cluster, cfg, d := r.cluster, r.cfg, r.decision
		r.mu.Unlock()
		primary := ""
		if d != nil && d.Primary >= 0 && d.Primary < len(cfg.pods) {
			primary = cfg.pods[d.Primary]
		}
		view := a.sync(ctx, c, cluster, cfg.pods, primary)
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		changed := !reflect.DeepEqual(r.archive, view)
		r.archive = view
		r.mu.Unlock()
		if changed {
			c.loop.Add(r.key)
		}
		if !sleep(ctx, t.C) {
			return
		}
	}
}

// sync configures every member's agent for cl.Spec.BinlogArchive (or stops them once it is
// gone, or while a restore fences the cluster) and returns the primary's report; nil when the
// spec has no archive.
func (a *archiver) sync(ctx context.Context, c *Controller, cl *v1alpha1.MySQLCluster, pods []string, primary string) *archiveView {
	spec := cl.Spec.BinlogArchive
	// A restore replaces the history the archive continues: archiving pauses for its whole
	// run, and resumes under the timeline the restore records as it lifts the fence.
	restore := cl.Annotations[v1alpha1.AnnotationRestore]
	if spec == nil || restore != "" {
		a.stop(ctx, c, cl, pods)
		if spec == nil {
			return nil
		}
		return &archiveView{Member: primary, Paused: restore}
	}
	a.checked = true
	retain := retainFrom(cl, c.completeBackups(cl))
	if a.req == nil || !reflect.DeepEqual(a.reqSpec, spec) || a.req.Prefix != resources.ArchivePrefix(cl) || a.req.RetainFrom != retain || time.Since(a.reqTime) > storageTTL {
		store, err := job.StorageConfigOf(ctx, c.kube, cl.Namespace, &spec.Storage.S3)
		if err != nil {
			return &archiveView{Member: primary, Err: err.Error()}
		}
		a.req = &agentapi.ArchiveRequest{Storage: store, Prefix: resources.ArchivePrefix(cl), IntervalSeconds: int64(archiveInterval(spec).Seconds()),
			RetainFrom: retain}
		a.reqSpec, a.reqTime = spec.DeepCopy(), time.Now()
	}
	view := &archiveView{Member: primary}
	if primary == "" {
		view.Err = "the cluster has no primary"
	}
	for _, pod := range pods {
		var st *agentapi.ArchiveState
		err := a.call(ctx, c, cl, pod, func(ctx context.Context, ag agents.Client) error {
			var err error
			if st, err = ag.Archive(ctx); err != nil || st.Config == a.req.ID() {
				return err
			}
			a.configured = true
			st, err = ag.ConfigureArchive(ctx, *a.req)
			return err
		})
		if pod != primary {
			continue
		}
		if err != nil {
			view.Err = fmt.Sprintf("agent of %s: %v", pod, err)
		}
		view.State = st
	}
	return view
}

// stop stops every member's archiving that this runner configured (or, after a start, that an
// earlier operator process may have configured); a member that could not be told is told
// again next time.
func (a *archiver) stop(ctx context.Context, c *Controller, cl *v1alpha1.MySQLCluster, pods []string) {
	if !a.configured && a.checked {
		return
	}
	failed := false
	for _, pod := range pods {
		err := a.call(ctx, c, cl, pod, func(ctx context.Context, ag agents.Client) error {
			if !a.configured {
				// Only asked after a start: stop what an earlier process configured.
				if st, err := ag.Archive(ctx); err != nil || st.Config == "" {
					return err
				}
			}
			return ag.StopArchive(ctx)
		})
		if err != nil {
			failed = true
			klog.FromContext(ctx).V(2).Info("Could not stop archiving", "cluster", klog.KObj(cl), "pod", pod, "err", err)
		}
	}
	a.checked, a.req, a.reqSpec = true, nil, nil
	a.configured = failed // told again next time, even what only had to be asked
}

// call runs f on pod's agent with a bounded context.
func (a *archiver) call(ctx context.Context, c *Controller, cl *v1alpha1.MySQLCluster, pod string, f func(context.Context, agents.Client) error) error {
	ag, err := c.dial(cl, pod)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, archiveCallTimeout)
	defer cancel()
	return f(ctx, ag)
}

// archiveStatus is the archive's status and Archiving condition from the runner's view (nil
// status and condition when spec has no archive).
func archiveStatus(spec *v1alpha1.BinlogArchiveSpec, v *archiveView) (*v1alpha1.BinlogArchiveStatus, *metav1.Condition) {
	if spec == nil {
		return nil, nil
	}
	cond := &metav1.Condition{Type: v1alpha1.ConditionArchiving, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonArchivePending,
		Message: "No report from the primary's archiver yet"}
	if v == nil {
		return nil, cond
	}
	st := &v1alpha1.BinlogArchiveStatus{Member: v.Member}
	s := v.State
	if s != nil {
		st.End, st.LagSeconds, st.LagBytes = s.End, int64(s.LagSeconds), s.LagBytes
		if s.LastArchiveTime != nil {
			t := metav1.NewTime(*s.LastArchiveTime)
			st.LastArchiveTime = &t
		}
	}
	interval := archiveInterval(spec)
	switch {
	case v.Paused != "":
		cond.Message = "Archiving is paused while MySQLRestore " + v.Paused + " replaces the data; it resumes in a new timeline"
	case v.Err != "":
		cond.Reason, cond.Message = v1alpha1.ReasonArchiveFailed, v.Err
	case s == nil || s.RoundTime.IsZero():
		// Pending: configured, no round reported yet.
	case s.Error != "":
		cond.Reason, cond.Message = v1alpha1.ReasonArchiveFailed, "The archiver of "+v.Member+" failed: "+s.Error
	case s.Gap:
		cond.Reason, cond.Message = v1alpha1.ReasonArchiveGap, "An archived binary log does not continue the chain: a recovery cannot cross it"
	case s.Idle:
		cond.Reason, cond.Message = v1alpha1.ReasonArchivePending, v.Member+" is not writable yet"
	case time.Duration(s.LagSeconds*float64(time.Second)) > 2*interval:
		cond.Reason, cond.Message = v1alpha1.ReasonArchiveLagging, fmt.Sprintf("The oldest transaction not archived is %ds old (interval %v)", int64(s.LagSeconds), interval)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonArchiving
		cond.Message = fmt.Sprintf("%s archives within %v; archived up to %s", v.Member, interval, orNone(s.End))
	}
	return st, cond
}

func orNone(s string) string {
	if s == "" {
		return "nothing yet"
	}
	return s
}

// recoverableWindow is the span of times a point-in-time restore of cl can reach: from the
// completion of its oldest Complete backup that the archive continues (finished in the
// current timeline, at a GTID position that holds the archive's start) to the archive's last
// transaction. Both nil without an archive report or such a backup.
func recoverableWindow(cl *v1alpha1.MySQLCluster, backups []*v1alpha1.MySQLBackup, v *archiveView) (from, until *metav1.Time) {
	if cl.Spec.BinlogArchive == nil || v == nil || v.State == nil || v.State.Until == nil {
		return nil, nil
	}
	flavor := mysql.Flavor(cl.Spec.Flavor)
	start, err := mysql.ParseGTIDSet(flavor, v.State.Start)
	if err != nil {
		return nil, nil
	}
	since := resources.TimelineStart(cl)
	for _, b := range backups {
		if b.Status.Phase != v1alpha1.JobComplete || b.Status.CompletionTime == nil || b.Status.CompletionTime.Time.Before(since) {
			continue
		}
		if pos, err := mysql.ParseGTIDSet(flavor, b.Status.GTIDPosition); err != nil || !pos.Contains(start) {
			continue
		}
		if from == nil || b.Status.CompletionTime.Before(from) {
			from = b.Status.CompletionTime.DeepCopy()
		}
	}
	if from == nil || v.State.Until.Before(from.Time) {
		return nil, nil
	}
	u := metav1.NewTime(*v.State.Until)
	return from, &u
}

// retainFrom is the archive's retention position: the GTID position of the oldest Complete
// backup of cl finished in its current timeline ("" keeps everything: no such backup yet).
// What only older backups could use is deleted by the archiver, so retention follows the
// backups' own retention (a schedule's keep, a deleted MySQLBackup).
func retainFrom(cl *v1alpha1.MySQLCluster, backups []*v1alpha1.MySQLBackup) string {
	since := resources.TimelineStart(cl)
	var oldest *v1alpha1.MySQLBackup
	for _, b := range backups {
		if b.Status.Phase != v1alpha1.JobComplete || b.Status.CompletionTime == nil || b.Status.GTIDPosition == "" || b.Status.CompletionTime.Time.Before(since) {
			continue
		}
		if oldest == nil || b.Status.CompletionTime.Before(oldest.Status.CompletionTime) {
			oldest = b
		}
	}
	if oldest == nil {
		return ""
	}
	return oldest.Status.GTIDPosition
}
