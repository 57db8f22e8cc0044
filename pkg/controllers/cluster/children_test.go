package cluster

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ownwrites"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
)

// A reconcile that runs before the cache shows the previous one's writes acts on those writes:
// it neither creates the child again (AlreadyExists) nor updates an older copy (Conflict).
func TestEnsureActsOnItsOwnWritesBeforeTheCacheShowsThem(t *testing.T) {
	kube := kubefake.NewClientset()
	// The fake tracker keeps no resource versions; the API server's grow with every write.
	var rv int
	kube.PrependReactor("*", "configmaps", func(a core.Action) (bool, runtime.Object, error) {
		if o, ok := a.(interface{ GetObject() runtime.Object }); ok {
			if m, err := meta.Accessor(o.GetObject()); err == nil {
				rv++
				m.SetResourceVersion(strconv.Itoa(rv))
			}
		}
		return false, nil, nil
	})
	c := &Controller{kube: kube, recorder: record.NewFakeRecorder(10), written: ownwrites.New(time.Minute),
		// A cache that never shows anything.
		configMaps: corelisters.NewConfigMapLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}))}
	cluster := mariadb(3, "10.11.6")
	desired := func(holdsData bool) *corev1.ConfigMap {
		cm := configmap.New(cluster, "v1", holdsData)
		setSpecHash(cm, cm.Data)
		return cm
	}
	for i, holdsData := range []bool{false, false, true, true} {
		_, created, err := ensure(context.Background(), c, cluster, c.configMapOps(), desired(holdsData))
		if err != nil {
			t.Fatalf("ensure %d: %v", i, err)
		}
		if created != (i == 0) {
			t.Errorf("ensure %d: created %v", i, created)
		}
	}
	var verbs []string
	for _, a := range kube.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if len(verbs) != 2 || verbs[0] != "create" || verbs[1] != "update" {
		t.Errorf("requests %v, want one create and one update", verbs)
	}
}
