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
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
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
	secrets  corelisters.SecretLister
	pods     corelisters.PodLister
	resolve  resources.Resolver
	recorder record.EventRecorder
	worker   sqlobject.Worker
	now      func() time.Time
	// bootstrap creates the MySQLRestore of clusters with spec.bootstrap.
	bootstrap sqlobject.Worker
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
		pods:     corelisters.NewPodLister(podInf.Indexer()),
		resolve:  resolve, recorder: recorder, now: time.Now,
	}
	c.worker = sqlobject.Worker{Name: Name, Queue: sqlobject.NewQueue(Name), Sync: c.sync,
		Synced: []cache.InformerSynced{restoreInf.HasSynced, backupInf.HasSynced, clusterInf.HasSynced, secretInf.HasSynced, podInf.HasSynced}}
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
	if cl, ok := obj.(*v1alpha1.MySQLCluster); ok && cl.Spec.Bootstrap != nil && cl.Annotations[v1alpha1.AnnotationBootstrapRestore] == "" {
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
	if cl.Spec.Bootstrap == nil || cl.Annotations[v1alpha1.AnnotationBootstrapRestore] != "" || cl.DeletionTimestamp != nil {
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
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationBootstrapRestore, name)
	if _, err := c.mysql.MysqlopV1alpha1().MySQLClusters(cl.Namespace).Patch(ctx, cl.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("mark cluster %s bootstrapped: %w", key, err)
	}
	c.recorder.Eventf(cl, corev1.EventTypeNormal, events.RestoreStarted, "Bootstrapping from MySQLBackup %s through MySQLRestore %s", cl.Spec.Bootstrap.FromBackup.Name, name)
	return nil
}

func (c *Controller) sync(ctx context.Context, key cache.ObjectName) error {
	cached, err := c.restores.MySQLRestores(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get restore %s: %w", key, err)
	}
	if cached.DeletionTimestamp != nil {
		return c.finalize(ctx, cached)
	}
	switch cached.Status.Phase {
	case v1alpha1.JobComplete, v1alpha1.JobFailed:
		return c.release(ctx, cached) // left behind when the process stopped in between
	case v1alpha1.JobRunning:
		return c.run(ctx, key, cached)
	}
	return c.start(ctx, key, cached)
}

// start checks that the restore can run and, when it can, records it as Running and stops
// the cluster's writes.
func (c *Controller) start(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore) error {
	bk, err := c.backups.MySQLBackups(key.Namespace).Get(cached.Spec.BackupRef.Name)
	if apierrors.IsNotFound(err) {
		return c.pending(ctx, cached, fmt.Sprintf("MySQLBackup %s not found", cached.Spec.BackupRef.Name))
	}
	if err != nil {
		return err
	}
	cl, err := c.clusters.MySQLClusters(key.Namespace).Get(cached.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		return c.pending(ctx, cached, fmt.Sprintf("MySQLCluster %s not found", cached.Spec.ClusterRef.Name))
	}
	if err != nil {
		return err
	}
	if why, failed := readyToStart(bk, cl, cached.Name); failed {
		return c.finish(ctx, cached, nil, false, why)
	} else if why != "" {
		c.worker.Queue.AddAfter(key, waitInterval)
		return c.pending(ctx, cached, why)
	}
	// Checked now, so that a restore never stops writes for a Secret that is not there.
	if _, err := backup.StorageConfig(ctx, c.kube, bk); err != nil {
		c.worker.Queue.AddAfter(key, waitInterval)
		return c.pending(ctx, cached, err.Error())
	}
	status := cached.Status.DeepCopy()
	status.Phase, status.Step, status.Method = v1alpha1.JobRunning, v1alpha1.RestoreFencing, backup.Method(bk)
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
	cached, err = sqlobject.AddFinalizer(ctx, cached, v1alpha1.FinalizerRestore, c.mysql.MysqlopV1alpha1().MySQLRestores(cached.Namespace).Update)
	if err != nil {
		return err
	}
	// Running first, then the fence: the Cluster controller honours the fence only for a
	// running restore, so the reverse order would have it lifted at once.
	if _, err := sqlobject.UpdateStatus(ctx, cached, status, restoreStatus, c.mysql.MysqlopV1alpha1().MySQLRestores(cached.Namespace).UpdateStatus); err != nil {
		return err
	}
	c.worker.Queue.AddAfter(key, pollInterval)
	return c.setFence(ctx, cl, cached.Name)
}

// run moves a running restore on by one step.
func (c *Controller) run(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore) error {
	cl, err := c.clusters.MySQLClusters(key.Namespace).Get(cached.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		return c.finish(ctx, cached, nil, false, fmt.Sprintf("MySQLCluster %s is gone", cached.Spec.ClusterRef.Name))
	}
	if err != nil {
		return err
	}
	if start := cached.Status.StartTime; start != nil && c.now().Sub(start.Time) > timeout(cached) {
		return c.abort(ctx, cached, cl, fmt.Sprintf("not finished within the timeout of %v (step %s)", timeout(cached), cached.Status.Step))
	}
	if cached.Status.Step == v1alpha1.RestoreResuming {
		return c.resuming(ctx, key, cached, cl)
	}
	if holder := cl.Annotations[restoreAnnotation]; holder != cached.Name {
		if holder != "" || cached.Status.Step != v1alpha1.RestoreFencing {
			// The fence was lifted (by hand, or by another restore's end) or is another's:
			// writes may have resumed, so this restore cannot vouch for what it loads.
			return c.abort(ctx, cached, cl, "the cluster's writes were resumed during the restore (annotation "+restoreAnnotation+" removed or replaced)")
		}
		return c.setFence(ctx, cl, cached.Name) // the write after the status update failed
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
	}
	return c.abort(ctx, cached, cl, fmt.Sprintf("unknown step %q", cached.Status.Step))
}

// setFence stops the cluster's writes on behalf of restore name.
func (c *Controller) setFence(ctx context.Context, cl *v1alpha1.MySQLCluster, name string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, restoreAnnotation, name)
	if _, err := c.mysql.MysqlopV1alpha1().MySQLClusters(cl.Namespace).Patch(ctx, cl.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
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
	annotations := map[string]any{}
	lift := cl.Annotations[restoreAnnotation] == r.Name
	if lift {
		annotations[restoreAnnotation] = nil
	}
	if restored := r.Name + "/" + string(r.UID); completed && r.Status.Method == v1alpha1.BackupPhysical && cl.Annotations[v1alpha1.AnnotationDataRestored] != restored {
		annotations[v1alpha1.AnnotationDataRestored] = restored
	}
	if len(annotations) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	if _, err := c.mysql.MysqlopV1alpha1().MySQLClusters(cl.Namespace).Patch(ctx, cl.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		// The Cluster controller lifts the fence of a finished restore itself.
		return fmt.Errorf("resume writes on cluster %s: %w", cl.Name, err)
	}
	if lift {
		c.recorder.Eventf(cl, corev1.EventTypeNormal, events.WritesResumed, "MySQLRestore %s ended: writes resume", r.Name)
	}
	return nil
}

// agentOf returns a client of member's agent.
func (c *Controller) agentOf(cl *v1alpha1.MySQLCluster, member string) (*agent.Client, error) {
	return backup.AgentClient(c.secrets, c.resolve, cl, member)
}

// request is the agent request of restore r from backup b.
func (c *Controller) request(ctx context.Context, r *v1alpha1.MySQLRestore) (agent.BackupRequest, *v1alpha1.MySQLBackup, error) {
	bk, err := c.backups.MySQLBackups(r.Namespace).Get(r.Spec.BackupRef.Name)
	if err != nil {
		return agent.BackupRequest{}, nil, fmt.Errorf("MySQLBackup %s: %w", r.Spec.BackupRef.Name, err)
	}
	store, err := backup.StorageConfig(ctx, c.kube, bk)
	if err != nil {
		return agent.BackupRequest{}, nil, err
	}
	return agent.BackupRequest{ID: string(r.UID), Method: string(r.Status.Method), Object: backup.ObjectName(bk), Storage: store,
		SHA256: bk.Status.SHA256, TimeoutSeconds: int64(timeout(r).Seconds())}, bk, nil
}

// fencing waits until clustering stopped the writes (the cluster is Fenced and its primary
// read-only), then hands the backup to the primary (logical) or to every member (physical).
func (c *Controller) fencing(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) error {
	if cl.Status.Phase != v1alpha1.ClusterFenced {
		c.worker.Queue.AddAfter(key, pollInterval)
		return nil
	}
	primary, err := c.agentOf(cl, cl.Status.Primary)
	if err != nil {
		return err
	}
	if st, err := primary.Status(ctx); err != nil || !st.ReadOnly {
		c.worker.Queue.AddAfter(key, pollInterval)
		return nil
	}
	req, bk, err := c.request(ctx, cached)
	if err != nil {
		c.worker.Queue.AddAfter(key, waitInterval)
		return c.progress(ctx, cached, nil, "Writes are stopped; waiting to start: "+err.Error())
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
				return fmt.Errorf("start restore %s on %s: %w", key, m, err)
			}
		}
		status.Step = v1alpha1.RestoreStaging
		msg = fmt.Sprintf("Writes are stopped; %s unpack %s", names(cached.Status.Members), bk.Status.Location)
	} else {
		if _, err := primary.StartRestore(ctx, req); err != nil {
			return fmt.Errorf("start restore %s on %s: %w", key, cl.Status.Primary, err)
		}
		status.Step, status.Member = v1alpha1.RestoreLoading, cl.Status.Primary
		msg = fmt.Sprintf("Writes are stopped; primary %s loads %s", cl.Status.Primary, bk.Status.Location)
	}
	c.recorder.Event(cached, corev1.EventTypeNormal, events.RestoreStarted, msg)
	klog.FromContext(ctx).Info("Restore started", "restore", klog.KObj(cached), "step", status.Step)
	c.worker.Queue.AddAfter(key, pollInterval)
	return c.progress(ctx, cached, status, msg)
}

// loading follows a logical restore on the primary.
func (c *Controller) loading(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) error {
	m := cached.Status.Member
	client, err := c.agentOf(cl, m)
	if err != nil {
		return err
	}
	st, err := client.Restore(ctx, string(cached.UID))
	switch {
	case errors.Is(err, agent.ErrBackupNotFound):
		return c.finish(ctx, cached, cl, false, "the agent of "+m+" restarted during the restore (the data may be partly loaded)")
	case err != nil:
		return fmt.Errorf("follow restore %s on %s: %w", key, m, err)
	case st.Phase == agent.BackupFailed:
		return c.finish(ctx, cached, cl, false, st.Error+" (the data may be partly loaded)")
	case st.Phase == agent.BackupRunning:
		c.worker.Queue.AddAfter(key, pollInterval)
		return nil
	}
	return c.resume(ctx, key, cached, cl, fmt.Sprintf("Loaded %s (%d bytes) through the primary %s", st.Location, st.Size, m))
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
		if errors.Is(err, agent.ErrBackupNotFound) {
			out[m] = answer{Lost: true}
			continue
		}
		out[m] = answer{State: st, Err: err}
	}
	return out
}

// staging waits until every member staged the physical backup, then commits it on each; a
// member that cannot stage it fails the restore with every member's data untouched.
func (c *Controller) staging(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) error {
	s := decideStaging(cached.Status.Members, c.ask(ctx, cl, cached))
	switch {
	case s.Failed != "":
		return c.abort(ctx, cached, cl, s.Failed)
	case !s.Done:
		c.worker.Queue.AddAfter(key, pollInterval)
		return c.progress(ctx, cached, nil, "Writes are stopped; staging the backup on "+names(s.Waiting))
	}
	for _, m := range cached.Status.Members {
		client, err := c.agentOf(cl, m)
		if err != nil {
			return err
		}
		if _, err := client.CommitRestore(ctx, string(cached.UID)); errors.Is(err, agent.ErrBackupNotFound) {
			return c.abort(ctx, cached, cl, m+" lost the staged restore before it was committed")
		} else if err != nil {
			return fmt.Errorf("commit restore %s on %s: %w", key, m, err)
		}
	}
	status := cached.Status.DeepCopy()
	status.Step = v1alpha1.RestoreRestarting
	c.worker.Queue.AddAfter(key, pollInterval)
	return c.progress(ctx, cached, status, fmt.Sprintf("Every member staged the backup; restarting them onto it, the primary %s first", cl.Status.Primary))
}

// restarting deletes member pods so that their init puts the restored datadir in place: the
// primary first, the others once it runs on the restored data.
func (c *Controller) restarting(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) error {
	r := decideRestarts(cached.Status.Members, cl.Status.Primary, c.ask(ctx, cl, cached), cached.Status.Restarted)
	switch {
	case r.Failed != "":
		return c.abort(ctx, cached, cl, r.Failed)
	case r.Done:
		status := cached.Status.DeepCopy()
		status.Step = v1alpha1.RestoreRejoining
		c.worker.Queue.AddAfter(key, pollInterval)
		return c.progress(ctx, cached, status, "Every member runs on the restored data; waiting for the replicas to follow "+cl.Status.Primary)
	}
	status := cached.Status.DeepCopy()
	var errs []error
	for _, m := range r.Delete {
		if err := c.deletePod(ctx, cl, m); err != nil {
			errs = append(errs, err)
			continue
		}
		status.Restarted = append(status.Restarted, m)
		c.recorder.Eventf(cl, corev1.EventTypeNormal, events.MemberRestarted, "Restarting member %s onto the data restored by MySQLRestore %s", m, cached.Name)
	}
	c.worker.Queue.AddAfter(key, pollInterval)
	err := c.progress(ctx, cached, status, "Writes are stopped; waiting for "+names(r.Waiting)+" to restart onto the restored data")
	return errors.Join(append(errs, err)...)
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
func (c *Controller) rejoining(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) error {
	status := map[string]*agent.StatusJSON{}
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
		c.worker.Queue.AddAfter(key, pollInterval)
		return c.progress(ctx, cached, nil, msg)
	}
	return c.resume(ctx, key, cached, cl, fmt.Sprintf("Every member runs on the data of MySQLBackup %s, at GTID %s", cached.Spec.BackupRef.Name, cached.Status.GTIDPosition))
}

// resume lifts the fence of a restore whose data is in place (msg says what was restored);
// it completes once the primary takes writes again.
func (c *Controller) resume(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster, msg string) error {
	status := cached.Status.DeepCopy()
	status.Step = v1alpha1.RestoreResuming
	setComplete(status, cached.Generation, metav1.ConditionUnknown, v1alpha1.ReasonRunning, msg+resumeSuffix)
	// The step before the fence: the Cluster controller lifts the fence of a resuming
	// restore itself, should the patch below fail.
	updated, err := sqlobject.UpdateStatus(ctx, cached, status, restoreStatus, c.mysql.MysqlopV1alpha1().MySQLRestores(cached.Namespace).UpdateStatus)
	if err != nil {
		return err
	}
	c.worker.Queue.AddAfter(key, pollInterval)
	return c.endFence(ctx, cl, updated, true)
}

const resumeSuffix = "; writes resume"

// resuming completes a restore once the primary is writable again.
func (c *Controller) resuming(ctx context.Context, key cache.ObjectName, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster) error {
	if err := c.endFence(ctx, cl, cached, true); err != nil {
		return err
	}
	if client, err := c.agentOf(cl, cl.Status.Primary); err == nil {
		if st, err := client.Status(ctx); err == nil && !st.ReadOnly {
			msg := "The backup is restored"
			if cond := meta.FindStatusCondition(cached.Status.Conditions, v1alpha1.ConditionComplete); cond != nil {
				msg = strings.TrimSuffix(cond.Message, resumeSuffix)
			}
			return c.finish(ctx, cached, cl, true, msg+"; writes resumed")
		}
	}
	c.worker.Queue.AddAfter(key, pollInterval)
	return nil
}

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

// finish records the outcome and lets writes resume.
func (c *Controller) finish(ctx context.Context, cached *v1alpha1.MySQLRestore, cl *v1alpha1.MySQLCluster, ok bool, msg string) error {
	status := cached.Status.DeepCopy()
	now := metav1.NewTime(c.now())
	status.CompletionTime = &now
	status.Step = ""
	if ok {
		status.Phase = v1alpha1.JobComplete
		setComplete(status, cached.Generation, metav1.ConditionTrue, v1alpha1.ReasonCompleted, msg)
		c.recorder.Event(cached, corev1.EventTypeNormal, events.RestoreCompleted, msg)
	} else {
		status.Phase = v1alpha1.JobFailed
		setComplete(status, cached.Generation, metav1.ConditionFalse, v1alpha1.ReasonFailed, msg)
		c.recorder.Event(cached, corev1.EventTypeWarning, events.RestoreFailed, msg)
	}
	klog.FromContext(ctx).Info("Restore finished", "restore", klog.KObj(cached), "phase", status.Phase)
	updated, err := sqlobject.UpdateStatus(ctx, cached, status, restoreStatus, c.mysql.MysqlopV1alpha1().MySQLRestores(cached.Namespace).UpdateStatus)
	if err != nil {
		return err
	}
	if err := c.endFence(ctx, cl, cached, ok); err != nil {
		return err
	}
	return c.release(ctx, updated)
}

// release removes the finalizer of a finished restore.
func (c *Controller) release(ctx context.Context, r *v1alpha1.MySQLRestore) error {
	if !sqlobject.HasFinalizer(r, v1alpha1.FinalizerRestore) {
		return nil
	}
	return sqlobject.RemoveFinalizer(ctx, r, v1alpha1.FinalizerRestore, c.mysql.MysqlopV1alpha1().MySQLRestores(r.Namespace).Update)
}

// finalize ends a restore deleted while it ran as a failure (staging discarded on the
// members not yet restarted, fence lifted), then lets the deletion go on.
func (c *Controller) finalize(ctx context.Context, cached *v1alpha1.MySQLRestore) error {
	if cached.Status.Phase != v1alpha1.JobRunning {
		return c.release(ctx, cached)
	}
	cl, err := c.clusters.MySQLClusters(cached.Namespace).Get(cached.Spec.ClusterRef.Name)
	if apierrors.IsNotFound(err) {
		cl = nil
	} else if err != nil {
		return err
	}
	return c.abort(ctx, cached, cl, "deleted while running")
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
		c.recorder.Event(cached, corev1.EventTypeNormal, events.RestoreWaiting, msg)
	}
	return c.writeStatus(ctx, cached, status)
}

func timeout(r *v1alpha1.MySQLRestore) time.Duration {
	if r.Spec.Timeout != nil && r.Spec.Timeout.Duration > 0 {
		return r.Spec.Timeout.Duration
	}
	return defaultTimeout
}

// setComplete sets the Complete condition and reports whether it changed.
func setComplete(st *v1alpha1.MySQLRestoreStatus, gen int64, status metav1.ConditionStatus, reason, msg string) bool {
	st.ObservedGeneration = gen
	return sqlobject.SetComplete(&st.Conditions, gen, status, reason, msg)
}

func (c *Controller) writeStatus(ctx context.Context, cached *v1alpha1.MySQLRestore, st *v1alpha1.MySQLRestoreStatus) error {
	return sqlobject.WriteStatus(ctx, cached, st, restoreStatus, c.mysql.MysqlopV1alpha1().MySQLRestores(cached.Namespace).UpdateStatus)
}

func restoreStatus(r *v1alpha1.MySQLRestore) *v1alpha1.MySQLRestoreStatus { return &r.Status }
