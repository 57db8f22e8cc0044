package informerset

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	mysqlfake "github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned/fake"
)

func cm(ns, name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
}

// syncedConfigMaps is set's ConfigMap informer, started and synced; the set stops when the
// test ends.
func syncedConfigMaps(t *testing.T, set *Set) Informers {
	t.Helper()
	inf := set.Kube(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().ConfigMaps().Informer()
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); set.Shutdown() })
	set.Start(ctx.Done())
	if err := set.WaitForCacheSync(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	return inf
}

func TestWatchesOnlyListedNamespacesAndLabels(t *testing.T) {
	ours := map[string]string{"managed": "yes"}
	kube := kubefake.NewClientset(
		cm("a", "x", ours), cm("b", "y", ours), cm("c", "z", ours), cm("a", "foreign", nil),
	)
	set := New(kube, mysqlfake.NewSimpleClientset(), []string{"b", "a", "a"}, 0, "managed=yes", "")
	if len(set.Namespaces) != 2 {
		t.Fatalf("namespaces %v, want a and b once each", set.Namespaces)
	}
	inf := syncedConfigMaps(t, set)

	lister := corelisters.NewConfigMapLister(inf.Indexer())
	all, err := lister.List(labels.Everything())
	if err != nil || len(all) != 2 {
		t.Fatalf("List = %d objects (%v), want x and y", len(all), err)
	}
	if _, err := lister.ConfigMaps("b").Get("y"); err != nil {
		t.Errorf("get b/y: %v", err)
	}
	if _, err := lister.ConfigMaps("c").Get("z"); err == nil {
		t.Error("c/z is in an unwatched namespace but was found")
	}
	if _, err := lister.ConfigMaps("a").Get("foreign"); err == nil {
		t.Error("a/foreign lacks the label but was found")
	}
	inA, err := lister.ConfigMaps("a").List(labels.Everything())
	if err != nil || len(inA) != 1 || inA[0].Name != "x" {
		t.Errorf("namespace a lists %v, %v", inA, err)
	}
	if !inf.HasSynced() {
		t.Error("HasSynced false after sync")
	}
	if err := inf.Indexer().Add(cm("a", "new", ours)); err == nil {
		t.Error("the merged indexer accepted a write")
	}
}

func TestAllNamespaces(t *testing.T) {
	for _, ns := range [][]string{nil, {}, {""}, {"a", ""}} {
		if got := New(kubefake.NewClientset(), mysqlfake.NewSimpleClientset(), ns, 0, "", "").Namespaces; len(got) != 1 || got[0] != "" {
			t.Errorf("New(%q) watches %q, want all namespaces", ns, got)
		}
	}
}

func TestCachesHoldNoManagedFields(t *testing.T) {
	withFields := cm("a", "x", map[string]string{"managed": "yes"})
	withFields.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "mysql-operator", Operation: metav1.ManagedFieldsOperationUpdate}}
	kube := kubefake.NewClientset(withFields)
	set := New(kube, mysqlfake.NewSimpleClientset(), []string{"a"}, 0, "managed=yes", "")
	inf := syncedConfigMaps(t, set)
	got, err := corelisters.NewConfigMapLister(inf.Indexer()).ConfigMaps("a").Get("x")
	if err != nil {
		t.Fatal(err)
	}
	if got.ManagedFields != nil {
		t.Errorf("cached object keeps managedFields %v", got.ManagedFields)
	}
	if _, err := StripManagedFields(cache.DeletedFinalStateUnknown{Key: "a/x"}); err != nil {
		t.Errorf("a tombstone: %v", err)
	}
}

func TestTrimKeepsWhatControllersReadOfPods(t *testing.T) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-0", Labels: map[string]string{"role": "primary"}, Annotations: map[string]string{"hash": "1"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "mysqld", Image: "mariadb:11", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}, {Name: "agent", Image: "agent:1"}},
			Volumes:    []corev1.Volume{{Name: "data"}},
			NodeName:   "node-1",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "mysqld"}}},
	}
	got, err := Trim(p.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-0", Labels: p.Labels, Annotations: p.Annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "mysqld", Image: "mariadb:11"}, {Name: "agent", Image: "agent:1"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: p.Status.Conditions},
	}
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("trimmed pod\n%+v\nwant\n%+v", got, want)
	}
	// Other kinds lose only their managedFields.
	cmap := cm("a", "x", nil)
	cmap.Data = map[string]string{"k": "v"}
	cmap.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	if got, _ := Trim(cmap.DeepCopy()); got.(*corev1.ConfigMap).Data["k"] != "v" || got.(*corev1.ConfigMap).ManagedFields != nil {
		t.Errorf("trimmed ConfigMap %+v", got)
	}
}
