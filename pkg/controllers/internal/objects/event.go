package objects

import "k8s.io/client-go/tools/cache"

// FromEvent is an informer event handler's object as T. A deletion the informer saw only
// after a relist arrives as a tombstone holding the last object the cache knew; FromEvent
// looks through it, so that handlers act on deletions either way.
func FromEvent[T any](obj any) (T, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(T)
	return o, ok
}
