package ctrl

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// Objects waiting on a cluster are woken exactly when they may go on: a new primary, the
// cluster going, its writes resuming after a restore, or its data replaced by one.
func TestClusterHandlerWakesOnTheMomentsThatMatter(t *testing.T) {
	base := func() *v1alpha1.MySQLCluster {
		return &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
			Status: v1alpha1.MySQLClusterStatus{Primary: "db-0", Phase: v1alpha1.ClusterHealthy, ReadyMembers: 3}}
	}
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.MySQLCluster)
		wake   bool
	}{
		{"another primary", func(c *v1alpha1.MySQLCluster) { c.Status.Primary = "db-1" }, true},
		{"being deleted", func(c *v1alpha1.MySQLCluster) { now := metav1.Now(); c.DeletionTimestamp = &now }, true},
		{"writes stopped", func(c *v1alpha1.MySQLCluster) { c.Status.Phase = v1alpha1.ClusterFenced }, true},
		{"data replaced by a restore", func(c *v1alpha1.MySQLCluster) {
			c.Annotations = map[string]string{v1alpha1.AnnotationDataRestored: "back/uid"}
		}, true},
		{"a member less ready", func(c *v1alpha1.MySQLCluster) { c.Status.ReadyMembers = 2 }, false},
		{"the fence annotation alone (the primary is not writable yet)", func(c *v1alpha1.MySQLCluster) {
			c.Annotations = map[string]string{v1alpha1.AnnotationRestore: "back"}
		}, false},
	} {
		var got []string
		h := ClusterHandler(func(key string) { got = append(got, key) })
		old, cur := base(), base()
		tc.change(cur)
		h.OnUpdate(old, cur)
		h.OnUpdate(cur, old) // and back
		if woke := len(got) == 2 && got[0] == "ns/db"; woke != tc.wake || (!tc.wake && len(got) != 0) {
			t.Errorf("%s: woke %v, want %v", tc.name, got, tc.wake)
		}
	}
	var got []string
	h := ClusterHandler(func(key string) { got = append(got, key) })
	h.OnAdd(base(), false)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/db", Obj: base()})
	if len(got) != 2 {
		t.Errorf("add and delete woke %v", got)
	}
}
