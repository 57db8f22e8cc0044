package sqlobject

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Owner returns the name of the object, of self and others, that manages one server object
// (an account, a schema): the oldest, then the first by name. The others change nothing and
// never drop it, so that two objects never undo each other's work. One being deleted still
// owns it until it is gone: its finalizer may be dropping it.
func Owner[T metav1.Object](self T, others []T) string {
	owner := self
	for _, o := range others {
		ot, ct := o.GetCreationTimestamp(), owner.GetCreationTimestamp()
		if ot.Before(&ct) || ot.Equal(&ct) && o.GetName() < owner.GetName() {
			owner = o
		}
	}
	return owner.GetName()
}

// IndexedOwner is Owner over the objects that index holds under key of indexName and that
// same says manage the same server object as self.
func IndexedOwner[T metav1.Object](index cache.Indexer, indexName, key string, self T, same func(T) bool) string {
	objs, err := index.ByIndex(indexName, key)
	if err != nil {
		return self.GetName()
	}
	var others []T
	for _, o := range objs {
		if t, ok := o.(T); ok && same(t) {
			others = append(others, t)
		}
	}
	return Owner(self, others)
}
