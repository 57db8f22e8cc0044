package backup

import (
	"strings"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

func TestPickMember(t *testing.T) {
	lag := func(n int64) *int64 { return &n }
	cluster := func(instances ...v1alpha1.InstanceStatus) *v1alpha1.MySQLCluster {
		c := &v1alpha1.MySQLCluster{}
		c.Name = "db"
		c.Status.Primary = "db-0"
		c.Status.Instances = instances
		return c
	}
	primary := v1alpha1.InstanceStatus{Name: "db-0", Role: "primary", Ready: true}
	for _, tc := range []struct {
		name      string
		c         *v1alpha1.MySQLCluster
		requested string
		want      string
		why       string
	}{
		{"least lagging ready replica", cluster(primary,
			v1alpha1.InstanceStatus{Name: "db-1", Role: "replica", Ready: true, LagSeconds: lag(5)},
			v1alpha1.InstanceStatus{Name: "db-2", Role: "replica", Ready: true, LagSeconds: lag(0)}), "", "db-2", ""},
		{"unknown lag after known", cluster(primary,
			v1alpha1.InstanceStatus{Name: "db-1", Role: "replica", Ready: true},
			v1alpha1.InstanceStatus{Name: "db-2", Role: "replica", Ready: true, LagSeconds: lag(9)}), "", "db-2", ""},
		{"not-ready replica skipped", cluster(primary,
			v1alpha1.InstanceStatus{Name: "db-1", Role: "replica", Ready: false, LagSeconds: lag(0)}), "", "db-0", ""},
		{"requested", cluster(primary, v1alpha1.InstanceStatus{Name: "db-1", Role: "replica", Ready: true}), "db-0", "db-0", ""},
		{"requested not ready", cluster(primary, v1alpha1.InstanceStatus{Name: "db-1", Role: "replica"}), "db-1", "", "not a ready member"},
		{"nothing ready", cluster(v1alpha1.InstanceStatus{Name: "db-0", Role: "primary"}), "", "", "no ready member"},
	} {
		got, why := pickMember(tc.c, tc.requested)
		if got != tc.want || (tc.why != "" && !strings.Contains(why, tc.why)) {
			t.Errorf("%s: got %q (%s), want %q (%s)", tc.name, got, why, tc.want, tc.why)
		}
	}
}
