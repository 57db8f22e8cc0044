// Package backup is the MySQLBackup controller: it picks the member that takes a backup (a
// healthy replica before the primary), asks that member's agent to stream it to S3-compatible
// storage, follows it to Complete or Failed, and records member, location, size, checksum,
// GTID position and times. With deletionPolicy Delete a finalizer removes the stored object
// when the MySQLBackup is deleted; the default, Retain, keeps it.
//
// Phases: Pending (waiting for the cluster, a ready member, the storage Secret, or another
// backup of the cluster to finish: one runs at a time) -> Scheduled (member chosen) ->
// Running (the agent took it) -> Complete | Failed. A Complete or Failed backup is never
// run again: a new backup is a new object.
package backup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/agents"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/job"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	mysqlinformers "github.com/mysqlop/mysql-operator/pkg/generated/informers/externalversions"
	listers "github.com/mysqlop/mysql-operator/pkg/generated/listers/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/informerset"
	"github.com/mysqlop/mysql-operator/pkg/metrics"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// Name is the controller's name in logs, metrics and its workqueue.
const Name = "backup"

// Intervals of the controller's own re-checks (it is not told when an agent finishes, or
// when a storage Secret appears, since it does not watch user Secrets).
const (
	pollInterval   = 2 * time.Second
	waitInterval   = 10 * time.Second
	defaultTimeout = 2 * time.Hour
)

// Controller reconciles MySQLBackups.
type Controller struct {
	kube     kubernetes.Interface
	mysql    versioned.Interface
	backups  listers.MySQLBackupLister
	index    cache.Indexer
	clusters listers.MySQLClusterLister
	// dial makes clients of the members' agents.
	dial     agents.Dialer
	recorder record.EventRecorder
	loop     *ctrl.Loop
	now      func() time.Time

	// mu guards running: the backup each cluster runs, as this process started it (the cache
	// can lag behind the status it wrote).
	mu      sync.Mutex
	running map[string]cache.ObjectName
}

// New registers the controller's informers with set and returns the controller.
func New(kube kubernetes.Interface, client versioned.Interface, set *informerset.Set, recorder record.EventRecorder, resolve resources.Resolver) (*Controller, error) {
	backupInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLBackups().Informer()
	})
	clusterInf, secretInf := ctrl.ClusterCaches(set)
	if err := ctrl.IndexBackupsByCluster(backupInf); err != nil {
		return nil, err
	}
	c := &Controller{
		kube: kube, mysql: client,
		backups:  listers.NewMySQLBackupLister(backupInf.Indexer()),
		index:    backupInf.Indexer(),
		clusters: listers.NewMySQLClusterLister(clusterInf.Indexer()),
		dial:     agents.TLSDialer(corelisters.NewSecretLister(secretInf.Indexer()), resolve),
		recorder: recorder, now: time.Now,
		running: map[string]cache.ObjectName{},
	}
	c.loop = ctrl.New(Name, "mysqlbackup", c.Sync)
	c.loop.WaitFor(backupInf.HasSynced, clusterInf.HasSynced, secretInf.HasSynced)
	if err := backupInf.AddEventHandler(c.loop.ObjectHandler()); err != nil {
		return nil, fmt.Errorf("watch backups: %w", err)
	}
	if err := clusterInf.AddEventHandler(ctrl.ClusterHandler(c.loop.EnqueueIndexed(c.index, ctrl.BackupsByCluster))); err != nil {
		return nil, fmt.Errorf("watch clusters: %w", err)
	}
	return c, nil
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error { return c.loop.Run(ctx, workers) }

// Sync reconciles the MySQLBackup key.
func (c *Controller) Sync(ctx context.Context, key cache.ObjectName) (ctrl.Result, error) {
	cached, err := c.backups.MySQLBackups(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get backup %s: %w", key, err)
	}
	if cached.DeletionTimestamp != nil {
		return ctrl.Result{}, c.finalize(ctx, cached)
	}
	if cached.Spec.DeletionPolicy == v1alpha1.DeletionDelete {
		if cached, err = objects.AddFinalizer(ctx, cached, v1alpha1.FinalizerBackup, c.mysql.MysqlopV1alpha1().MySQLBackups(key.Namespace).Update); err != nil {
			return ctrl.Result{}, err
		}
	}
	switch cached.Status.Phase {
	case v1alpha1.JobComplete, v1alpha1.JobFailed:
		c.release(cached.Namespace+"/"+cached.Spec.ClusterRef.Name, key)
		if st := cached.Status; st.Phase == v1alpha1.JobComplete && st.StartTime != nil && st.CompletionTime != nil {
			metrics.ObserveBackup(cached.Namespace, cached.Spec.ClusterRef.Name, st.StartTime.Time, st.CompletionTime.Time, st.SizeBytes)
		}
		return ctrl.Result{}, nil
	case v1alpha1.JobRunning:
		return c.follow(ctx, key, cached)
	}
	// Pending, or Scheduled by a process that stopped before the agent answered: start (the
	// agent knows a backup it already took by its ID).
	return c.start(ctx, key, cached)
}

// start picks a member and hands the backup to its agent.
func (c *Controller) start(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLBackup) (ctrl.Result, error) {
	cl, err := c.clusters.MySQLClusters(cached.Namespace).Get(cached.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		return ctrl.Result{}, c.pending(ctx, cached, fmt.Sprintf("MySQLCluster %s not found", cached.Spec.ClusterRef.Name))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	member, why := pickMember(cl, cached.Spec.Member)
	if member == "" {
		return ctrl.After(waitInterval), c.pending(ctx, cached, why)
	}
	store, err := job.StorageConfig(ctx, c.kube, cached)
	if err != nil {
		return ctrl.After(waitInterval), c.pending(ctx, cached, err.Error())
	}
	client, err := c.dial(cl, member)
	if err != nil {
		// The cluster's credentials Secret is not cached yet; nothing else wakes this backup.
		return ctrl.After(waitInterval), c.pending(ctx, cached, err.Error())
	}
	clusterKey := cached.Namespace + "/" + cl.Name
	if other, busy := c.claim(clusterKey, key); busy {
		return ctrl.After(pollInterval), c.pending(ctx, cached, fmt.Sprintf("waiting for MySQLBackup %s of the cluster to finish: one backup runs at a time", other.Name))
	}
	scheduled := cached.Status.DeepCopy()
	scheduled.Phase, scheduled.Member = v1alpha1.JobScheduled, member
	setComplete(scheduled, cached.Generation, metav1.ConditionUnknown, v1alpha1.ReasonWaiting, "Scheduled on member "+member)
	cached, err = objects.UpdateStatus(ctx, cached, scheduled, backupStatus, c.mysql.MysqlopV1alpha1().MySQLBackups(cached.Namespace).UpdateStatus)
	if err != nil {
		c.release(clusterKey, key)
		return ctrl.Result{}, err
	}
	req := agentapi.BackupRequest{ID: string(cached.UID), Method: string(job.Method(cached)), Object: job.ObjectName(cached), Storage: store,
		TimeoutSeconds: int64(timeout(cached).Seconds())}
	st, err := client.StartBackup(ctx, req)
	if err != nil {
		c.release(clusterKey, key)
		_ = c.pending(ctx, cached, fmt.Sprintf("member %s did not take the backup: %v", member, err))
		return ctrl.Result{}, fmt.Errorf("start backup %s on %s: %w", key, member, err)
	}
	events.BackupStarted.Record(c.recorder, cached, member, job.Method(cached), st.Location)
	klog.FromContext(ctx).Info("Backup started", "backup", klog.KObj(cached), "member", member, "location", st.Location)
	status := cached.Status.DeepCopy()
	status.Phase, status.Member, status.Location = v1alpha1.JobRunning, member, st.Location
	start := metav1.NewTime(st.StartTime)
	status.StartTime = &start
	setComplete(status, cached.Generation, metav1.ConditionUnknown, v1alpha1.ReasonRunning, "Member "+member+" is taking the backup")
	return ctrl.After(pollInterval), c.writeStatus(ctx, cached, status)
}

// claim records key as the backup cluster runs, unless another backup of it runs (by this
// process's record or by the cache); it returns that one.
func (c *Controller) claim(cluster string, key cache.ObjectName) (cache.ObjectName, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if other, ok := c.running[cluster]; ok && other != key {
		if b, err := c.backups.MySQLBackups(other.Namespace).Get(other.Name); err == nil && !finished(b) {
			return other, true
		}
	}
	objs, _ := c.index.ByIndex(ctrl.BackupsByCluster, cluster)
	for _, o := range objs {
		b := o.(*v1alpha1.MySQLBackup)
		if b.Name != key.Name && (b.Status.Phase == v1alpha1.JobRunning || b.Status.Phase == v1alpha1.JobScheduled) {
			return cache.MetaObjectToName(b), true
		}
	}
	c.running[cluster] = key
	return cache.ObjectName{}, false
}

// release forgets key as its cluster's running backup.
func (c *Controller) release(cluster string, key cache.ObjectName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[cluster] == key {
		delete(c.running, cluster)
	}
}

func finished(b *v1alpha1.MySQLBackup) bool {
	return b.DeletionTimestamp != nil || b.Status.Phase == v1alpha1.JobComplete || b.Status.Phase == v1alpha1.JobFailed
}

// follow polls the agent until the backup ends, or fails it past its timeout or when the
// agent lost it (it restarted).
func (c *Controller) follow(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLBackup) (ctrl.Result, error) {
	status := cached.Status.DeepCopy()
	cl, err := c.clusters.MySQLClusters(cached.Namespace).Get(cached.Spec.ClusterRef.Name)
	if err != nil {
		return ctrl.Result{}, c.fail(ctx, cached, status, fmt.Sprintf("MySQLCluster %s is gone", cached.Spec.ClusterRef.Name))
	}
	if status.StartTime != nil && c.now().Sub(status.StartTime.Time) > timeout(cached) {
		return ctrl.Result{}, c.fail(ctx, cached, status, fmt.Sprintf("not finished within the timeout of %v", timeout(cached)))
	}
	client, err := c.dial(cl, status.Member)
	if err != nil {
		return ctrl.Result{}, c.fail(ctx, cached, status, err.Error())
	}
	st, failed, err := poll(ctx, client, string(cached.UID))
	switch {
	case err != nil:
		// The agent may be restarting; the timeout bounds how long this is retried.
		return ctrl.Result{}, fmt.Errorf("follow backup %s on %s: %w", key, status.Member, err)
	case failed != "":
		return ctrl.Result{}, c.fail(ctx, cached, status, failed)
	case st == nil:
		return ctrl.After(pollInterval), nil
	}
	status.Phase = v1alpha1.JobComplete
	status.SizeBytes, status.SHA256, status.GTIDPosition, status.Location = st.Size, st.SHA256, st.GTID, st.Location
	if st.CompletionTime != nil {
		t := metav1.NewTime(*st.CompletionTime)
		status.CompletionTime = &t
	}
	msg := fmt.Sprintf("Stored %d bytes at %s, consistent with GTID %s", st.Size, st.Location, st.GTID)
	setComplete(status, cached.Generation, metav1.ConditionTrue, v1alpha1.ReasonCompleted, msg)
	events.BackupCompleted.Record(c.recorder, cached, st.Size, st.Location, st.GTID)
	c.release(cached.Namespace+"/"+cached.Spec.ClusterRef.Name, key)
	return ctrl.Result{}, c.writeStatus(ctx, cached, status)
}

func (c *Controller) fail(ctx context.Context, cached *v1alpha1.MySQLBackup, status *v1alpha1.MySQLBackupStatus, msg string) error {
	status.Phase = v1alpha1.JobFailed
	now := metav1.NewTime(c.now())
	status.CompletionTime = &now
	setComplete(status, cached.Generation, metav1.ConditionFalse, v1alpha1.ReasonFailed, msg)
	events.BackupFailed.Record(c.recorder, cached, msg)
	c.release(cached.Namespace+"/"+cached.Spec.ClusterRef.Name, cache.MetaObjectToName(cached))
	return c.writeStatus(ctx, cached, status)
}

func (c *Controller) pending(ctx context.Context, cached *v1alpha1.MySQLBackup, msg string) error {
	status := cached.Status.DeepCopy()
	status.Phase = v1alpha1.JobPending
	if setComplete(status, cached.Generation, metav1.ConditionUnknown, v1alpha1.ReasonWaiting, msg) {
		events.BackupWaiting.Record(c.recorder, cached, msg)
	}
	return c.writeStatus(ctx, cached, status)
}

// finalize deletes the stored object of a backup with deletionPolicy Delete, then releases
// the finalizer. A backup that never stored anything has nothing to delete.
func (c *Controller) finalize(ctx context.Context, cached *v1alpha1.MySQLBackup) error {
	if !objects.HasFinalizer(cached, v1alpha1.FinalizerBackup) {
		return nil
	}
	if cached.Status.Phase == v1alpha1.JobComplete || cached.Status.Phase == v1alpha1.JobRunning {
		cfg, err := job.StorageConfig(ctx, c.kube, cached)
		if err != nil {
			return fmt.Errorf("delete stored backup of %s: %w", klog.KObj(cached), err)
		}
		store, err := storage.New(cfg.Config())
		if err != nil {
			return err
		}
		if err := store.Delete(ctx, job.ObjectName(cached)); err != nil {
			return err
		}
		events.BackupDeleted.Record(c.recorder, cached, cached.Status.Location)
	}
	return objects.RemoveFinalizers(ctx, cached, c.mysql.MysqlopV1alpha1().MySQLBackups(cached.Namespace).Update, v1alpha1.FinalizerBackup)
}

// poll asks the agent about backup id. It returns the finished state; or failed, the reason
// the backup failed or was lost (the agent restarted); or neither while it runs.
func poll(ctx context.Context, client agents.Client, id string) (done *agentapi.BackupState, failed string, err error) {
	st, err := client.Backup(ctx, id)
	switch {
	case errors.Is(err, agentapi.ErrBackupNotFound):
		return nil, "the agent restarted during the backup", nil
	case err != nil:
		return nil, "", err
	case st.Phase == agentapi.BackupFailed:
		return nil, st.Error, nil
	case st.Phase == agentapi.BackupRunning:
		return nil, "", nil
	}
	return st, "", nil
}

func timeout(b *v1alpha1.MySQLBackup) time.Duration {
	return job.Timeout(b.Spec.Timeout, defaultTimeout)
}

// setComplete sets the Complete condition and reports whether its status or reason changed.
func setComplete(st *v1alpha1.MySQLBackupStatus, gen int64, status metav1.ConditionStatus, reason, msg string) bool {
	st.ObservedGeneration = gen
	return job.SetComplete(&st.Conditions, gen, status, reason, msg)
}

func (c *Controller) writeStatus(ctx context.Context, cached *v1alpha1.MySQLBackup, st *v1alpha1.MySQLBackupStatus) error {
	return objects.WriteStatus(ctx, cached, st, backupStatus, c.mysql.MysqlopV1alpha1().MySQLBackups(cached.Namespace).UpdateStatus)
}

func backupStatus(b *v1alpha1.MySQLBackup) *v1alpha1.MySQLBackupStatus { return &b.Status }
