package pdb

import (
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

func TestPDB(t *testing.T) {
	c := testutil.Cluster("ns", "db")
	p := New(c, "v1")
	if p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("maxUnavailable = %v, want 1", p.Spec.MaxUnavailable)
	}
	if p.Spec.Selector.MatchLabels[v1alpha1.LabelCluster] != "db" {
		t.Errorf("selector %v", p.Spec.Selector)
	}
}
