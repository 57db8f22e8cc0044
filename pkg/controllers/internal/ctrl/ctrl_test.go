package ctrl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
)

// A Sync's return value is the only thing that brings a key back: an error retries it, a
// RequeueAfter looks again after that long, and the zero Result forgets it.
func TestLoopRequeuesOnlyWhatSyncAsksFor(t *testing.T) {
	key := cache.ObjectName{Namespace: "ns", Name: "x"}
	var calls atomic.Int32
	results := []struct {
		res Result
		err error
	}{
		{Result{}, errors.New("transient")},
		{After(20 * time.Millisecond), nil},
		{Result{}, nil},
	}
	l := New("test", "object", func(_ context.Context, k cache.ObjectName) (Result, error) {
		if k != key {
			t.Errorf("synced %v", k)
		}
		n := int(calls.Add(1))
		if n > len(results) {
			return Result{}, nil
		}
		return results[n-1].res, results[n-1].err
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Run(ctx, 1) }()
	l.Add(key)
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d syncs, want 3 (error, requeue, done)", n)
	}
	time.Sleep(200 * time.Millisecond)
	if n := calls.Load(); n != 3 {
		t.Errorf("%d syncs after the zero Result, want no more", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Run refuses to start workers on caches that never sync.
func TestLoopWaitsForCaches(t *testing.T) {
	l := New("test", "object", func(context.Context, cache.ObjectName) (Result, error) { return Result{}, nil })
	l.WaitFor(func() bool { return false })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := l.Run(ctx, 1); err == nil {
		t.Fatal("Run started without synced caches")
	}
}

// An urgent key is synced before the keys queued ahead of it, and a key in both queues is
// never synced by two workers at once.
func TestLoopUrgentKeyJumpsTheQueue(t *testing.T) {
	var (
		mu          sync.Mutex
		order       []string
		running     = map[string]int{}
		concurrency int
	)
	l := New("test", "object", func(_ context.Context, k cache.ObjectName) (Result, error) {
		mu.Lock()
		order = append(order, k.Name)
		running[k.Name]++
		concurrency = max(concurrency, running[k.Name])
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		running[k.Name]--
		mu.Unlock()
		return Result{}, nil
	})
	for i := range 20 {
		l.Add(cache.ObjectName{Namespace: "ns", Name: fmt.Sprintf("new-%d", i)})
	}
	both := cache.ObjectName{Namespace: "ns", Name: "both"}
	l.Add(both)
	l.AddUrgent(cache.ObjectName{Namespace: "ns", Name: "failover"})
	l.AddUrgent(both)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Run(ctx, 1) }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n >= 23 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if i := slices.Index(order, "failover"); i < 0 || i > 2 {
		t.Errorf("urgent key synced at position %d of %v, want among the first 3", i, order)
	}
	if concurrency != 1 {
		t.Errorf("a key was synced by %d workers at once", concurrency)
	}
	// Within urgentFor, a plain Add of an urgent key goes to the urgent queue too.
	if !l.isUrgent(both) || l.isUrgent(cache.ObjectName{Namespace: "ns", Name: "new-0"}) {
		t.Error("urgency not kept for the urgent keys only")
	}
}
