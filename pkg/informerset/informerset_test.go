package informerset

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
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

func TestWatchesOnlyListedNamespacesAndLabels(t *testing.T) {
	ours := map[string]string{"managed": "yes"}
	kube := kubefake.NewClientset(
		cm("a", "x", ours), cm("b", "y", ours), cm("c", "z", ours), cm("a", "foreign", nil),
	)
	set := New(kube, mysqlfake.NewSimpleClientset(), []string{"b", "a", "a"}, 0, "managed=yes", "")
	if len(set.Namespaces) != 2 {
		t.Fatalf("namespaces %v, want a and b once each", set.Namespaces)
	}
	inf := set.Kube(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().ConfigMaps().Informer()
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); set.Shutdown() }()
	set.Start(ctx.Done())
	if err := set.WaitForCacheSync(ctx.Done()); err != nil {
		t.Fatal(err)
	}

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
