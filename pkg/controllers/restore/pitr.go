package restore

// Point-in-time restores (spec.target): which backup is the base, which archived binary logs
// bring it to the target, and the Replaying step that applies them through the primary.

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/archive"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/job"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// planTimeout bounds reading the archive's index and listing its objects.
const planTimeout = 30 * time.Second

// archiveTarget is spec.target in the archive's terms.
func archiveTarget(t *v1alpha1.RestoreTarget) archive.Target {
	var out archive.Target
	if t.Time != nil {
		tm := t.Time.UTC()
		out.Time = &tm
	}
	out.GTID = t.GTID
	return out
}

// before reports whether backup b can be the base of a restore to target: it finished at or
// before the target's time, or its position is inside the target's GTIDs.
func before(b *v1alpha1.MySQLBackup, t archive.Target, flavor mysql.Flavor) bool {
	switch {
	case t.Time != nil:
		return b.Status.CompletionTime != nil && !b.Status.CompletionTime.Time.After(*t.Time)
	case t.GTID != "":
		return covers(flavor, t.GTID, b.Status.GTIDPosition)
	}
	return true
}

// chooseBackup picks the base of a restore of cluster's data to target when spec.backupRef
// is left out: the newest Complete backup of the cluster that finished in its current
// timeline (since) and before the target. wait is set while no backup is Complete yet;
// refused when none can ever be (every Complete one is after the target).
func chooseBackup(backups []*v1alpha1.MySQLBackup, cluster string, since time.Time, t archive.Target, flavor mysql.Flavor) (b *v1alpha1.MySQLBackup, wait, refused string) {
	var complete []*v1alpha1.MySQLBackup
	for _, bk := range backups {
		if bk.Spec.ClusterRef.Name == cluster && bk.Status.Phase == v1alpha1.JobComplete && bk.Status.CompletionTime != nil &&
			bk.Status.GTIDPosition != "" && !bk.Status.CompletionTime.Time.Before(since) {
			complete = append(complete, bk)
		}
	}
	if len(complete) == 0 {
		return nil, fmt.Sprintf("waiting for a Complete MySQLBackup of MySQLCluster %s to start from", cluster), ""
	}
	slices.SortFunc(complete, func(x, y *v1alpha1.MySQLBackup) int {
		return y.Status.CompletionTime.Compare(x.Status.CompletionTime.Time)
	})
	for _, bk := range complete {
		if before(bk, t, flavor) {
			return bk, "", ""
		}
	}
	oldest := complete[len(complete)-1]
	return nil, "", fmt.Sprintf("no backup of MySQLCluster %s precedes %s: the oldest, %s, finished at %s at GTID %s",
		cluster, t, oldest.Name, oldest.Status.CompletionTime.UTC().Format(time.RFC3339), oldest.Status.GTIDPosition)
}

// checkBase says why backup b cannot be the base of a restore to t from source cluster src
// ("" when it can).
func checkBase(b *v1alpha1.MySQLBackup, src *v1alpha1.MySQLCluster, t archive.Target) string {
	if since := resources.TimelineStart(src); b.Status.CompletionTime == nil || b.Status.CompletionTime.Time.Before(since) {
		return fmt.Sprintf("MySQLBackup %s predates the restore of %s that began MySQLCluster %s's current history: the archive does not continue it",
			b.Name, since.Format(time.RFC3339), src.Name)
	}
	if !before(b, t, mysql.Flavor(src.Spec.Flavor)) {
		return fmt.Sprintf("MySQLBackup %s (finished %s, GTID %s) does not precede %s", b.Name, b.Status.CompletionTime.UTC().Format(time.RFC3339), b.Status.GTIDPosition, t)
	}
	return ""
}

// replayPlan is what the primary's agent is sent to replay.
type replayPlan struct {
	Request agentapi.ReplayRequest
	Storage agentapi.StorageConfig
}

// errUnreachable marks a plan that can never succeed: the restore fails with
// ReasonTargetUnreachable. Other errors (the store cannot be read now) are retried.
type errUnreachable struct{ msg string }

func (e *errUnreachable) Error() string { return e.msg }

// sourceOf is the cluster whose archive a restore from backup b replays: the backup's.
func (c *Controller) sourceOf(b *v1alpha1.MySQLBackup) (*v1alpha1.MySQLCluster, error) {
	src, err := c.clusters.MySQLClusters(b.Namespace).Get(b.Spec.ClusterRef.Name)
	if err != nil {
		return nil, &errUnreachable{fmt.Sprintf("the archive to replay is MySQLCluster %s's spec.binlogArchive: %v", b.Spec.ClusterRef.Name, err)}
	}
	if src.Spec.BinlogArchive == nil {
		return nil, &errUnreachable{fmt.Sprintf("MySQLCluster %s archives no binary logs (spec.binlogArchive): only its backups can be restored", src.Name)}
	}
	return src, nil
}

// planReplay reads the source cluster's archive and returns the replay that brings backup b
// to target t, or why it cannot (errUnreachable) before anything is stopped: the target is
// outside the archive, a gap or a missing object breaks the chain.
func (c *Controller) planReplay(ctx context.Context, t archive.Target, b *v1alpha1.MySQLBackup) (*replayPlan, error) {
	src, err := c.sourceOf(b)
	if err != nil {
		return nil, err
	}
	if why := checkBase(b, src, t); why != "" {
		return nil, &errUnreachable{why}
	}
	a, err := c.openArchive(ctx, src)
	if err != nil {
		return nil, err
	}
	return c.planIn(ctx, a, t, b)
}

// planIn is planReplay in the opened archive a of b's cluster, whose base checkBase passed.
func (c *Controller) planIn(ctx context.Context, a *sourceArchive, t archive.Target, b *v1alpha1.MySQLBackup) (*replayPlan, error) {
	entries, err := archive.PlanReplay(a.ix, b.Status.GTIDPosition, t)
	var unreachable *archive.UnreachableError
	if errors.As(err, &unreachable) {
		return nil, &errUnreachable{fmt.Sprintf("cannot restore MySQLBackup %s to %s: %s", b.Name, t, unreachable.Reason)}
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, planTimeout)
	defer cancel()
	if err := archive.CheckObjects(ctx, a.store, a.prefix, entries); errors.Is(err, archive.ErrMissing) {
		return nil, &errUnreachable{fmt.Sprintf("cannot restore MySQLBackup %s to %s: the archive has a gap, %v", b.Name, t, err)}
	} else if err != nil {
		return nil, err
	}
	p := &replayPlan{Storage: a.cfg, Request: agentapi.ReplayRequest{Start: b.Status.GTIDPosition, StopGTID: t.GTID}}
	if t.Time != nil {
		stop := *t.Time
		p.Request.StopTime = &stop
	}
	for _, e := range entries {
		p.Request.Objects = append(p.Request.Objects, path.Join(a.prefix, e.Object))
	}
	return p, nil
}

// sourceArchive is a source cluster's binary log archive: where it is and its index.
type sourceArchive struct {
	cfg    agentapi.StorageConfig
	store  *storage.Store
	prefix string
	ix     *archive.Index
}

// openArchive reads the index of src's archive (errUnreachable when its storage cannot be
// configured; other errors are worth a retry).
func (c *Controller) openArchive(ctx context.Context, src *v1alpha1.MySQLCluster) (*sourceArchive, error) {
	cfg, err := job.StorageConfigOf(ctx, c.kube, src.Namespace, &src.Spec.BinlogArchive.Storage.S3)
	if err != nil {
		return nil, err
	}
	store, err := storage.New(cfg.Config())
	if err != nil {
		return nil, &errUnreachable{err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, planTimeout)
	defer cancel()
	prefix := resources.ArchivePrefix(src)
	ix, err := archive.LoadIndex(ctx, store, prefix, mysql.Flavor(src.Spec.Flavor))
	if err != nil {
		return nil, fmt.Errorf("read the archive of MySQLCluster %s: %w", src.Name, err)
	}
	return &sourceArchive{cfg: cfg, store: store, prefix: prefix, ix: ix}, nil
}

// baseBackup is the backup a restore starts from: the one recorded in its status once it
// started, else spec.backupRef, else (with a target) the one chooseBackup picks. wait or
// refused say why there is none yet or ever.
func (c *Controller) baseBackup(r *v1alpha1.MySQLRestore) (b *v1alpha1.MySQLBackup, wait, refused string, err error) {
	name := r.Status.Backup
	if name == "" {
		name = r.Spec.BackupRef.Name
	}
	if name != "" {
		b, err := c.backups.MySQLBackups(r.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("MySQLBackup %s not found", name), "", nil
		}
		return b, "", "", err
	}
	cl, err := c.clusters.MySQLClusters(r.Namespace).Get(r.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("MySQLCluster %s not found", r.Spec.ClusterRef.Name), "", nil
	}
	if err != nil {
		return nil, "", "", err
	}
	all, err := c.backups.MySQLBackups(r.Namespace).List(labels.Everything())
	if err != nil {
		return nil, "", "", err
	}
	b, wait, refused = chooseBackup(all, cl.Name, resources.TimelineStart(cl), archiveTarget(r.Spec.Target), mysql.Flavor(cl.Spec.Flavor))
	return b, wait, refused, nil
}

// replayID is the agent job ID of r's replay.
func replayID(r *v1alpha1.MySQLRestore) string { return string(r.UID) + "-replay" }

// startReplay moves a restore whose backup is in place on to Replaying, or to resuming
// writes when it has no target. msg says what was restored.
func (c *Controller) startReplay(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster, msg string) (ctrl.Result, error) {
	if cached.Spec.Target == nil {
		return c.resume(ctx, key, cached, cl, msg)
	}
	bk, err := c.backups.MySQLBackups(cached.Namespace).Get(cached.Status.Backup)
	if err != nil {
		return ctrl.Result{}, c.finish(ctx, cached, cl, false, fmt.Sprintf("%s, but MySQLBackup %s is gone: the archive cannot be replayed (%v)", msg, cached.Status.Backup, err))
	}
	plan, err := c.planReplay(ctx, archiveTarget(cached.Spec.Target), bk)
	var unreachable *errUnreachable
	if errors.As(err, &unreachable) {
		// The archive changed since the restore started (an object deleted): the backup is
		// in place, the target is not reached.
		return ctrl.Result{}, c.finish(ctx, cached, cl, false, msg+", but "+unreachable.msg)
	}
	if err != nil {
		return ctrl.After(pollInterval), c.progress(ctx, cached, nil, msg+"; waiting to replay the archive: "+err.Error())
	}
	status := cached.Status.DeepCopy()
	status.Step, status.Member = v1alpha1.RestoreReplaying, cl.Status.Primary
	status.Replay = &v1alpha1.ReplayStatus{Files: len(plan.Request.Objects)}
	if len(plan.Request.Objects) == 0 {
		status.Replay.GTID = bk.Status.GTIDPosition
		return c.resumeWith(ctx, key, cached, cl, status, msg+"; the archive holds nothing after the backup up to "+archiveTarget(cached.Spec.Target).String())
	}
	primary, err := c.agentOf(cl, cl.Status.Primary)
	if err != nil {
		return ctrl.Result{}, err
	}
	req := agentapi.BackupRequest{ID: replayID(cached), Method: agentapi.MethodReplay, Storage: plan.Storage, Replay: &plan.Request,
		TimeoutSeconds: int64(timeout(cached).Seconds())}
	if _, err := primary.StartRestore(ctx, req); err != nil {
		return ctrl.Result{}, fmt.Errorf("start replay %s on %s: %w", key, cl.Status.Primary, err)
	}
	return ctrl.After(pollInterval), c.progress(ctx, cached, status, fmt.Sprintf("%s; primary %s replays %d archived binary logs up to %s",
		msg, cl.Status.Primary, len(plan.Request.Objects), archiveTarget(cached.Spec.Target)))
}

// replaying follows the primary's replay of the archive.
func (c *Controller) replaying(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) (ctrl.Result, error) {
	m := cached.Status.Member
	client, err := c.agentOf(cl, m)
	if err != nil {
		return ctrl.Result{}, err
	}
	st, err := client.Restore(ctx, replayID(cached))
	switch {
	case errors.Is(err, agentapi.ErrBackupNotFound):
		return ctrl.Result{}, c.finish(ctx, cached, cl, false, "the agent of "+m+" restarted while replaying the archive (the backup is restored, the archive partly replayed)")
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("follow replay %s on %s: %w", key, m, err)
	}
	status := cached.Status.DeepCopy()
	status.Replay.Transactions, status.Replay.GTID = st.Transactions, st.GTID
	if st.LastTransactionTime != nil {
		t := metav1.NewTime(*st.LastTransactionTime)
		status.Replay.LastTransactionTime = &t
	}
	switch st.Phase {
	case agentapi.BackupFailed:
		if err := c.writeStatus(ctx, cached, status); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, c.finish(ctx, cached, cl, false, "replaying the archive failed: "+st.Error+" (the backup is restored, the archive partly replayed)")
	case agentapi.BackupRunning:
		return ctrl.After(pollInterval), c.writeStatus(ctx, cached, status)
	}
	last := "no transaction"
	if status.Replay.LastTransactionTime != nil {
		last = "the last of " + status.Replay.LastTransactionTime.UTC().Format(time.RFC3339)
	}
	return c.resumeWith(ctx, key, cached, cl, status, fmt.Sprintf("Restored MySQLBackup %s and replayed %d archived transactions up to %s (%s, archive GTID %s)",
		cached.Status.Backup, st.Transactions, archiveTarget(cached.Spec.Target), last, st.GTID))
}
