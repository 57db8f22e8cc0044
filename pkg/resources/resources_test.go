package resources_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

func TestOrdinal(t *testing.T) {
	for _, tc := range []struct {
		set, pod string
		want     int
	}{
		{"db", "db-0", 0},
		{"db", "db-12", 12},
		{"db", "db-", -1},
		{"db", "db-x", -1},
		{"db", "other-1", -1},
		{"db", "db-1-2", -1},
	} {
		if got := resources.Ordinal(tc.set, tc.pod); got != tc.want {
			t.Errorf("Ordinal(%q, %q) = %d, want %d", tc.set, tc.pod, got, tc.want)
		}
	}
}

func TestObjectMetaOwnsAndLabels(t *testing.T) {
	c := testutil.Cluster("ns", "db")
	m := resources.ObjectMeta(c, "db-x", "v1.2.3")
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].UID != c.UID || m.OwnerReferences[0].Controller == nil || !*m.OwnerReferences[0].Controller {
		t.Fatalf("want one controller owner reference to the cluster, got %+v", m.OwnerReferences)
	}
	for k, v := range m.Labels {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("label %s=%q: %v", k, v, errs)
		}
	}
	if m.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy || m.Labels[v1alpha1.LabelOperatorVersion] != "v1.2.3" {
		t.Errorf("labels %v lack managed-by or operator-version", m.Labels)
	}
	if got, want := resources.Selector(c), "app.kubernetes.io/name=mysql,mysqlop.io/cluster=db"; got != want {
		t.Errorf("Selector = %q, want %q", got, want)
	}
}

func TestHashIsStableAndSensitive(t *testing.T) {
	a := map[string]string{"x": "1", "y": "2"}
	b := map[string]string{"y": "2", "x": "1"}
	if resources.Hash(a) != resources.Hash(b) {
		t.Error("hash depends on map order")
	}
	if resources.Hash(a) == resources.Hash(map[string]string{"x": "1", "y": "3"}) {
		t.Error("hash ignores a changed value")
	}
}

func TestMergeLabelsKeepsBase(t *testing.T) {
	got := resources.MergeLabels(map[string]string{"a": "ours"}, map[string]string{"a": "theirs", "b": "x"})
	if got["a"] != "ours" || got["b"] != "x" {
		t.Errorf("MergeLabels = %v", got)
	}
}
