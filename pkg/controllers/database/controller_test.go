package database

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/fixture"
)

func shop(name string, created metav1.Time) *v1alpha1.MySQLDatabase {
	return &v1alpha1.MySQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: fixture.Namespace, Name: name, Generation: 1, CreationTimestamp: created},
		Spec: v1alpha1.MySQLDatabaseSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}, Name: "shop", CharacterSet: "utf8mb4",
			DeletionPolicy: v1alpha1.DeletionDelete}}
}

func schema(t *testing.T, p *fixture.Primary) (charset, collation string, ok bool) {
	t.Helper()
	s, err := p.Server.Admin().Schema(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	if s == nil {
		return "", "", false
	}
	return s.CharacterSet, s.Collation, true
}

// A MySQLDatabase's schema is created, altered when the spec changes, left alone when in
// sync, and dropped on deletion with deletionPolicy Delete; a second object naming the same
// schema is refused and changes nothing.
func TestDatabaseLifecycleOnMariaDB(t *testing.T) {
	p := fixture.StartPrimary(t)
	older := metav1.NewTime(metav1.Now().Add(-1e9))
	f := fixture.New(t, p.Cluster, p.Credentials, shop("shop", older), shop("shop-again", metav1.Now()))
	c, err := New(f.MySQL, f.Set, f.Recorder, p.Resolve)
	if err != nil {
		t.Fatal(err)
	}

	f.Sync(c.Sync, "shop")
	if cs, _, ok := schema(t, p); !ok || cs != "utf8mb4" {
		t.Fatalf("schema: charset %q exists %v", cs, ok)
	}
	if ev := f.Events(); !slices.Equal(ev, []string{"Normal DatabaseCreated Created database shop"}) {
		t.Errorf("events %q", ev)
	}
	f.Sync(c.Sync, "shop")
	if w := f.Writes(); len(w) != 0 {
		t.Errorf("an in-sync database wrote %q", w)
	}

	f.Sync(c.Sync, "shop-again")
	again := fixture.Get(f, &v1alpha1.MySQLDatabase{}, "shop-again")
	if cond := meta.FindStatusCondition(again.Status.Conditions, v1alpha1.ConditionReady); cond == nil || cond.Reason != v1alpha1.ReasonConflict {
		t.Errorf("second object's Ready %+v", cond)
	}

	d := fixture.Get(f, &v1alpha1.MySQLDatabase{}, "shop")
	d.Spec.Collation, d.Generation = "utf8mb4_bin", 2
	f.Update(d)
	f.Sync(c.Sync, "shop")
	if _, coll, _ := schema(t, p); coll != "utf8mb4_bin" {
		t.Errorf("collation %q after the edit", coll)
	}

	d = fixture.Get(f, &v1alpha1.MySQLDatabase{}, "shop")
	now := metav1.Now()
	d.DeletionTimestamp = &now
	f.Update(d)
	f.Sync(c.Sync, "shop")
	if _, _, ok := schema(t, p); ok {
		t.Error("the schema survived its deletion (deletionPolicy Delete)")
	}
	if d := fixture.Get(f, &v1alpha1.MySQLDatabase{}, "shop"); len(d.Finalizers) != 0 {
		t.Errorf("finalizers %v", d.Finalizers)
	}
}
