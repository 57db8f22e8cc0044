package ctrl

import (
	"context"
	"errors"
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
