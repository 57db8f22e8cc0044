// Package secretwatch watches exactly the Secrets that objects reference, one watch per
// referenced Secret (a field selector on its name), so that the operator caches no Secret
// nobody referenced and learns about a change to a referenced one at once.
//
// A cache of every Secret would put every credential of every watched namespace in the
// operator's memory and need list/watch on all of them; a label convention would make users
// label their Secrets. A watch per Secret costs one watch stream each, which is small for the
// tens to thousands of Secrets that database accounts reference.
package secretwatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Watcher keeps one informer per referenced Secret.
type Watcher struct {
	kube     kubernetes.Interface
	onChange func(secret cache.ObjectName)
	// syncTimeout bounds how long Get waits for a new watch's first list.
	syncTimeout time.Duration

	mu      sync.Mutex
	stop    <-chan struct{}
	watches map[cache.ObjectName]*watch
	// refs maps a referrer to the Secret it references.
	refs map[string]cache.ObjectName
}

type watch struct {
	informer cache.SharedIndexInformer
	stop     chan struct{}
	referrer map[string]bool
}

// New returns a Watcher that calls onChange when a watched Secret is added, changed or
// deleted. Call Start before Reference.
func New(kube kubernetes.Interface, onChange func(secret cache.ObjectName)) *Watcher {
	return &Watcher{
		kube: kube, onChange: onChange, syncTimeout: 10 * time.Second,
		watches: map[cache.ObjectName]*watch{}, refs: map[string]cache.ObjectName{},
	}
}

// Start records the channel whose closing stops every watch.
func (w *Watcher) Start(stop <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stop = stop
	go func() {
		<-stop
		w.mu.Lock()
		defer w.mu.Unlock()
		for name, wt := range w.watches {
			close(wt.stop)
			delete(w.watches, name)
		}
	}()
}

// Reference makes referrer reference secret, dropping what it referenced before, and starts
// a watch on secret if it has none.
func (w *Watcher) Reference(referrer string, secret cache.ObjectName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.refs[referrer]; ok {
		if old == secret {
			return
		}
		w.release(referrer, old)
	}
	w.refs[referrer] = secret
	wt, ok := w.watches[secret]
	if !ok {
		wt = w.startWatch(secret)
		w.watches[secret] = wt
	}
	wt.referrer[referrer] = true
}

// Forget drops referrer's reference; a Secret nobody references is no longer watched.
func (w *Watcher) Forget(referrer string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.refs[referrer]; ok {
		w.release(referrer, old)
		delete(w.refs, referrer)
	}
}

func (w *Watcher) release(referrer string, secret cache.ObjectName) {
	wt, ok := w.watches[secret]
	if !ok {
		return
	}
	delete(wt.referrer, referrer)
	if len(wt.referrer) == 0 {
		close(wt.stop)
		delete(w.watches, secret)
	}
}

func (w *Watcher) startWatch(secret cache.ObjectName) *watch {
	inf := coreinformers.NewFilteredSecretInformer(w.kube, secret.Namespace, 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", secret.Name).String()
		})
	notify := func(any) { w.onChange(secret) }
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify, UpdateFunc: func(_, obj any) { notify(obj) }, DeleteFunc: notify,
	})
	// Start's goroutine closes stop when the Watcher stops; release closes it before that.
	wt := &watch{informer: inf, stop: make(chan struct{}), referrer: map[string]bool{}}
	go inf.Run(wt.stop)
	return wt
}

// Get returns the watched Secret from its watch's cache, waiting for the watch's first list.
// found is false when the Secret does not exist. The Secret must be referenced.
func (w *Watcher) Get(ctx context.Context, secret cache.ObjectName) (s *corev1.Secret, found bool, err error) {
	w.mu.Lock()
	wt, ok := w.watches[secret]
	w.mu.Unlock()
	if !ok {
		return nil, false, fmt.Errorf("secret %s is not referenced", secret)
	}
	ctx, cancel := context.WithTimeout(ctx, w.syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), wt.informer.HasSynced) {
		return nil, false, fmt.Errorf("watch of secret %s did not sync", secret)
	}
	obj, exists, err := wt.informer.GetStore().GetByKey(secret.String())
	if err != nil || !exists {
		return nil, false, err
	}
	return obj.(*corev1.Secret), true, nil
}

// Watched returns how many Secrets are watched.
func (w *Watcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}
