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
	"sync"
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

// urgentFor is how long a key given to AddUrgent keeps jumping the queue. The syncs that
// finish an urgent change are queued by informer events (the operator's own writes coming
// back) through Add, not AddUrgent: they must jump too.
const urgentFor = 30 * time.Second

// Loop is a controller's queue and workers.
type Loop struct {
	name  string
	kind  string
	queue workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// urgent holds keys that must not wait behind the others (a failover's cluster during a
	// burst of new clusters); one worker of its own serves it.
	urgent workqueue.TypedRateLimitingInterface[cache.ObjectName]
	// urgentUntil is when each urgent key goes back to the main queue.
	urgentMu    sync.Mutex
	urgentUntil map[cache.ObjectName]time.Time
	// busy keeps two workers from syncing one key at once, as the workqueue does within one
	// queue.
	busy   keyLocks
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
		urgent: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: name + "_urgent"}),
		urgentUntil: map[cache.ObjectName]time.Time{},
		busy:        keyLocks{held: map[cache.ObjectName]chan struct{}{}},
	}
}

// WaitFor adds informers whose caches must have synced before the first Sync.
func (l *Loop) WaitFor(synced ...cache.InformerSynced) { l.synced = append(l.synced, synced...) }

// Add queues key.
func (l *Loop) Add(key cache.ObjectName) { l.queueFor(key).Add(key) }

// queueFor is the queue key goes to: the urgent one while it is urgent.
func (l *Loop) queueFor(key cache.ObjectName) workqueue.TypedRateLimitingInterface[cache.ObjectName] {
	if l.isUrgent(key) {
		return l.urgent
	}
	return l.queue
}

// AddUrgent queues key ahead of the main queue, and does so again for every Add of key in the
// next urgentFor: for a change that must not wait for the keys before it, such as a cluster's
// new primary while hundreds of new clusters wait for their children.
func (l *Loop) AddUrgent(key cache.ObjectName) {
	l.urgentMu.Lock()
	now := time.Now()
	// Forget the keys whose time is up here, not in isUrgent, which every Add calls.
	for k, until := range l.urgentUntil {
		if now.After(until) {
			delete(l.urgentUntil, k)
		}
	}
	l.urgentUntil[key] = now.Add(urgentFor)
	l.urgentMu.Unlock()
	l.urgent.Add(key)
}

// isUrgent says whether key was given to AddUrgent less than urgentFor ago.
func (l *Loop) isUrgent(key cache.ObjectName) bool {
	l.urgentMu.Lock()
	defer l.urgentMu.Unlock()
	until, ok := l.urgentUntil[key]
	return ok && !time.Now().After(until)
}

// Enqueue queues obj's key (or its tombstone's).
func (l *Loop) Enqueue(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	l.Add(key)
}

// Len is the number of keys waiting, in both queues.
func (l *Loop) Len() int { return l.queue.Len() + l.urgent.Len() }

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
	defer l.urgent.ShutDown()
	logger := klog.FromContext(ctx).WithValues("controller", l.name)
	logger.Info("Waiting for informer caches to sync")
	if !cache.WaitForCacheSync(ctx.Done(), l.synced...) {
		return fmt.Errorf("%s controller: caches did not sync", l.name)
	}
	logger.Info("Starting workers", "count", workers)
	for range workers {
		go l.work(ctx, l.queue)
	}
	go l.work(ctx, l.urgent)
	<-ctx.Done()
	logger.Info("Shutting down workers")
	return nil
}

// work syncs the keys of q, one at a time, until q shuts down.
func (l *Loop) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[cache.ObjectName]) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		for l.processNext(ctx, q) {
		}
	}, time.Second)
}

// processNext syncs the next key of q; false once q shut down.
func (l *Loop) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[cache.ObjectName]) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	l.syncKey(ctx, key)
	return true
}

// syncKey syncs key once no other worker is syncing it.
func (l *Loop) syncKey(ctx context.Context, key cache.ObjectName) {
	if !l.busy.lock(ctx, key) {
		return
	}
	defer l.busy.unlock(key)
	start := time.Now()
	logger := klog.FromContext(ctx).WithValues("controller", l.name, l.kind, key)
	res, err := l.sync(klog.NewContext(ctx, logger), key)
	metrics.ObserveReconcile(l.name, time.Since(start), err)
	l.finish(ctx, key, res, err)
}

// finish applies the outcome of one Sync of key to the queue.
func (l *Loop) finish(ctx context.Context, key cache.ObjectName, res Result, err error) {
	q := l.queueFor(key)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Reconcile failed, will retry", "controller", l.name, l.kind, key)
		q.AddRateLimited(key)
		return
	}
	l.queue.Forget(key)
	l.urgent.Forget(key)
	if res.RequeueAfter > 0 {
		q.AddAfter(key, res.RequeueAfter)
	}
}

// keyLocks is a lock per key.
type keyLocks struct {
	mu sync.Mutex
	// held maps a locked key to a channel closed when it is unlocked.
	held map[cache.ObjectName]chan struct{}
}

// lock locks key, waiting while another holds it; false when ctx ended first.
func (k *keyLocks) lock(ctx context.Context, key cache.ObjectName) bool {
	for {
		k.mu.Lock()
		ch, ok := k.held[key]
		if !ok {
			k.held[key] = make(chan struct{})
			k.mu.Unlock()
			return true
		}
		k.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// unlock unlocks key.
func (k *keyLocks) unlock(key cache.ObjectName) {
	k.mu.Lock()
	ch := k.held[key]
	delete(k.held, key)
	k.mu.Unlock()
	close(ch)
}
