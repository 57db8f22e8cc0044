package restore

// The steps of a running restore, one per Sync: each returns when to look again.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// fencing waits until clustering stopped the writes (the cluster is Fenced and its primary
// read-only), then hands the backup to the primary (logical) or to every member (physical).
func (c *Controller) fencing(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) (ctrl.Result, error) {
	if cl.Status.Phase != v1alpha1.ClusterFenced {
		return ctrl.After(pollInterval), nil
	}
	primary, err := c.agentOf(cl, cl.Status.Primary)
	if err != nil {
		return ctrl.Result{}, err
	}
	if st, err := primary.Status(ctx); err != nil || !st.ReadOnly {
		return ctrl.After(pollInterval), nil
	}
	if busy := c.stillArchiving(ctx, cl); len(busy) > 0 {
		// The Cluster controller pauses archiving for the fence: the replaced data must not
		// reach the old archive after writes resume (they resume in a new timeline).
		return ctrl.After(pollInterval), c.progress(ctx, cached, nil, "Writes are stopped; waiting for binary log archiving to pause on "+names(busy))
	}
	req, bk, err := c.request(ctx, cached)
	if err != nil {
		return ctrl.After(waitInterval), c.progress(ctx, cached, nil, "Writes are stopped; waiting to start: "+err.Error())
	}
	status := cached.Status.DeepCopy()
	var msg string
	if cached.Status.Method == v1alpha1.BackupPhysical {
		for _, m := range cached.Status.Members {
			client, err := c.agentOf(cl, m)
			if err == nil {
				_, err = client.StartRestore(ctx, req)
			}
			if err != nil {
				// The same ID is idempotent: members that took it keep it; retried with backoff.
				return ctrl.Result{}, fmt.Errorf("start restore %s on %s: %w", key, m, err)
			}
		}
		status.Step = v1alpha1.RestoreStaging
		msg = fmt.Sprintf("Writes are stopped; %s unpack %s", names(cached.Status.Members), bk.Status.Location)
	} else {
		if _, err := primary.StartRestore(ctx, req); err != nil {
			return ctrl.Result{}, fmt.Errorf("start restore %s on %s: %w", key, cl.Status.Primary, err)
		}
		status.Step, status.Member = v1alpha1.RestoreLoading, cl.Status.Primary
		msg = fmt.Sprintf("Writes are stopped; primary %s loads %s", cl.Status.Primary, bk.Status.Location)
	}
	events.RestoreStarted.Record(c.recorder, cached, msg)
	klog.FromContext(ctx).Info("Restore started", "restore", klog.KObj(cached), "step", status.Step)
	return ctrl.After(pollInterval), c.progress(ctx, cached, status, msg)
}

// stillArchiving names the members whose agents report archiving still configured, when the
// cluster archives. A member whose agent does not answer does not hold the restore up (a
// logical restore runs with a member down): a restarted agent holds no configuration, and
// only a writable member archives, which none is until the Cluster controller, which
// reconfigures every agent it reaches, makes one so.
func (c *Controller) stillArchiving(ctx context.Context, cl *v1alpha1.MySQLCluster) []string {
	if cl.Spec.BinlogArchive == nil {
		return nil
	}
	var busy []string
	for _, m := range memberNames(resources.StatefulSetName(cl), cl.Spec.Members) {
		client, err := c.agentOf(cl, m)
		if err != nil {
			continue
		}
		if st, err := client.Archive(ctx); err == nil && st.Config != "" {
			busy = append(busy, m)
		}
	}
	return busy
}

// loading follows a logical restore on the primary.
func (c *Controller) loading(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) (ctrl.Result, error) {
	m := cached.Status.Member
	client, err := c.agentOf(cl, m)
	if err != nil {
		return ctrl.Result{}, err
	}
	st, err := client.Restore(ctx, string(cached.UID))
	switch {
	case errors.Is(err, agentapi.ErrBackupNotFound):
		return ctrl.Result{}, c.finish(ctx, cached, cl, false, "the agent of "+m+" restarted during the restore (the data may be partly loaded)")
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("follow restore %s on %s: %w", key, m, err)
	case st.Phase == agentapi.BackupFailed:
		return ctrl.Result{}, c.finish(ctx, cached, cl, false, st.Error+" (the data may be partly loaded)")
	case st.Phase == agentapi.BackupRunning:
		return ctrl.After(pollInterval), nil
	}
	return c.startReplay(ctx, key, cached, cl, fmt.Sprintf("Loaded %s (%d bytes) through the primary %s", st.Location, st.Size, m))
}

// ask asks every member's agent about the restore.
func (c *Controller) ask(ctx context.Context, cl *v1alpha1.MySQLCluster, r *v1alpha1.MySQLRestore) map[string]answer {
	out := map[string]answer{}
	for _, m := range r.Status.Members {
		client, err := c.agentOf(cl, m)
		if err != nil {
			out[m] = answer{Err: err}
			continue
		}
		st, err := client.Restore(ctx, string(r.UID))
		if errors.Is(err, agentapi.ErrBackupNotFound) {
			out[m] = answer{Lost: true}
			continue
		}
		out[m] = answer{State: st, Err: err}
	}
	return out
}

// staging waits until every member staged the physical backup, then commits it on each; a
// member that cannot stage it fails the restore with every member's data untouched.
func (c *Controller) staging(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) (ctrl.Result, error) {
	s := decideStaging(cached.Status.Members, c.ask(ctx, cl, cached))
	switch {
	case s.Failed != "":
		return ctrl.Result{}, c.abort(ctx, cached, cl, s.Failed)
	case !s.Done:
		return ctrl.After(pollInterval), c.progress(ctx, cached, nil, "Writes are stopped; staging the backup on "+names(s.Waiting))
	}
	for _, m := range cached.Status.Members {
		client, err := c.agentOf(cl, m)
		if err != nil {
			return ctrl.Result{}, err
		}
		if _, err := client.CommitRestore(ctx, string(cached.UID)); errors.Is(err, agentapi.ErrBackupNotFound) {
			return ctrl.Result{}, c.abort(ctx, cached, cl, m+" lost the staged restore before it was committed")
		} else if err != nil {
			return ctrl.Result{}, fmt.Errorf("commit restore %s on %s: %w", key, m, err)
		}
	}
	status := cached.Status.DeepCopy()
	status.Step = v1alpha1.RestoreRestarting
	return ctrl.After(pollInterval), c.progress(ctx, cached, status, fmt.Sprintf("Every member staged the backup; restarting them onto it, the primary %s first", cl.Status.Primary))
}

// restarting deletes member pods so that their init puts the restored datadir in place: the
// primary first, the others once it runs on the restored data.
func (c *Controller) restarting(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) (ctrl.Result, error) {
	r := decideRestarts(cached.Status.Members, cl.Status.Primary, c.ask(ctx, cl, cached), cached.Status.Restarted)
	switch {
	case r.Failed != "":
		return ctrl.Result{}, c.abort(ctx, cached, cl, r.Failed)
	case r.Done:
		status := cached.Status.DeepCopy()
		status.Step = v1alpha1.RestoreRejoining
		return ctrl.After(pollInterval), c.progress(ctx, cached, status, "Every member runs on the restored data; waiting for the replicas to follow "+cl.Status.Primary)
	}
	status := cached.Status.DeepCopy()
	var errs []error
	for _, m := range r.Delete {
		if err := c.deletePod(ctx, cl, m); err != nil {
			errs = append(errs, err)
			continue
		}
		status.Restarted = append(status.Restarted, m)
		events.MemberRestoreRestarted.Record(c.recorder, cl, m, cached.Name)
	}
	err := c.progress(ctx, cached, status, "Writes are stopped; waiting for "+names(r.Waiting)+" to restart onto the restored data")
	return ctrl.After(pollInterval), errors.Join(append(errs, err)...)
}

// deletePod deletes member's current pod (the StatefulSet recreates it).
func (c *Controller) deletePod(ctx context.Context, cl *v1alpha1.MySQLCluster, member string) error {
	p, err := c.pods.Pods(cl.Namespace).Get(member)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("pod %s is not there yet", member)
	}
	if err != nil {
		return err
	}
	uid := p.UID
	err = c.kube.CoreV1().Pods(cl.Namespace).Delete(ctx, member, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s: %w", member, err)
	}
	return nil
}

// rejoining waits until the restarted replicas follow the primary, then lets writes resume.
func (c *Controller) rejoining(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) (ctrl.Result, error) {
	status := map[string]*agentapi.StatusJSON{}
	for _, m := range cached.Status.Members {
		if client, err := c.agentOf(cl, m); err == nil {
			status[m], _ = client.Status(ctx)
		}
	}
	waiting := decideRejoined(cached.Status.Members, cl.Status.Primary, status)
	if len(waiting) > 0 || cl.Status.Phase != v1alpha1.ClusterFenced {
		msg := "Every member runs on the restored data; waiting for " + names(waiting) + " to replicate from " + cl.Status.Primary
		if len(waiting) == 0 {
			msg = "Every member runs on the restored data; waiting for clustering to confirm that the replicas follow " + cl.Status.Primary
		}
		return ctrl.After(pollInterval), c.progress(ctx, cached, nil, msg)
	}
	return c.startReplay(ctx, key, cached, cl, fmt.Sprintf("Every member runs on the data of MySQLBackup %s, at GTID %s", backupName(cached), cached.Status.GTIDPosition))
}

// resume lifts the fence of a restore whose data is in place (msg says what was restored);
// it completes once the primary takes writes again.
func (c *Controller) resume(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster, msg string) (ctrl.Result, error) {
	return c.resumeWith(ctx, key, cached, cl, cached.Status.DeepCopy(), msg)
}

// resumeWith is resume with status as the restore's status so far.
func (c *Controller) resumeWith(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster, status *v1alpha1.MySQLRestoreStatus, msg string) (ctrl.Result, error) {
	status.Step = v1alpha1.RestoreResuming
	setComplete(status, cached.Generation, metav1.ConditionUnknown, v1alpha1.ReasonRunning, msg+resumeSuffix)
	// The step before the fence: the Cluster controller lifts the fence of a resuming
	// restore itself, should the patch below fail.
	updated, err := objects.UpdateStatus(ctx, cached, status, restoreStatus, c.restoreClient(cached).UpdateStatus)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.After(pollInterval), c.endFence(ctx, cl, updated, true)
}

const resumeSuffix = "; writes resume"

// resuming completes a restore once the primary is writable again.
func (c *Controller) resuming(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) (ctrl.Result, error) {
	if err := c.endFence(ctx, cl, cached, true); err != nil {
		return ctrl.Result{}, err
	}
	if client, err := c.agentOf(cl, cl.Status.Primary); err == nil {
		if st, err := client.Status(ctx); err == nil && !st.ReadOnly {
			msg := "The backup is restored"
			if cond := meta.FindStatusCondition(cached.Status.Conditions, v1alpha1.ConditionComplete); cond != nil {
				msg = strings.TrimSuffix(cond.Message, resumeSuffix)
			}
			return ctrl.Result{}, c.finish(ctx, cached, cl, true, msg+"; writes resumed")
		}
	}
	return ctrl.After(pollInterval), nil
}
