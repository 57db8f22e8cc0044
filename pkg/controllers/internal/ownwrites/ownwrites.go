// Package ownwrites remembers the objects a controller wrote until its informer cache has
// shown them. A reconcile that runs in between (another event brought the object back to the
// queue) then acts on what the controller wrote, not on an older cached copy: no create that
// answers AlreadyExists and no update that answers Conflict, which under a burst of new
// objects would cost requests and retries for nothing.
//
// Resource versions are compared as integers (k8s.io/apimachinery's resourceversion, the
// API server's documented ordering within one resource); where they cannot be, the cache is
// trusted as before.
package ownwrites

import (
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
)

// Tracker holds the writes of one controller that its caches have not shown yet.
type Tracker struct {
	mu sync.Mutex
	m  map[key]entry
	// ttl bounds how long a write is trusted over the cache: an informer event that never
	// comes (an object created and deleted between two relists) cannot hide the truth for
	// longer.
	ttl    time.Duration
	now    func() time.Time
	writes int
}

type key struct {
	typ       reflect.Type
	namespace string
	name      string
}

type entry struct {
	obj metav1.Object
	at  time.Time
}

// New returns a Tracker that trusts a write over the cache for at most ttl.
func New(ttl time.Duration) *Tracker {
	return &Tracker{m: map[key]entry{}, ttl: ttl, now: time.Now}
}

func keyOf(obj metav1.Object) key {
	return key{typ: reflect.TypeOf(obj), namespace: obj.GetNamespace(), name: obj.GetName()}
}

// newer reports whether resource version a is later than b; false when either cannot be
// compared.
func newer(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c > 0
}

// Wrote records obj as the API server returned it from a create, an update or a patch.
func (t *Tracker) Wrote(obj metav1.Object) {
	if r, ok := obj.(runtime.Object); ok {
		obj = r.DeepCopyObject().(metav1.Object) // callers may go on changing theirs
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.m[keyOf(obj)] = entry{obj: obj, at: now}
	if t.writes++; t.writes%256 == 0 {
		for k, e := range t.m {
			if now.Sub(e.at) > t.ttl {
				delete(t.m, k)
			}
		}
	}
}

// pending returns the recorded write of k unless it expired.
func (t *Tracker) pending(k key) (entry, bool) {
	e, ok := t.m[k]
	if ok && t.now().Sub(e.at) > t.ttl {
		delete(t.m, k)
		return entry{}, false
	}
	return e, ok
}

// Latest returns what to act on for the object namespace/name of type T: cached (found says
// whether the cache holds it), unless the controller wrote a version the cache has not shown
// yet. The result is shared: like a cached object, it must be copied before any change.
func Latest[T metav1.Object](t *Tracker, namespace, name string, cached T, found bool) (T, bool) {
	k := key{typ: reflect.TypeFor[T](), namespace: namespace, name: name}
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.pending(k)
	if !ok {
		return cached, found
	}
	if found && !newer(e.obj.GetResourceVersion(), cached.GetResourceVersion()) {
		delete(t.m, k) // the cache caught up
		return cached, found
	}
	return e.obj.(T), true
}

// Behind reports whether cached is older than what the controller last wrote of it.
func (t *Tracker) Behind(cached metav1.Object) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.pending(keyOf(cached))
	return ok && newer(e.obj.GetResourceVersion(), cached.GetResourceVersion())
}

// seen forgets the recorded write of obj once the cache shows obj at or past it.
func (t *Tracker) seen(obj any) {
	o, ok := objects.FromEvent[metav1.Object](obj)
	if !ok {
		return
	}
	k := keyOf(o)
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[k]; ok && !newer(e.obj.GetResourceVersion(), o.GetResourceVersion()) {
		delete(t.m, k)
	}
}

// Handler is the event handler to add to each informer whose objects the controller writes:
// it forgets writes the cache has shown (including by their deletion), so that the Tracker
// holds only what is in flight.
func (t *Tracker) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    t.seen,
		UpdateFunc: func(_, obj any) { t.seen(obj) },
		DeleteFunc: t.seen,
	}
}

// Len is the number of writes held, for tests and metrics.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
