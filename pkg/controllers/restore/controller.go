// Package restore is the MySQLRestore controller. A restore stops the cluster's writes for its
// whole duration (the fence: the annotation mysqlop.io/restore on the MySQLCluster, which the
// Cluster controller hands to clustering), then:
//
//   - logical: the primary's agent verifies the backup's SHA-256 and loads it through the
//     flavor's client; the statements replicate to every replica;
//   - physical: every member's agent verifies, unpacks and prepares the backup beside its
//     datadir (Staging); once all did, the operator commits each and deletes the pods, the
//     primary first (Restarting); each pod's init puts the restored datadir in place at the
//     backup's GTID position; the replicas follow the primary again (Rejoining).
//
// Then the fence is lifted and writes resume. A failure before anything was replaced (a
// corrupted or missing object, wrong credentials, a member that cannot stage) leaves every
// member's data as it was.
//
// Phases: Pending (waiting for the backup, the cluster's primary, its members, the storage
// Secret, or another restore of the cluster) -> Running (with a step) -> Complete | Failed.
// A finished restore never runs again.
package restore

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/agents"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/job"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	mysqlv1alpha1 "github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned/typed/mysqlop/v1alpha1"
	mysqlinformers "github.com/mysqlop/mysql-operator/pkg/generated/informers/externalversions"
	listers "github.com/mysqlop/mysql-operator/pkg/generated/listers/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/informerset"
	"github.com/mysqlop/mysql-operator/pkg/metrics"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// Name is the controller's name in logs, metrics and its workqueue.
const Name = "restore"

const (
	pollInterval      = 2 * time.Second
	waitInterval      = 10 * time.Second
	defaultTimeout    = 6 * time.Hour
	byBackup          = "backup"
	byCluster         = "cluster"
	restoreAnnotation = v1alpha1.AnnotationRestore
)

// Controller reconciles MySQLRestores.
type Controller struct {
	kube     kubernetes.Interface
	mysql    versioned.Interface
	restores listers.MySQLRestoreLister
	index    cache.Indexer
	backups  listers.MySQLBackupLister
	clusters listers.MySQLClusterLister
	pods     corelisters.PodLister
	// dial makes clients of the members' agents.
	dial     agents.Dialer
	recorder record.EventRecorder
	loop     *ctrl.Loop
	now      func() time.Time
	// bootstrap creates the MySQLRestore of clusters with spec.bootstrap.
	bootstrap *ctrl.Loop
}

// New registers the controller's informers with set and returns the controller.
func New(kube kubernetes.Interface, client versioned.Interface, set *informerset.Set, recorder record.EventRecorder, resolve resources.Resolver) (*Controller, error) {
	restoreInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLRestores().Informer()
	})
	backupInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLBackups().Informer()
	})
	podInf := set.Kube(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Pods().Informer()
	})
	clusterInf, secretInf := ctrl.ClusterCaches(set)
	if err := ctrl.AddIndex(restoreInf, byBackup, func(obj any) (string, string) {
		r := obj.(*v1alpha1.MySQLRestore)
		return r.Namespace, backupName(r)
	}); err != nil {
		return nil, err
	}
	if err := ctrl.AddIndex(restoreInf, byCluster, func(obj any) (string, string) {
		r := obj.(*v1alpha1.MySQLRestore)
		return r.Namespace, r.Spec.ClusterRef.Name
	}); err != nil {
		return nil, err
	}
	c := &Controller{
		kube: kube, mysql: client,
		restores: listers.NewMySQLRestoreLister(restoreInf.Indexer()),
		index:    restoreInf.Indexer(),
		backups:  listers.NewMySQLBackupLister(backupInf.Indexer()),
		clusters: listers.NewMySQLClusterLister(clusterInf.Indexer()),
		dial:     agents.TLSDialer(corelisters.NewSecretLister(secretInf.Indexer()), resolve),
		pods:     corelisters.NewPodLister(podInf.Indexer()),
		recorder: recorder, now: time.Now,
	}
	c.loop = ctrl.New(Name, "mysqlrestore", c.Sync)
	c.loop.WaitFor(restoreInf.HasSynced, backupInf.HasSynced, clusterInf.HasSynced, secretInf.HasSynced, podInf.HasSynced)
	c.bootstrap = ctrl.New(Name+"-bootstrap", "mysqlcluster", c.SyncBootstrap)
	c.bootstrap.WaitFor(clusterInf.HasSynced)
	if err := clusterInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueBootstrap(obj) },
		UpdateFunc: func(_, obj any) { c.enqueueBootstrap(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watch clusters: %w", err)
	}
	if err := restoreInf.AddEventHandler(c.loop.ObjectHandler()); err != nil {
		return nil, fmt.Errorf("watch restores: %w", err)
	}
	if err := clusterInf.AddEventHandler(ctrl.ClusterHandler(c.loop.EnqueueIndexed(c.index, byCluster))); err != nil {
		return nil, fmt.Errorf("watch clusters: %w", err)
	}
	onBackup := c.loop.EnqueueIndexed(c.index, byBackup)
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
	bootstrap := make(chan error, 1)
	go func() { bootstrap <- c.bootstrap.Run(ctx, 1) }()
	err := c.loop.Run(ctx, workers)
	return errors.Join(err, <-bootstrap)
}

// Sync reconciles the MySQLRestore key.
func (c *Controller) Sync(ctx context.Context, key cache.ObjectName) (ctrl.Result, error) {
	cached, err := c.restores.MySQLRestores(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		metrics.ForgetRestore(key.Namespace, key.Name)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get restore %s: %w", key, err)
	}
	if cached.DeletionTimestamp != nil {
		metrics.ForgetRestore(key.Namespace, key.Name)
		return untilScratchGone(ctrl.Result{}, c.finalize(ctx, cached))
	}
	metrics.ObserveRestore(key.Namespace, key.Name, cached.Spec.ClusterRef.Name, cached.Status.Phase == v1alpha1.JobFailed)
	switch cached.Status.Phase {
	case v1alpha1.JobComplete, v1alpha1.JobFailed:
		return untilScratchGone(ctrl.Result{}, c.release(ctx, cached)) // left behind when the process stopped in between
	case v1alpha1.JobRunning:
		if cached.Spec.Verify {
			return untilScratchGone(c.verifying(ctx, key, cached))
		}
		return c.run(ctx, key, cached)
	}
	if cached.Spec.Verify {
		return c.startVerify(ctx, key, cached)
	}
	return c.start(ctx, key, cached)
}

// untilScratchGone looks again soon while a verification's scratch clusters are deleted: a
// status write alone does not requeue a restore (ctrl.Loop.ObjectHandler).
func untilScratchGone(res ctrl.Result, err error) (ctrl.Result, error) {
	if errors.Is(err, errScratchLeft) {
		return ctrl.After(pollInterval), nil
	}
	return res, err
}

// start checks that the restore can run and, when it can, records it as Running and stops
// the cluster's writes.
func (c *Controller) start(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore) (ctrl.Result, error) {
	bk, wait, refused, err := c.baseBackup(cached)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case refused != "":
		return ctrl.Result{}, c.refuse(ctx, cached, refused)
	case wait != "":
		return ctrl.After(waitInterval), c.pending(ctx, cached, wait)
	}
	cl, err := c.clusters.MySQLClusters(key.Namespace).Get(cached.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, c.pending(ctx, cached, fmt.Sprintf("MySQLCluster %s not found", cached.Spec.ClusterRef.Name))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if why, failed := readyToStart(bk, cl, cached.Name); failed {
		return ctrl.Result{}, c.finish(ctx, cached, nil, false, why)
	} else if why != "" {
		return ctrl.After(waitInterval), c.pending(ctx, cached, why)
	}
	// Checked now, so that a restore never stops writes for a Secret that is not there.
	if _, err := job.StorageConfig(ctx, c.kube, bk); err != nil {
		return ctrl.After(waitInterval), c.pending(ctx, cached, err.Error())
	}
	// A target the archive cannot reach is refused before writes stop.
	if cached.Spec.Target != nil {
		_, err := c.planReplay(ctx, archiveTarget(cached.Spec.Target), bk)
		var unreachable *errUnreachable
		if errors.As(err, &unreachable) {
			return ctrl.Result{}, c.refuse(ctx, cached, unreachable.msg)
		}
		if err != nil {
			return ctrl.After(waitInterval), c.pending(ctx, cached, "reading the binary log archive: "+err.Error())
		}
	}
	status := cached.Status.DeepCopy()
	status.Backup = bk.Name
	status.Phase, status.Step, status.Method = v1alpha1.JobRunning, v1alpha1.RestoreFencing, job.Method(bk)
	status.GTIDPosition = bk.Status.GTIDPosition
	now := metav1.NewTime(c.now())
	status.StartTime = &now
	if status.Method == v1alpha1.BackupPhysical {
		status.Members = memberNames(resources.StatefulSetName(cl), cl.Spec.Members)
	} else {
		status.Member = cl.Status.Primary
	}
	setComplete(status, cached.Generation, metav1.ConditionUnknown, v1alpha1.ReasonRunning, "Stopping writes on MySQLCluster "+cl.Name)
	klog.FromContext(ctx).Info("Restore starts: stopping writes", "restore", klog.KObj(cached), "cluster", cl.Name, "method", status.Method)
	// The finalizer first: a running restore deleted must still discard what it staged.
	cached, err = objects.AddFinalizer(ctx, cached, v1alpha1.FinalizerRestore, c.restoreClient(cached).Update)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Running first, then the fence: the Cluster controller honours the fence only for a
	// running restore, so the reverse order would have it lifted at once.
	if _, err := objects.UpdateStatus(ctx, cached, status, restoreStatus, c.restoreClient(cached).UpdateStatus); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.After(pollInterval), c.setFence(ctx, cl, cached.Name)
}

// run moves a running restore on by one step.
func (c *Controller) run(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore) (ctrl.Result, error) {
	cl, err := c.clusters.MySQLClusters(key.Namespace).Get(cached.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, c.finish(ctx, cached, nil, false, fmt.Sprintf("MySQLCluster %s is gone", cached.Spec.ClusterRef.Name))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if start := cached.Status.StartTime; start != nil && c.now().Sub(start.Time) > timeout(cached) {
		return ctrl.Result{}, c.abort(ctx, cached, cl, fmt.Sprintf("not finished within the timeout of %v (step %s)", timeout(cached), cached.Status.Step))
	}
	if cached.Status.Step == v1alpha1.RestoreResuming {
		return c.resuming(ctx, key, cached, cl)
	}
	if holder := cl.Annotations[restoreAnnotation]; holder != cached.Name {
		if holder != "" || cached.Status.Step != v1alpha1.RestoreFencing {
			// The fence was lifted (by hand, or by another restore's end) or is another's:
			// writes may have resumed, so this restore cannot vouch for what it loads.
			return ctrl.Result{}, c.abort(ctx, cached, cl, "the cluster's writes were resumed during the restore (annotation "+restoreAnnotation+" removed or replaced)")
		}
		return ctrl.Result{}, c.setFence(ctx, cl, cached.Name) // the write after the status update failed
	}
	switch cached.Status.Step {
	case v1alpha1.RestoreFencing:
		return c.fencing(ctx, key, cached, cl)
	case v1alpha1.RestoreLoading:
		return c.loading(ctx, key, cached, cl)
	case v1alpha1.RestoreStaging:
		return c.staging(ctx, key, cached, cl)
	case v1alpha1.RestoreRestarting:
		return c.restarting(ctx, key, cached, cl)
	case v1alpha1.RestoreRejoining:
		return c.rejoining(ctx, key, cached, cl)
	case v1alpha1.RestoreReplaying:
		return c.replaying(ctx, key, cached, cl)
	}
	return ctrl.Result{}, c.abort(ctx, cached, cl, fmt.Sprintf("unknown step %q", cached.Status.Step))
}

// agentOf returns a client of member's agent.
func (c *Controller) agentOf(cl *v1alpha1.MySQLCluster, member string) (agents.Client, error) {
	return c.dial(cl, member)
}

// request is the agent request of restore r from backup b.
func (c *Controller) request(ctx context.Context, r *v1alpha1.MySQLRestore) (agentapi.BackupRequest, *v1alpha1.MySQLBackup, error) {
	bk, err := c.backups.MySQLBackups(r.Namespace).Get(backupName(r))
	if err != nil {
		return agentapi.BackupRequest{}, nil, fmt.Errorf("MySQLBackup %s: %w", backupName(r), err)
	}
	store, err := job.StorageConfig(ctx, c.kube, bk)
	if err != nil {
		return agentapi.BackupRequest{}, nil, err
	}
	return agentapi.BackupRequest{ID: string(r.UID), Method: string(r.Status.Method), Object: job.ObjectName(bk), Storage: store,
		SHA256: bk.Status.SHA256, TimeoutSeconds: int64(timeout(r).Seconds())}, bk, nil
}

// finalize ends a restore deleted while it ran as a failure (staging discarded on the
// members not yet restarted, fence lifted), then lets the deletion go on.
func (c *Controller) finalize(ctx context.Context, cached *v1alpha1.MySQLRestore) error {
	if cached.Status.Phase != v1alpha1.JobRunning {
		return c.release(ctx, cached)
	}
	if cached.Spec.Verify {
		return c.finish(ctx, cached, nil, false, "deleted while running")
	}
	cl, err := c.clusters.MySQLClusters(cached.Namespace).Get(cached.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		cl = nil
	} else if err != nil {
		return err
	}
	return c.abort(ctx, cached, cl, "deleted while running")
}

// backupName is the backup r restores: the one it started from, or spec.backupRef ("" for a
// target whose backup is not chosen yet).
func backupName(r *v1alpha1.MySQLRestore) string {
	if r.Status.Backup != "" {
		return r.Status.Backup
	}
	return r.Spec.BackupRef.Name
}

func (c *Controller) restoreClient(r *v1alpha1.MySQLRestore) mysqlv1alpha1.MySQLRestoreInterface {
	return c.mysql.MysqlopV1alpha1().MySQLRestores(r.Namespace)
}

func (c *Controller) clusterClient(cl *v1alpha1.MySQLCluster) mysqlv1alpha1.MySQLClusterInterface {
	return c.mysql.MysqlopV1alpha1().MySQLClusters(cl.Namespace)
}
