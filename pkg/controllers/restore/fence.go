package restore

// The fence: the annotation through which a running restore stops its cluster's writes. The
// Cluster controller hands it to clustering, which makes the primary read-only; see
// docs/backup.md for the protocol, and decideFence in the cluster controller for its other end.

import (
	"context"
	"fmt"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// setFence stops the cluster's writes on behalf of restore name.
func (c *Controller) setFence(ctx context.Context, cl *v1alpha1.MySQLCluster, name string) error {
	fence := objects.Metadata{Annotations: map[string]*string{restoreAnnotation: objects.Value(name)}}
	if _, err := objects.PatchMetadata(ctx, c.clusterClient(cl).Patch, cl.Name, fence); err != nil {
		return fmt.Errorf("stop writes on cluster %s: %w", cl.Name, err)
	}
	return nil
}

// endFence resumes the cluster's writes if restore r stopped them and, after a physical
// restore that completed, records on the cluster that its data was replaced.
func (c *Controller) endFence(ctx context.Context, cl *v1alpha1.MySQLCluster, r *v1alpha1.MySQLRestore, completed bool) error {
	if cl == nil {
		return nil
	}
	change := objects.Metadata{Annotations: map[string]*string{}}
	lift := cl.Annotations[restoreAnnotation] == r.Name
	if lift {
		change.Annotations[restoreAnnotation] = nil
	}
	if restored := r.Name + "/" + string(r.UID); completed && r.Status.Method == v1alpha1.BackupPhysical && cl.Annotations[v1alpha1.AnnotationDataRestored] != restored {
		change.Annotations[v1alpha1.AnnotationDataRestored] = objects.Value(restored)
	}
	// Data replaced (or partly replaced, by a restore that failed after Fencing) no longer
	// continues the archived history: archiving resumes in a timeline of the restore's own.
	// The name comes from the restore's start, so every call sets the same one.
	if touched := completed || (r.Status.Step != v1alpha1.RestoreFencing && r.Status.Step != ""); touched && r.Status.StartTime != nil {
		if tl := resources.Timeline(r.Status.StartTime.Time); cl.Annotations[v1alpha1.AnnotationArchiveTimeline] != tl {
			change.Annotations[v1alpha1.AnnotationArchiveTimeline] = objects.Value(tl)
		}
	}
	if change.IsEmpty() {
		return nil
	}
	if _, err := objects.PatchMetadata(ctx, c.clusterClient(cl).Patch, cl.Name, change); err != nil {
		// The Cluster controller lifts the fence of a finished restore itself.
		return fmt.Errorf("resume writes on cluster %s: %w", cl.Name, err)
	}
	if lift {
		events.WritesResumed.Record(c.recorder, cl, r.Name)
	}
	return nil
}
