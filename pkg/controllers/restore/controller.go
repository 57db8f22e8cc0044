// Package restore is the MySQLRestore controller: it loads a Complete logical MySQLBackup
// into a cluster through the primary's agent, so that the restored data replicates to every
// replica, and follows the restore to Complete or Failed. Physical restores are refused with
// a clear condition until they are built.
//
// Phases: Pending (waiting for the backup to complete, or for the cluster to have a primary)
// -> Running -> Complete | Failed. A finished restore never runs again.
package restore

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/backup"
	"github.com/mysqlop/mysql-operator/pkg/controllers/sqlobject"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	mysqlinformers "github.com/mysqlop/mysql-operator/pkg/generated/informers/externalversions"
	listers "github.com/mysqlop/mysql-operator/pkg/generated/listers/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/informerset"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// Name is the controller's name in logs, metrics and its workqueue.
const Name = "restore"

const (
	pollInterval = 2 * time.Second
	byBackup     = "backup"
	byCluster    = "cluster"
)

// Controller reconciles MySQLRestores.
type Controller struct {
	kube     kubernetes.Interface
	mysql    versioned.Interface
	restores listers.MySQLRestoreLister
	index    cache.Indexer
	backups  listers.MySQLBackupLister
	clusters listers.MySQLClusterLister
	secrets  corelisters.SecretLister
	resolve  resources.Resolver
	recorder record.EventRecorder
	worker   sqlobject.Worker
	// bootstrap creates the MySQLRestore of clusters with spec.bootstrap.
	bootstrap sqlobject.Worker
}

// AnnotationBootstrapRestore on a MySQLCluster names the MySQLRestore its spec.bootstrap was
// turned into; once set, no second one is made, even if that restore is deleted.
const AnnotationBootstrapRestore = "mysqlop.io/bootstrap-restore"

// New registers the controller's informers with set and returns the controller.
func New(kube kubernetes.Interface, client versioned.Interface, set *informerset.Set, recorder record.EventRecorder, resolve resources.Resolver) (*Controller, error) {
	restoreInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLRestores().Informer()
	})
	backupInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLBackups().Informer()
	})
	clusterInf, secretInf := sqlobject.ClusterCaches(set)
	if err := sqlobject.AddIndex(restoreInf, byBackup, func(obj any) (string, string) {
		r := obj.(*v1alpha1.MySQLRestore)
		return r.Namespace, r.Spec.BackupRef.Name
	}); err != nil {
		return nil, err
	}
	if err := sqlobject.AddIndex(restoreInf, byCluster, func(obj any) (string, string) {
		r := obj.(*v1alpha1.MySQLRestore)
		return r.Namespace, r.Spec.ClusterRef.Name
	}); err != nil {
		return nil, err
	}
	if resolve == nil {
		resolve = backup.DNSAgentResolver
	}
	c := &Controller{
		kube: kube, mysql: client,
		restores: listers.NewMySQLRestoreLister(restoreInf.Indexer()),
		index:    restoreInf.Indexer(),
		backups:  listers.NewMySQLBackupLister(backupInf.Indexer()),
		clusters: listers.NewMySQLClusterLister(clusterInf.Indexer()),
		secrets:  corelisters.NewSecretLister(secretInf.Indexer()),
		resolve:  resolve, recorder: recorder,
	}
	c.worker = sqlobject.Worker{Name: Name, Queue: sqlobject.NewQueue(Name), Sync: c.sync,
		Synced: []cache.InformerSynced{restoreInf.HasSynced, backupInf.HasSynced, clusterInf.HasSynced, secretInf.HasSynced}}
	c.bootstrap = sqlobject.Worker{Name: Name + "-bootstrap", Queue: sqlobject.NewQueue(Name + "-bootstrap"), Sync: c.syncBootstrap,
		Synced: []cache.InformerSynced{clusterInf.HasSynced}}
	if err := clusterInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueBootstrap(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueBootstrap(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watch clusters: %w", err)
	}
	if err := restoreInf.AddEventHandler(sqlobject.ObjectHandler(c.worker.Queue)); err != nil {
		return nil, fmt.Errorf("watch restores: %w", err)
	}
	if err := clusterInf.AddEventHandler(sqlobject.ClusterHandler(sqlobject.EnqueueIndexed(c.worker.Queue, c.index, byCluster))); err != nil {
		return nil, fmt.Errorf("watch clusters: %w", err)
	}
	onBackup := sqlobject.EnqueueIndexed(c.worker.Queue, c.index, byBackup)
	if err := backupInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if k, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
				onBackup(k)
			}
		},
		UpdateFunc: func(old, obj any) {
			if old.(*v1alpha1.MySQLBackup).Status.Phase != obj.(*v1alpha1.MySQLBackup).Status.Phase {
				if k, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
					onBackup(k)
				}
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("watch backups: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error {
	go func() { _ = c.bootstrap.Run(ctx, 1) }()
	return c.worker.Run(ctx, workers)
}

func (c *Controller) enqueueBootstrap(obj any) {
	if cl, ok := obj.(*v1alpha1.MySQLCluster); ok && cl.Spec.Bootstrap != nil && cl.Annotations[AnnotationBootstrapRestore] == "" {
		sqlobject.Enqueue(c.bootstrap.Queue, cl)
	}
}

// syncBootstrap turns a new cluster's spec.bootstrap into a MySQLRestore owned by the
// cluster, once: the restore waits for the cluster's primary like any other.
func (c *Controller) syncBootstrap(ctx context.Context, key cache.ObjectName) error {
	cl, err := c.clusters.MySQLClusters(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cl.Spec.Bootstrap == nil || cl.Annotations[AnnotationBootstrapRestore] != "" || cl.DeletionTimestamp != nil {
		return nil
	}
	name := cl.Name + "-bootstrap"
	r := &v1alpha1.MySQLRestore{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.Namespace, Labels: cl.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cl, v1alpha1.SchemeGroupVersion.WithKind("MySQLCluster"))}},
		Spec: v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: cl.Name}, BackupRef: cl.Spec.Bootstrap.FromBackup},
	}
	if _, err := c.mysql.MysqlopV1alpha1().MySQLRestores(cl.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create bootstrap restore %s: %w", name, err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationBootstrapRestore, name)
	if _, err := c.mysql.MysqlopV1alpha1().MySQLClusters(cl.Namespace).Patch(ctx, cl.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("mark cluster %s bootstrapped: %w", key, err)
	}
	c.recorder.Eventf(cl, corev1.EventTypeNormal, events.RestoreStarted, "Bootstrapping from MySQLBackup %s through MySQLRestore %s", cl.Spec.Bootstrap.FromBackup.Name, name)
	return nil
}

func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	cached, err := c.restores.MySQLRestores(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) || (err == nil && cached.DeletionTimestamp != nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get restore %s: %w", key, err)
	}
	switch cached.Status.Phase {
	case v1alpha1.JobComplete, v1alpha1.JobFailed:
		return nil
	case v1alpha1.JobRunning:
		return c.follow(ctx, key, cached)
	}
	return c.start(ctx, key, cached)
}

func (c *Controller) start(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore) error {
	bk, err := c.backups.MySQLBackups(key.Namespace).Get(cached.Spec.BackupRef.Name)
	if apierrors.IsNotFound(err) {
		return c.pending(ctx, cached, fmt.Sprintf("MySQLBackup %s not found", cached.Spec.BackupRef.Name))
	}
	if err != nil {
		return err
	}
	switch {
	case bk.Status.Phase == v1alpha1.JobFailed:
		return c.fail(ctx, cached, fmt.Sprintf("MySQLBackup %s failed: there is nothing to restore", bk.Name))
	case bk.Status.Phase != v1alpha1.JobComplete:
		return c.pending(ctx, cached, fmt.Sprintf("waiting for MySQLBackup %s to complete", bk.Name))
	case bk.Spec.Method == v1alpha1.BackupPhysical:
		return c.fail(ctx, cached, "restoring a physical backup is not supported yet: use a logical backup")
	}
	cl, err := c.clusters.MySQLClusters(key.Namespace).Get(cached.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		return c.pending(ctx, cached, fmt.Sprintf("MySQLCluster %s not found", cached.Spec.ClusterRef.Name))
	}
	if err != nil {
		return err
	}
	if cl.Status.Primary == "" {
		return c.pending(ctx, cached, fmt.Sprintf("MySQLCluster %s has no primary yet", cl.Name))
	}
	store, err := backup.StorageConfig(ctx, c.kube, bk)
	if err != nil {
		c.worker.Queue.AddAfter(key, 10*time.Second)
		return c.pending(ctx, cached, err.Error())
	}
	client, err := backup.AgentClient(c.secrets, c.resolve, cl, cl.Status.Primary)
	if err != nil {
		return c.pending(ctx, cached, err.Error())
	}
	st, err := client.StartRestore(ctx, agent.BackupRequest{ID: string(cached.UID), Method: string(v1alpha1.BackupLogical),
		Object: backup.ObjectName(bk), Storage: store, SHA256: bk.Status.SHA256})
	if err != nil {
		_ = c.pending(ctx, cached, fmt.Sprintf("primary %s did not take the restore: %v", cl.Status.Primary, err))
		return fmt.Errorf("start restore %s on %s: %w", key, cl.Status.Primary, err)
	}
	msg := fmt.Sprintf("Primary %s loads %s", cl.Status.Primary, st.Location)
	c.recorder.Event(cached, corev1.EventTypeNormal, events.RestoreStarted, msg)
	klog.FromContext(ctx).Info("Restore started", "restore", klog.KObj(cached), "member", cl.Status.Primary)
	status := cached.Status.DeepCopy()
	status.Phase, status.Member = v1alpha1.JobRunning, cl.Status.Primary
	t := metav1.NewTime(st.StartTime)
	status.StartTime = &t
	setComplete(status, cached.Generation, metav1.ConditionUnknown, backup.ReasonRunning, msg)
	c.worker.Queue.AddAfter(key, pollInterval)
	return c.writeStatus(ctx, cached, status)
}

func (c *Controller) follow(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore) error {
	cl, err := c.clusters.MySQLClusters(key.Namespace).Get(cached.Spec.ClusterRef.Name)
	if err != nil {
		return c.fail(ctx, cached, fmt.Sprintf("MySQLCluster %s is gone", cached.Spec.ClusterRef.Name))
	}
	m := cached.Status.Member
	client, err := backup.AgentClient(c.secrets, c.resolve, cl, m)
	if err != nil {
		return c.fail(ctx, cached, err.Error())
	}
	st, failed, err := backup.Poll(ctx, client, string(cached.UID), "restore")
	switch {
	case err != nil:
		return fmt.Errorf("follow restore %s on %s: %w", key, m, err)
	case failed != "":
		return c.fail(ctx, cached, failed+" (the data may be partly loaded)")
	case st == nil:
		c.worker.Queue.AddAfter(key, pollInterval)
		return nil
	}
	status := cached.Status.DeepCopy()
	status.Phase = v1alpha1.JobComplete
	if st.CompletionTime != nil {
		t := metav1.NewTime(*st.CompletionTime)
		status.CompletionTime = &t
	}
	msg := fmt.Sprintf("Loaded %s (%d bytes) through the primary %s", st.Location, st.Size, m)
	setComplete(status, cached.Generation, metav1.ConditionTrue, backup.ReasonCompleted, msg)
	c.recorder.Event(cached, corev1.EventTypeNormal, events.RestoreCompleted, msg)
	return c.writeStatus(ctx, cached, status)
}

func (c *Controller) fail(ctx context.Context, cached *v1alpha1.MySQLRestore, msg string) error {
	status := cached.Status.DeepCopy()
	status.Phase = v1alpha1.JobFailed
	now := metav1.Now()
	status.CompletionTime = &now
	setComplete(status, cached.Generation, metav1.ConditionFalse, backup.ReasonFailed, msg)
	c.recorder.Event(cached, corev1.EventTypeWarning, events.RestoreFailed, msg)
	return c.writeStatus(ctx, cached, status)
}

func (c *Controller) pending(ctx context.Context, cached *v1alpha1.MySQLRestore, msg string) error {
	status := cached.Status.DeepCopy()
	status.Phase = v1alpha1.JobPending
	setComplete(status, cached.Generation, metav1.ConditionUnknown, backup.ReasonWaiting, msg)
	return c.writeStatus(ctx, cached, status)
}

func setComplete(st *v1alpha1.MySQLRestoreStatus, gen int64, status metav1.ConditionStatus, reason, msg string) {
	st.ObservedGeneration = gen
	sqlobject.SetComplete(&st.Conditions, gen, status, reason, msg)
}

func (c *Controller) writeStatus(ctx context.Context, cached *v1alpha1.MySQLRestore, st *v1alpha1.MySQLRestoreStatus) error {
	return sqlobject.WriteStatus(ctx, cached, st, func(r *v1alpha1.MySQLRestore) *v1alpha1.MySQLRestoreStatus { return &r.Status },
		c.mysql.MysqlopV1alpha1().MySQLRestores(cached.Namespace).UpdateStatus)
}
