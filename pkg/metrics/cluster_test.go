package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

func TestClusterSeries(t *testing.T) {
	until := metav1.NewTime(time.Unix(1_800_000_000, 0))
	st := &v1alpha1.MySQLClusterStatus{Phase: v1alpha1.ClusterDegraded, Primary: "db-0", ReadyMembers: 2, RecoverableUntil: &until,
		Instances: []v1alpha1.InstanceStatus{{Name: "db-0", Ready: true}, {Name: "db-1", Ready: true}, {Name: "db-2"}}}
	ObserveCluster("ns", "db", 3, st)
	if v := testutil.ToFloat64(clusterPhase.WithLabelValues("ns", "db", "Degraded")); v != 1 {
		t.Errorf("phase Degraded %v, want 1", v)
	}
	if v := testutil.ToFloat64(clusterPhase.WithLabelValues("ns", "db", "Healthy")); v != 0 {
		t.Errorf("phase Healthy %v, want 0", v)
	}
	if v := testutil.ToFloat64(clusterWritable.WithLabelValues("ns", "db")); v != 1 {
		t.Errorf("writable primary %v, want 1", v)
	}
	// Counted before reading it: WithLabelValues would create the series itself.
	if n := testutil.CollectAndCount(primaryChanges, "mysqlop_cluster_primary_changes_total"); n != 1 {
		t.Errorf("%d primary-change series after ObserveCluster, want the failover one at 0", n)
	}
	if v := testutil.ToFloat64(primaryChanges.WithLabelValues("ns", "db", "failover", "primary_unreachable")); v != 0 {
		t.Errorf("failovers %v before any, want a series at 0", v)
	}
	st.Instances[0].Ready = false
	ObserveCluster("ns", "db", 3, st)
	if v := testutil.ToFloat64(clusterWritable.WithLabelValues("ns", "db")); v != 0 {
		t.Errorf("writable primary %v with the primary not ready, want 0", v)
	}

	// Backups seen in any order: the newest one's figures stay.
	start := time.Unix(1_700_000_000, 0)
	ObserveBackup("ns", "db", start, start.Add(90*time.Second), 2048)
	ObserveBackup("ns", "db", start.Add(-time.Hour), start.Add(-time.Hour+time.Minute), 1024)
	if v := testutil.ToFloat64(backupSize.WithLabelValues("ns", "db")); v != 2048 {
		t.Errorf("last backup size %v, want the newest backup's 2048", v)
	}
	if v := testutil.ToFloat64(backupDuration.WithLabelValues("ns", "db")); v != 90 {
		t.Errorf("last backup duration %v, want 90", v)
	}
	PrimaryChanged("ns", "db", "failover", "primary_unreachable")
	ClusterReconcileFailed("ns", "db")

	ForgetCluster("ns", "db")
	n, err := testutil.GatherAndCount(Registry)
	if err != nil {
		t.Fatal(err)
	}
	mfs, _ := Registry.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cluster" && l.GetValue() == "db" {
					t.Errorf("%s still has a series of the forgotten cluster", mf.GetName())
				}
			}
		}
	}
	if n == 0 {
		t.Error("nothing gathered")
	}
	// A cluster seen again after being forgotten starts its backup series afresh.
	ObserveBackup("ns", "db", start.Add(-time.Hour), start.Add(-time.Hour+time.Minute), 1024)
	if v := testutil.ToFloat64(backupSize.WithLabelValues("ns", "db")); v != 1024 {
		t.Errorf("backup size after ForgetCluster %v, want 1024", v)
	}
	ForgetCluster("ns", "db")
}

func TestNamesFollowConventions(t *testing.T) {
	problems, err := testutil.GatherAndLint(Registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		// client-go's and the Go runtime's own metrics are not ours to rename.
		if strings.HasPrefix(p.Metric, "mysqlop_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}
