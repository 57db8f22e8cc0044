package restore

// Bootstrap: a MySQLCluster with spec.bootstrap gets one MySQLRestore, made by a loop of its own.

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/events"
)

func (c *Controller) enqueueBootstrap(obj any) {
	if cl, ok := obj.(*v1alpha1.MySQLCluster); ok && cl.Spec.Bootstrap != nil && cl.Annotations[v1alpha1.AnnotationBootstrapRestore] == "" {
		c.bootstrap.Enqueue(cl)
	}
}

// SyncBootstrap turns a new cluster's spec.bootstrap into a MySQLRestore owned by the
// cluster, once: the restore waits for the cluster's primary like any other.
func (c *Controller) SyncBootstrap(ctx context.Context, key cache.ObjectName) (ctrl.Result, error) {
	cl, err := c.clusters.MySQLClusters(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if cl.Spec.Bootstrap == nil || cl.Annotations[v1alpha1.AnnotationBootstrapRestore] != "" || cl.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	name := cl.Name + "-bootstrap"
	r := &v1alpha1.MySQLRestore{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.Namespace, Labels: cl.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cl, v1alpha1.SchemeGroupVersion.WithKind("MySQLCluster"))}},
		Spec: v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: cl.Name}, BackupRef: cl.Spec.Bootstrap.FromBackup, Target: cl.Spec.Bootstrap.Target.DeepCopy()},
	}
	if _, err := c.mysql.MysqlopV1alpha1().MySQLRestores(cl.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("create bootstrap restore %s: %w", name, err)
	}
	mark := objects.Metadata{Annotations: map[string]*string{v1alpha1.AnnotationBootstrapRestore: objects.Value(name)}}
	if _, err := objects.PatchMetadata(ctx, c.clusterClient(cl).Patch, cl.Name, mark); err != nil {
		return ctrl.Result{}, fmt.Errorf("mark cluster %s bootstrapped: %w", key, err)
	}
	events.RestoreBootstrapping.Record(c.recorder, cl, cl.Spec.Bootstrap.FromBackup.Name, name)
	return ctrl.Result{}, nil
}
