// Package informerset builds the operator's shared informer factories for a set of namespaces
// and merges their caches, so that a controller reads one lister whether the operator watches
// every namespace, one, or a list of them.
//
// Kubernetes has no server-side filter for "namespace in (a, b)", and a cluster-wide watch would
// need cluster-wide RBAC, so a list of namespaces means one factory per namespace. Children of
// clusters are further filtered by the app.kubernetes.io/managed-by label, so the operator
// caches only its own Secrets, Pods and so on; Trim keeps only what the controllers read.
package informerset

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	mysqlinformers "github.com/mysqlop/mysql-operator/pkg/generated/informers/externalversions"
)

// Set is the informer factories of an operator process, one pair per watched namespace.
type Set struct {
	// Namespaces are the watched namespaces; [""] means all.
	Namespaces []string
	kube       []kubeinformers.SharedInformerFactory
	mysql      []mysqlinformers.SharedInformerFactory
}

// New returns factories for namespaces (empty or [""] means all). Kube factories list only
// objects matching childSelector, mysqlop factories only custom resources matching
// targetSelector (empty: everything): the API server filters, so an operator never even
// caches what another operator's selector owns.
func New(kube kubernetes.Interface, mysql versioned.Interface, namespaces []string, resync time.Duration, childSelector, targetSelector string) *Set {
	ns := slices.Compact(slices.Sorted(slices.Values(namespaces)))
	if len(ns) == 0 || slices.Contains(ns, metav1.NamespaceAll) {
		ns = []string{metav1.NamespaceAll}
	}
	s := &Set{Namespaces: ns}
	for _, n := range ns {
		s.kube = append(s.kube, kubeinformers.NewSharedInformerFactoryWithOptions(kube, resync,
			kubeinformers.WithNamespace(n),
			kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = childSelector }),
			kubeinformers.WithTransform(Trim)))
		s.mysql = append(s.mysql, mysqlinformers.NewSharedInformerFactoryWithOptions(mysql, resync,
			mysqlinformers.WithNamespace(n),
			mysqlinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = targetSelector }),
			mysqlinformers.WithTransform(Trim)))
	}
	return s
}

// StripManagedFields drops metadata.managedFields before an object enters a cache: no
// controller reads them, and they are often the largest part of a small object's metadata.
// Writing back an object without them is safe: the API server keeps the stored managedFields
// when an update carries none.
func StripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// Trim is the transform of every cache: StripManagedFields, and Pods cut down to what the
// controllers read of them, which is most of a large cache's memory. A cached Pod keeps its
// metadata, its containers' names and images, and its status conditions and phase; the rest of
// its spec and status (volumes, env, probes, resources, container statuses, IPs, ...) is
// dropped. Pods are never written back from the cache (only patched), and a controller that
// needs more of a pod must read it from the API server or extend this list.
func Trim(obj any) (any, error) {
	obj, _ = StripManagedFields(obj)
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	containers := make([]corev1.Container, len(p.Spec.Containers))
	for i, c := range p.Spec.Containers {
		containers[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	p.Spec = corev1.PodSpec{Containers: containers}
	p.Status = corev1.PodStatus{Phase: p.Status.Phase, Conditions: p.Status.Conditions}
	return p, nil
}

// Kube returns the informer that get makes from each namespace's kube factory. Calling it
// registers the informer, so call it before Start.
func (s *Set) Kube(get func(kubeinformers.SharedInformerFactory) cache.SharedIndexInformer) Informers {
	out := make(Informers, 0, len(s.kube))
	for _, f := range s.kube {
		out = append(out, get(f))
	}
	return out
}

// MySQL returns the informer that get makes from each namespace's mysqlop factory.
func (s *Set) MySQL(get func(mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer) Informers {
	out := make(Informers, 0, len(s.mysql))
	for _, f := range s.mysql {
		out = append(out, get(f))
	}
	return out
}

// Start starts every informer registered so far.
func (s *Set) Start(stop <-chan struct{}) {
	for _, f := range s.kube {
		f.Start(stop)
	}
	for _, f := range s.mysql {
		f.Start(stop)
	}
}

// WaitForCacheSync blocks until every started informer has synced, or stop is closed.
func (s *Set) WaitForCacheSync(stop <-chan struct{}) error {
	for _, f := range s.kube {
		for t, ok := range f.WaitForCacheSync(stop) {
			if !ok {
				return fmt.Errorf("cache of %v did not sync", t)
			}
		}
	}
	for _, f := range s.mysql {
		for t, ok := range f.WaitForCacheSync(stop) {
			if !ok {
				return fmt.Errorf("cache of %v did not sync", t)
			}
		}
	}
	return nil
}

// Shutdown waits for the factories' informers to stop. Close the stop channel given to Start
// first: Shutdown blocks until the informers noticed it.
func (s *Set) Shutdown() {
	for _, f := range s.kube {
		f.Shutdown()
	}
	for _, f := range s.mysql {
		f.Shutdown()
	}
}

// Informers are the per-namespace informers of one resource.
type Informers []cache.SharedIndexInformer

// AddEventHandler adds h to every informer.
func (in Informers) AddEventHandler(h cache.ResourceEventHandler) error {
	for _, i := range in {
		if _, err := i.AddEventHandler(h); err != nil {
			return fmt.Errorf("add event handler: %w", err)
		}
	}
	return nil
}

// HasSynced reports whether every informer has synced.
func (in Informers) HasSynced() bool {
	for _, i := range in {
		if !i.HasSynced() {
			return false
		}
	}
	return true
}

// Indexer returns one read-only indexer over every informer's cache, for generated listers.
func (in Informers) Indexer() cache.Indexer {
	if len(in) == 1 {
		return in[0].GetIndexer()
	}
	m := &merged{}
	for _, i := range in {
		m.parts = append(m.parts, i.GetIndexer())
	}
	m.Indexer = m.parts[0]
	return m
}

var errReadOnly = errors.New("merged indexer is read-only")

// merged routes reads by namespace to the indexer that holds it and concatenates the rest.
// The embedded Indexer only supplies methods listers never call.
type merged struct {
	cache.Indexer
	parts []cache.Indexer
}

func (m *merged) Add(any) error               { return errReadOnly }
func (m *merged) Update(any) error            { return errReadOnly }
func (m *merged) Delete(any) error            { return errReadOnly }
func (m *merged) Replace([]any, string) error { return errReadOnly }
func (m *merged) Resync() error               { return errReadOnly }

func (m *merged) List() []any {
	var out []any
	for _, p := range m.parts {
		out = append(out, p.List()...)
	}
	return out
}

func (m *merged) ListKeys() []string {
	var out []string
	for _, p := range m.parts {
		out = append(out, p.ListKeys()...)
	}
	return out
}

func (m *merged) Get(obj any) (any, bool, error) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return m.GetByKey(key)
}

func (m *merged) GetByKey(key string) (any, bool, error) {
	for _, p := range m.parts {
		if item, ok, err := p.GetByKey(key); err != nil || ok {
			return item, ok, err
		}
	}
	return nil, false, nil
}

func (m *merged) Index(name string, obj any) ([]any, error) {
	var out []any
	for _, p := range m.parts {
		items, err := p.Index(name, obj)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

func (m *merged) IndexKeys(name, value string) ([]string, error) {
	var out []string
	for _, p := range m.parts {
		keys, err := p.IndexKeys(name, value)
		if err != nil {
			return nil, err
		}
		out = append(out, keys...)
	}
	return out, nil
}

func (m *merged) ByIndex(name, value string) ([]any, error) {
	var out []any
	for _, p := range m.parts {
		items, err := p.ByIndex(name, value)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

func (m *merged) ListIndexFuncValues(name string) []string {
	var out []string
	for _, p := range m.parts {
		out = append(out, p.ListIndexFuncValues(name)...)
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}
