package ctrl

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	mysqlinformers "github.com/mysqlop/mysql-operator/pkg/generated/informers/externalversions"
	"github.com/mysqlop/mysql-operator/pkg/informerset"
)

// ObjectHandler queues a watched object on add and delete, and on updates that need a
// reconcile: spec (generation), deletion or finalizer changes, and resyncs (an unchanged
// resourceVersion). Status writes, which come back as updates, are skipped.
func (l *Loop) ObjectHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: l.Enqueue,
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(metav1.Object)
			n, ok2 := obj.(metav1.Object)
			if !ok1 || !ok2 || o.GetResourceVersion() == n.GetResourceVersion() || o.GetGeneration() != n.GetGeneration() ||
				(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) ||
				!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) {
				l.Enqueue(obj)
			}
		},
		DeleteFunc: l.Enqueue,
	}
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

// BackupsByCluster is the index of the MySQLBackups cache by "<namespace>/<clusterRef>"
// (IndexBackupsByCluster).
const BackupsByCluster = "cluster"

// IndexBackupsByCluster adds BackupsByCluster to the MySQLBackups informers that lack it. The
// controllers that read a cluster's backups (the backup controller's one-at-a-time rule, the
// cluster controller's recoverable window) share the informers, and an informer refuses a
// second index of the same name.
func IndexBackupsByCluster(backups informerset.Informers) error {
	var missing informerset.Informers
	for _, inf := range backups {
		if _, ok := inf.GetIndexer().GetIndexers()[BackupsByCluster]; !ok {
			missing = append(missing, inf)
		}
	}
	return AddIndex(missing, BackupsByCluster, func(obj any) (string, string) {
		b, ok := obj.(*v1alpha1.MySQLBackup)
		if !ok {
			return "", ""
		}
		return b.Namespace, b.Spec.ClusterRef.Name
	})
}

// Indexed returns the objects of type T that indexer holds under namespace/ref in the index
// name that AddIndex added. They are the cache's own: never modified.
func Indexed[T any](indexer cache.Indexer, name, namespace, ref string) ([]T, error) {
	objs, err := indexer.ByIndex(name, namespace+"/"+ref)
	if err != nil {
		return nil, fmt.Errorf("read index %s: %w", name, err)
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// EnqueueIndexed returns a function that queues every object of indexer whose index value
// is its argument.
func (l *Loop) EnqueueIndexed(indexer cache.Indexer, index string) func(value string) {
	return func(value string) {
		objs, err := indexer.ByIndex(index, value)
		if err != nil {
			return
		}
		for _, o := range objs {
			l.Enqueue(o)
		}
	}
}
