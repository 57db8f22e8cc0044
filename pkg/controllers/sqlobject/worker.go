package sqlobject

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	mysqlinformers "github.com/mysqlop/mysql-operator/pkg/generated/informers/externalversions"
	"github.com/mysqlop/mysql-operator/pkg/informerset"
	"github.com/mysqlop/mysql-operator/pkg/metrics"
)

// Worker is sample-controller's worker loop over a rate-limited queue of object keys: Forget
// on success, AddRateLimited on error.
type Worker struct {
	// Name is the controller's name in logs, metrics and the queue.
	Name string
	// Queue holds the keys to reconcile.
	Queue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// Sync reconciles one key; an error retries it with backoff.
	Sync func(ctx context.Context, key cache.ObjectName) error
	// Synced are the informers to wait for before the first sync.
	Synced []cache.InformerSynced
}

// NewQueue returns the controller rate-limited queue named name.
func NewQueue(name string) workqueue.TypedRateLimitingInterface[cache.ObjectName] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: name})
}

// Run waits for the caches, runs workers until ctx is done, then shuts the queue down.
func (w *Worker) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer w.Queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", w.Name)
	logger.Info("Waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), w.Synced...) {
		return fmt.Errorf("%s controller: caches did not sync", w.Name)
	}
	logger.Info("Starting workers", "count", workers)
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for w.processNextItem(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
	logger.Info("Shutting down workers")
	return nil
}

func (w *Worker) processNextItem(ctx context.Context) bool {
	key, quit := w.Queue.Get()
	if quit {
		return false
	}
	defer w.Queue.Done(key)
	start := time.Now()
	logger := klog.FromContext(ctx).WithValues("controller", w.Name, "object", key)
	err := w.Sync(klog.NewContext(ctx, logger), key)
	metrics.ObserveReconcile(w.Name, time.Since(start), err)
	if err == nil {
		w.Queue.Forget(key)
		return true
	}
	utilruntime.HandleErrorWithContext(ctx, err, "Reconcile failed, will retry", "controller", w.Name, "object", key)
	w.Queue.AddRateLimited(key)
	return true
}

// Enqueue adds obj's key (or its tombstone's) to q.
func Enqueue(q workqueue.TypedRateLimitingInterface[cache.ObjectName], obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	q.Add(key)
}

// ClusterHandler calls f with a MySQLCluster's namespace/name when it appears, goes, starts
// being deleted, changes primary, has its writes stopped or resumed by a restore, or has its
// data replaced by one: the moments objects waiting on it can go on or must be set again.
func ClusterHandler(f func(key string)) cache.ResourceEventHandler {
	call := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			f(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: call,
		UpdateFunc: func(old, obj any) {
			o, n := old.(*v1alpha1.MySQLCluster), obj.(*v1alpha1.MySQLCluster)
			// The phase leaves Fenced only once clustering made the primary writable again.
			fenced := func(c *v1alpha1.MySQLCluster) bool { return c.Status.Phase == v1alpha1.ClusterFenced }
			if o.Status.Primary != n.Status.Primary || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
				fenced(o) != fenced(n) || o.Annotations[v1alpha1.AnnotationDataRestored] != n.Annotations[v1alpha1.AnnotationDataRestored] {
				call(obj)
			}
		},
		DeleteFunc: call,
	}
}

// ObjectHandler enqueues a watched object on add and delete, and on updates that need a
// reconcile: spec (generation), deletion or finalizer changes, and resyncs (an unchanged
// resourceVersion). Status writes, which come back as updates, are skipped.
func ObjectHandler(q workqueue.TypedRateLimitingInterface[cache.ObjectName]) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { Enqueue(q, obj) },
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(metav1.Object)
			n, ok2 := obj.(metav1.Object)
			if !ok1 || !ok2 || o.GetResourceVersion() == n.GetResourceVersion() || o.GetGeneration() != n.GetGeneration() ||
				(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) ||
				!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) {
				Enqueue(q, obj)
			}
		},
		DeleteFunc: func(obj any) { Enqueue(q, obj) },
	}
}

// ClusterCaches registers and returns the informers every controller of cluster-bound
// objects reads: MySQLClusters, and the operator's own Secrets (clusters' credentials).
func ClusterCaches(set *informerset.Set) (clusters, secrets informerset.Informers) {
	clusters = set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLClusters().Informer()
	})
	secrets = set.Kube(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Secrets().Informer()
	})
	return clusters, secrets
}

// AddIndex adds the index name to every informer of infs: the namespace/name that value
// returns for an object ("" indexes nothing).
func AddIndex(infs informerset.Informers, name string, value func(obj any) (namespace, ref string)) error {
	for _, inf := range infs {
		err := inf.AddIndexers(cache.Indexers{name: func(obj any) ([]string, error) {
			ns, ref := value(obj)
			if ref == "" {
				return nil, nil
			}
			return []string{ns + "/" + ref}, nil
		}})
		if err != nil {
			return fmt.Errorf("add index %s: %w", name, err)
		}
	}
	return nil
}

// EnqueueIndexed returns a function that enqueues into q every object of indexer whose
// index value is its argument.
func EnqueueIndexed(q workqueue.TypedRateLimitingInterface[cache.ObjectName], indexer cache.Indexer, index string) func(value string) {
	return func(value string) {
		objs, err := indexer.ByIndex(index, value)
		if err != nil {
			return
		}
		for _, o := range objs {
			Enqueue(q, o)
		}
	}
}
