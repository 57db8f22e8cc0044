// Package ctrl is the one controller runtime every mysqlop controller runs on: a rate-limited
// queue of object keys, sample-controller's worker loop, the informer event handlers that fill
// the queue, and the indexes that map a cluster to the objects waiting on it.
//
// A controller is a Sync function. Sync returns a Result and an error:
//
//   - an error retries the key with the queue's backoff (transient failures only; a
//     permanent one is a condition and an event, and a nil error);
//   - Result.RequeueAfter > 0 looks at the key again after that long (polling what no informer
//     reports, such as an agent's job);
//   - the zero Result and nil wait for the next event on the object or what it watches.
//
// Nothing else requeues: a Sync never touches the queue, so what brings a key back is visible
// in its return value and testable without a queue.
package ctrl

import (
	"context"
	"fmt"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/metrics"
)

// Result says when a key is to be looked at again after a Sync that returned no error.
type Result struct {
	// RequeueAfter, when positive, requeues the key after that long.
	RequeueAfter time.Duration
}

// After is the Result that requeues after d.
func After(d time.Duration) Result { return Result{RequeueAfter: d} }

// SyncFunc reconciles one key.
type SyncFunc func(ctx context.Context, key cache.ObjectName) (Result, error)

// Loop is a controller's queue and workers.
type Loop struct {
	name   string
	kind   string
	queue  workqueue.TypedRateLimitingInterface[cache.ObjectName]
	sync   SyncFunc
	synced []cache.InformerSynced
}

// New returns the loop of the controller name, reconciling objects of kind (the key's name in
// logs, e.g. "mysqlbackup") with sync.
func New(name, kind string, sync SyncFunc) *Loop {
	return &Loop{
		name: name, kind: kind, sync: sync,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: name}),
	}
}

// WaitFor adds informers whose caches must have synced before the first Sync.
func (l *Loop) WaitFor(synced ...cache.InformerSynced) { l.synced = append(l.synced, synced...) }

// Add queues key.
func (l *Loop) Add(key cache.ObjectName) { l.queue.Add(key) }

// Enqueue queues obj's key (or its tombstone's).
func (l *Loop) Enqueue(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	l.queue.Add(key)
}

// Len is the number of keys waiting.
func (l *Loop) Len() int { return l.queue.Len() }

// Pop takes the next key off the queue without syncing it, for tests of event handlers.
// It blocks while the queue is empty.
func (l *Loop) Pop() cache.ObjectName {
	key, _ := l.queue.Get()
	l.queue.Done(key)
	l.queue.Forget(key)
	return key
}

// Run waits for the caches, runs workers until ctx is done, then shuts the queue down: keys
// still queued are dropped (the next leader lists every object again).
func (l *Loop) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer l.queue.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", l.name)
	logger.Info("Waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), l.synced...) {
		return fmt.Errorf("%s controller: caches did not sync", l.name)
	}
	logger.Info("Starting workers", "count", workers)
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for l.processNextItem(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
	logger.Info("Shutting down workers")
	return nil
}

func (l *Loop) processNextItem(ctx context.Context) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	start := time.Now()
	logger := klog.FromContext(ctx).WithValues("controller", l.name, l.kind, key)
	res, err := l.sync(klog.NewContext(ctx, logger), key)
	metrics.ObserveReconcile(l.name, time.Since(start), err)
	l.finish(ctx, key, res, err)
	return true
}

// finish applies the outcome of one Sync of key to the queue.
func (l *Loop) finish(ctx context.Context, key cache.ObjectName, res Result, err error) {
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Reconcile failed, will retry", "controller", l.name, l.kind, key)
		l.queue.AddRateLimited(key)
		return
	}
	l.queue.Forget(key)
	if res.RequeueAfter > 0 {
		l.queue.AddAfter(key, res.RequeueAfter)
	}
}
