package restore

// How a restore reports: pending, progress, and the end (completed, failed or aborted).

import (
	"context"
	"errors"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/job"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/events"
)

// abort fails a restore. For a physical one, every member not yet restarted discards what it
// staged (committed or not), so that no later restart of its pod puts the restored data in
// place; whatever a member cannot be reached for is thrown away by its init or the next
// restore if it was never committed. The message says which members run on restored data.
func (c *Controller) abort(ctx context.Context, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster, why string) error {
	if cached.Status.Method == v1alpha1.BackupPhysical && cl != nil {
		for _, m := range cached.Status.Members {
			if slices.Contains(cached.Status.Restarted, m) {
				continue
			}
			client, err := c.agentOf(cl, m)
			if err == nil {
				err = client.DiscardRestore(ctx, string(cached.UID))
			}
			if err != nil {
				klog.FromContext(ctx).Info("Could not discard the staged restore", "restore", klog.KObj(cached), "member", m, "err", err)
			}
		}
		if len(cached.Status.Restarted) == 0 {
			why += "; every member keeps its data"
		} else {
			why += "; " + names(cached.Status.Restarted) + " restarted onto the restored data, the others keep theirs"
		}
	}
	return c.finish(ctx, cached, cl, false, why)
}

// refuse fails a restore that never started (nothing was stopped) with ReasonTargetUnreachable.
func (c *Controller) refuse(ctx context.Context, cached *v1alpha1.MySQLRestore, msg string) error {
	return c.end(ctx, cached, nil, false, v1alpha1.ReasonTargetUnreachable, msg)
}

// finish records the outcome and lets writes resume.
func (c *Controller) finish(ctx context.Context, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster, ok bool, msg string) error {
	return c.end(ctx, cached, cl, ok, v1alpha1.ReasonFailed, msg)
}

// end records the outcome (failed with reason when not ok) and lets writes resume.
func (c *Controller) end(ctx context.Context, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster, ok bool, reason, msg string) error {
	return c.endWith(ctx, cached, cl, cached.Status.DeepCopy(), ok, reason, msg)
}

// endWith is end with status as the restore's status so far.
func (c *Controller) endWith(ctx context.Context, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster, status *v1alpha1.MySQLRestoreStatus, ok bool, reason, msg string) error {
	now := metav1.NewTime(c.now())
	status.CompletionTime = &now
	status.Step = ""
	if ok {
		status.Phase = v1alpha1.JobComplete
		setComplete(status, cached.Generation, metav1.ConditionTrue, v1alpha1.ReasonCompleted, msg)
		events.RestoreCompleted.Record(c.recorder, cached, msg)
	} else {
		status.Phase = v1alpha1.JobFailed
		setComplete(status, cached.Generation, metav1.ConditionFalse, reason, msg)
		events.RestoreFailed.Record(c.recorder, cached, msg)
	}
	klog.FromContext(ctx).Info("Restore finished", "restore", klog.KObj(cached), "phase", status.Phase)
	updated, err := objects.UpdateStatus(ctx, cached, status, restoreStatus, c.restoreClient(cached).UpdateStatus)
	if err != nil {
		return err
	}
	if err := c.endFence(ctx, cl, cached, ok); err != nil {
		return err
	}
	return c.release(ctx, updated)
}

// errScratchLeft: a finished verification's scratch clusters or volumes are still being
// deleted; the restore keeps its finalizer and is looked at again.
var errScratchLeft = errors.New("scratch clusters are being deleted")

// release removes the finalizer of a finished restore (and the one earlier builds used); a
// verification's scratch clusters and their volumes go first (errScratchLeft until they are
// gone).
func (c *Controller) release(ctx context.Context, r *v1alpha1.MySQLRestore) error {
	if r.Spec.Verify && objects.HasFinalizer(r, v1alpha1.FinalizerRestore) {
		done, err := c.cleanupScratch(ctx, r)
		if err != nil {
			return err
		}
		if !done {
			return errScratchLeft
		}
	}
	return objects.RemoveFinalizers(ctx, r, c.restoreClient(r).Update, v1alpha1.FinalizerRestore, v1alpha1.LegacyFinalizerRestore)
}

// progress writes a running restore's status (next, or the cached one) with msg.
func (c *Controller) progress(ctx context.Context, cached *v1alpha1.MySQLRestore, next *v1alpha1.MySQLRestoreStatus, msg string) error {
	if next == nil {
		next = cached.Status.DeepCopy()
	}
	setComplete(next, cached.Generation, metav1.ConditionUnknown, v1alpha1.ReasonRunning, msg)
	return c.writeStatus(ctx, cached, next)
}

func (c *Controller) pending(ctx context.Context, cached *v1alpha1.MySQLRestore, msg string) error {
	status := cached.Status.DeepCopy()
	status.Phase = v1alpha1.JobPending
	if setComplete(status, cached.Generation, metav1.ConditionUnknown, v1alpha1.ReasonWaiting, msg) {
		events.RestoreWaiting.Record(c.recorder, cached, msg)
	}
	return c.writeStatus(ctx, cached, status)
}

func timeout(r *v1alpha1.MySQLRestore) time.Duration {
	return job.Timeout(r.Spec.Timeout, defaultTimeout)
}

// setComplete sets the Complete condition and reports whether it changed.
func setComplete(st *v1alpha1.MySQLRestoreStatus, gen int64, status metav1.ConditionStatus, reason, msg string) bool {
	st.ObservedGeneration = gen
	return job.SetComplete(&st.Conditions, gen, status, reason, msg)
}

func (c *Controller) writeStatus(ctx context.Context, cached *v1alpha1.MySQLRestore, st *v1alpha1.MySQLRestoreStatus) error {
	return objects.WriteStatus(ctx, cached, st, restoreStatus, c.restoreClient(cached).UpdateStatus)
}

func restoreStatus(r *v1alpha1.MySQLRestore) *v1alpha1.MySQLRestoreStatus { return &r.Status }
