package cluster

// The cluster's side of the restore fence. A running MySQLRestore stops its cluster's writes
// through the annotation mysqlop.io/restore (pkg/controllers/restore/fence.go sets and lifts
// it); here the Cluster controller decides what it asks of clustering, which makes the
// primary read-only (pkg/clustering), and lifts a fence whose restore no longer runs.

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/events"
)

// fence is what a cluster's restore annotation asks of its clustering.
type fence struct {
	// Reason says who stopped writes; "" when writes go on.
	Reason string
	// ClearErrant is set once a physical restore re-filled every member from one backup: no
	// member holds transactions of its own any more.
	ClearErrant bool
	// Stale is set when the annotation names no running restore of the cluster; it is removed.
	Stale bool
}

// decideFence reads the restore annotation of c; r is the MySQLRestore it names, nil when
// none exists. Writes stay stopped only while that restore runs against c, so a restore that
// ended, failed or was deleted without lifting the fence never leaves the cluster read-only.
func decideFence(c *v1alpha1.MySQLCluster, r *v1alpha1.MySQLRestore) fence {
	name := c.Annotations[v1alpha1.AnnotationRestore]
	if name == "" {
		return fence{}
	}
	if r == nil || r.DeletionTimestamp != nil || r.Spec.ClusterRef.Name != c.Name || r.Status.Phase != v1alpha1.JobRunning ||
		r.Status.Step == v1alpha1.RestoreResuming {
		return fence{Stale: true}
	}
	return fence{
		Reason:      "MySQLRestore " + name,
		ClearErrant: r.Status.Method == v1alpha1.BackupPhysical && r.Status.Step == v1alpha1.RestoreRejoining,
	}
}

// fence reads the cluster's restore annotation and removes it when it names no running
// restore of the cluster (the restore ended or was deleted without lifting it).
func (c *Controller) fence(ctx context.Context, cluster *v1alpha1.MySQLCluster) (fence, error) {
	name := cluster.Annotations[v1alpha1.AnnotationRestore]
	if name == "" {
		return fence{}, nil
	}
	r, err := c.restores.MySQLRestores(cluster.Namespace).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return fence{}, fmt.Errorf("get restore %s: %w", name, err)
	}
	f := decideFence(cluster, r)
	if !f.Stale {
		return f, nil
	}
	// The cache may not show yet that the restore runs (it sets Running, then the fence):
	// confirm with the API server before lifting the fence.
	live, err := c.mysql.MysqlopV1alpha1().MySQLRestores(cluster.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return fence{}, fmt.Errorf("get restore %s: %w", name, err)
	}
	if f = decideFence(cluster, live); !f.Stale {
		return f, nil
	}
	lift := objects.Metadata{Annotations: map[string]*string{v1alpha1.AnnotationRestore: nil}}
	if _, err := c.patchCluster(ctx, cluster, lift); err != nil {
		return f, fmt.Errorf("lift the fence of restore %s: %w", name, err)
	}
	events.StaleFenceLifted.Record(c.recorder, cluster, name)
	return f, nil
}
