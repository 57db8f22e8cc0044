package cluster

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/clustering"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

func TestDecideVersion(t *testing.T) {
	for _, tc := range []struct {
		desired, deployed string
		want              versionDecision
	}{
		{"10.11.6", "", versionDecision{Version: "10.11.6"}},
		{"10.11.6", "10.11.6", versionDecision{Version: "10.11.6"}},
		{"10.11.8", "10.11.6", versionDecision{Version: "10.11.8"}},
		{"10.6.1", "10.11.6", versionDecision{Version: "10.11.6", Refused: true}},
		{"8.4.3", "garbage", versionDecision{Version: "8.4.3"}},
	} {
		if got := decideVersion(tc.desired, tc.deployed); got != tc.want {
			t.Errorf("decideVersion(%q, %q) = %+v, want %+v", tc.desired, tc.deployed, got, tc.want)
		}
	}
}

// pod makes member ordinal of set "db" with the given restart hash, agent image and role.
func pod(ordinal int, hash, agent, role string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("db-%d", ordinal), Namespace: "ns",
			Labels:      map[string]string{"l": "1"},
			Annotations: map[string]string{v1alpha1.AnnotationRestartHash: hash, v1alpha1.AnnotationVersion: "1.0.0"},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: resources.ContainerMySQL, Image: "server"}, {Name: resources.ContainerAgent, Image: agent}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	if role != "" {
		p.Labels[v1alpha1.LabelRole] = role
	}
	return p
}

func tpl(hash string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{"l": "1"},
		Annotations: map[string]string{v1alpha1.AnnotationRestartHash: hash, v1alpha1.AnnotationVersion: "1.0.0"},
	}}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestPlanPods(t *testing.T) {
	terminating := pod(1, "old", "a1", "", true)
	now := metav1.Now()
	terminating.DeletionTimestamp = &now

	for _, tc := range []struct {
		name        string
		pods        []*corev1.Pod
		members     int32
		wantPatch   []string
		wantRestart string
		outdated    int
		// unobserved: the StatefulSet controller has not seen the template yet.
		unobserved bool
	}{
		{
			name:    "in sync",
			pods:    []*corev1.Pod{pod(0, "new", "a1", "primary", true), pod(1, "new", "a1", "replica", true)},
			members: 2,
		},
		{
			name:      "agent image only: patch every pod, restart none",
			pods:      []*corev1.Pod{pod(0, "new", "a0", "primary", true), pod(1, "new", "a0", "replica", true)},
			members:   2,
			wantPatch: []string{"db-0", "db-1"},
		},
		{
			name:        "replicas first, highest ordinal first",
			pods:        []*corev1.Pod{pod(0, "old", "a1", "replica", true), pod(1, "old", "a1", "primary", true), pod(2, "old", "a1", "replica", true)},
			members:     3,
			wantRestart: "db-2",
			outdated:    3,
		},
		{
			name:        "primary last even with the highest ordinal",
			pods:        []*corev1.Pod{pod(0, "old", "a1", "replica", true), pod(1, "old", "a1", "replica", true), pod(2, "old", "a1", "primary", true)},
			members:     3,
			wantRestart: "db-1",
			outdated:    3,
		},
		{
			name:        "primary last",
			pods:        []*corev1.Pod{pod(0, "new", "a1", "replica", true), pod(1, "old", "a1", "primary", true), pod(2, "new", "a1", "replica", true)},
			members:     3,
			wantRestart: "db-1",
			outdated:    1,
		},
		{
			name:     "wait while a member is not ready",
			pods:     []*corev1.Pod{pod(0, "old", "a1", "primary", true), pod(1, "new", "a1", "replica", false)},
			members:  2,
			outdated: 1,
		},
		{
			name:     "wait while a member is missing",
			pods:     []*corev1.Pod{pod(0, "old", "a1", "primary", true)},
			members:  2,
			outdated: 1,
		},
		{
			name:     "wait while a member terminates",
			pods:     []*corev1.Pod{pod(0, "old", "a1", "primary", true), terminating},
			members:  2,
			outdated: 1,
		},
		{
			name:       "wait until the StatefulSet controller observed the template",
			pods:       []*corev1.Pod{pod(0, "old", "a1", "primary", true), pod(1, "old", "a1", "replica", true)},
			members:    2,
			outdated:   2,
			unobserved: true,
		},
		{
			name:      "patches settle before a restart",
			pods:      []*corev1.Pod{pod(0, "old", "a1", "primary", true), pod(1, "new", "a0", "replica", true)},
			members:   2,
			wantPatch: []string{"db-1"},
			outdated:  1,
		},
		{
			name:    "pods beyond members are ignored",
			pods:    []*corev1.Pod{pod(0, "new", "a1", "primary", true), pod(3, "old", "a0", "replica", true)},
			members: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := planPods(tpl("new"), "a1", tc.pods, "db", tc.members, !tc.unobserved)
			if fmt.Sprint(names(plan.Patch)) != fmt.Sprint(tc.wantPatch) {
				t.Errorf("patch %v, want %v", names(plan.Patch), tc.wantPatch)
			}
			restart := ""
			if plan.Restart != nil {
				restart = plan.Restart.Name
			}
			if restart != tc.wantRestart {
				t.Errorf("restart %q, want %q", restart, tc.wantRestart)
			}
			if plan.Outdated != tc.outdated {
				t.Errorf("outdated %d, want %d", plan.Outdated, tc.outdated)
			}
			// Invariant: never more than one member taken down per reconcile, and never while
			// another member is unavailable.
			if plan.Restart != nil {
				for _, p := range memberPods(tc.pods, "db", tc.members) {
					if !podReady(p) || p.DeletionTimestamp != nil {
						t.Errorf("restart planned while %s is unavailable", p.Name)
					}
				}
			}
		})
	}
}

func TestComputeStatus(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Members = 3 })
	for _, tc := range []struct {
		name      string
		pods      []*corev1.Pod
		plan      podPlan
		conflicts []string
		childErr  string
		refused   bool
		phase     v1alpha1.ClusterPhase
		ready     int32
		readyCond metav1.ConditionStatus
		primary   string
	}{
		{"no pods", nil, podPlan{}, nil, "", false, v1alpha1.ClusterPending, 0, metav1.ConditionFalse, ""},
		{"all ready", []*corev1.Pod{pod(0, "h", "a", "primary", true), pod(1, "h", "a", "replica", true), pod(2, "h", "a", "replica", true)},
			podPlan{}, nil, "", false, v1alpha1.ClusterHealthy, 3, metav1.ConditionTrue, "db-0"},
		{"one down", []*corev1.Pod{pod(0, "h", "a", "primary", true), pod(1, "h", "a", "replica", false), pod(2, "h", "a", "replica", true)},
			podPlan{}, nil, "", false, v1alpha1.ClusterDegraded, 2, metav1.ConditionFalse, "db-0"},
		{"rolling", []*corev1.Pod{pod(0, "h", "a", "primary", true), pod(1, "h", "a", "replica", true), pod(2, "h", "a", "replica", true)},
			podPlan{Outdated: 2}, nil, "", false, v1alpha1.ClusterUpgrading, 3, metav1.ConditionFalse, "db-0"},
		{"conflict", nil, podPlan{}, []string{"Service db-primary"}, "", false, v1alpha1.ClusterPending, 0, metav1.ConditionFalse, ""},
		{"create failed", nil, podPlan{}, nil, "create service db-primary: name too long", false, v1alpha1.ClusterPending, 0, metav1.ConditionFalse, ""},
		{"refused", nil, podPlan{}, nil, "", true, v1alpha1.ClusterPending, 0, metav1.ConditionFalse, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := computeStatus(v1alpha1.MySQLClusterStatus{}, observed{
				Cluster: c, Pods: tc.pods, Plan: tc.plan, Conflicts: tc.conflicts, ChildError: tc.childErr, Refused: tc.refused,
				RequestedVersion: "1.0.0", OperatorVersion: "v9",
			})
			if st.Phase != tc.phase || st.ReadyMembers != tc.ready || st.Primary != tc.primary {
				t.Errorf("phase %s ready %d primary %q; want %s %d %q", st.Phase, st.ReadyMembers, st.Primary, tc.phase, tc.ready, tc.primary)
			}
			if got := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); got == nil || got.Status != tc.readyCond {
				t.Errorf("Ready condition %+v, want %s", got, tc.readyCond)
			}
			synced := meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionSynced)
			if synced == (len(tc.conflicts) > 0 || tc.childErr != "") {
				t.Errorf("Synced=%v with conflicts %v and child error %q", synced, tc.conflicts, tc.childErr)
			}
			if accepted := meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAccepted); accepted == tc.refused {
				t.Errorf("Accepted=%v with refused=%v", accepted, tc.refused)
			}
			if st.OperatorVersion != "v9" || st.ObservedGeneration != c.Generation || st.Selector == "" {
				t.Errorf("status bookkeeping %+v", st)
			}
		})
	}
}

func TestComputeStatusCurrentVersion(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Members = 2 })
	a, b := pod(0, "h", "a", "primary", true), pod(1, "h", "a", "replica", true)
	b.Annotations[v1alpha1.AnnotationVersion] = "2.0.0"
	prev := v1alpha1.MySQLClusterStatus{CurrentVersion: "1.0.0"}
	if st := computeStatus(prev, observed{Cluster: c, Pods: []*corev1.Pod{a, b}}); st.CurrentVersion != "1.0.0" {
		t.Errorf("mixed versions: current %q, want the old one kept", st.CurrentVersion)
	}
	a.Annotations[v1alpha1.AnnotationVersion] = "2.0.0"
	if st := computeStatus(prev, observed{Cluster: c, Pods: []*corev1.Pod{a, b}}); st.CurrentVersion != "2.0.0" {
		t.Errorf("all on 2.0.0: current %q", st.CurrentVersion)
	}
}

func TestComputeStatusKeepsTransitionTime(t *testing.T) {
	c := testutil.Cluster("ns", "db")
	first := computeStatus(v1alpha1.MySQLClusterStatus{}, observed{Cluster: c})
	old := metav1.NewTime(metav1.Now().Add(-3600e9))
	for i := range first.Conditions {
		first.Conditions[i].LastTransitionTime = old
	}
	second := computeStatus(first, observed{Cluster: c})
	for _, cond := range second.Conditions {
		if !cond.LastTransitionTime.Equal(&old) {
			t.Errorf("condition %s transition time moved without a transition", cond.Type)
		}
	}
}

func TestTemplateObserved(t *testing.T) {
	sts := func(gen, observed int64, hash string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Generation: gen, Annotations: map[string]string{v1alpha1.AnnotationSpecHash: hash}},
			Status:     appsv1.StatefulSetStatus{ObservedGeneration: observed},
		}
	}
	desired := sts(0, 0, "h2")
	for _, tc := range []struct {
		name    string
		current *appsv1.StatefulSet
		want    bool
	}{
		{"observed and current", sts(3, 3, "h2"), true},
		{"update not observed yet", sts(4, 3, "h2"), false},
		{"update failed: old spec", sts(3, 3, "h1"), false},
		{"ensure failed", nil, false},
	} {
		if got := templateObserved(tc.current, desired); got != tc.want {
			t.Errorf("%s: templateObserved = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPlanRoles(t *testing.T) {
	d := &clustering.Decision{Primary: 1, Ready: []bool{true, true, false}}
	pods := []*corev1.Pod{pod(0, "h", "a", "", true), pod(1, "h", "a", "replica", true), pod(2, "h", "a", "replica", true)}
	got := planRoles(pods, "db", 3, d)
	want := map[string]string{"db-0": "replica", "db-1": "primary", "db-2": ""}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("planRoles = %v, want %v", got, want)
	}
	// A primary that is not ready carries no label: the read-write Service must not select it.
	if r := roleOf(&clustering.Decision{Primary: 0, Ready: []bool{false}}, 0); r != "" {
		t.Errorf("role of an unready primary %q", r)
	}
	inSync := []*corev1.Pod{pod(0, "h", "a", "replica", true), pod(1, "h", "a", "primary", true), pod(2, "h", "a", "", true)}
	if got := planRoles(inSync, "db", 3, d); len(got) != 0 {
		t.Errorf("in sync: %v", got)
	}
}

func TestSwitchoverTarget(t *testing.T) {
	d := &clustering.Decision{Primary: 0, Ready: []bool{true, false, true}}
	primaryRestart := podPlan{Restart: pod(0, "old", "a", "primary", true)}
	replicaRestart := podPlan{Restart: pod(2, "old", "a", "replica", true)}
	for _, tc := range []struct {
		name      string
		requested string
		plan      podPlan
		d         *clustering.Decision
		target    int
		hold      bool
	}{
		{"nothing", "", podPlan{}, d, -1, false},
		{"requested", "db-2", podPlan{}, d, 2, false},
		{"replica restart needs no switchover", "", replicaRestart, d, -1, false},
		{"primary restart switches to a ready replica first", "", primaryRestart, d, 2, true},
		{"no ready replica: hold the restart", "", primaryRestart, &clustering.Decision{Primary: 0, Ready: []bool{true, false, false}}, -1, true},
		{"no decision yet", "", primaryRestart, nil, -1, false},
	} {
		target, hold := switchoverTarget(tc.requested, "db", 3, tc.plan, tc.d)
		if target != tc.target || hold != tc.hold {
			t.Errorf("%s: target %d hold %v, want %d %v", tc.name, target, hold, tc.target, tc.hold)
		}
	}
}

func TestScaleDownNeverRemovesThePrimary(t *testing.T) {
	d := &clustering.Decision{Primary: 2, Ready: []bool{true, false, true}}
	if got := effectiveMembers(2, d); got != 3 {
		t.Errorf("effective members %d while the primary is ordinal 2, want 3", got)
	}
	if got := effectiveMembers(3, d); got != 3 {
		t.Errorf("effective members %d, want the desired 3", got)
	}
	if got := effectiveMembers(2, nil); got != 2 {
		t.Errorf("effective members %d without a decision, want 2", got)
	}
	if target, _ := switchoverTarget("", "db", 2, podPlan{}, d); target != 0 {
		t.Errorf("switchover target %d, want the ready member 0 below the new count", target)
	}
	if target, _ := switchoverTarget("", "db", 2, podPlan{}, &clustering.Decision{Primary: 2, Ready: []bool{false, false, true}}); target != -1 {
		t.Errorf("switchover target %d with no ready member below the count, want none", target)
	}
}

func TestComputeStatusWithClustering(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Members = 3 })
	pods := []*corev1.Pod{pod(0, "h", "a", "primary", true), pod(1, "h", "a", "replica", true), pod(2, "h", "a", "replica", true)}
	lag := int64(4)
	exec, _ := mysql.ParseMariaDBPosition("0-100-9")
	observedInstances := []clustering.Instance{
		{Index: 0, Status: &mysql.Status{Executed: exec}},
		{Index: 1, Status: &mysql.Status{Executed: exec, Replica: &mysql.ReplicaStatus{LagSeconds: &lag}}},
		{Index: 2, Err: fmt.Errorf("refused")},
	}
	for _, tc := range []struct {
		name    string
		d       clustering.Decision
		phase   v1alpha1.ClusterPhase
		ready   int32
		healthy metav1.ConditionStatus
		primary string
	}{
		{"healthy", clustering.Decision{State: clustering.Healthy, Primary: 0, Ready: []bool{true, true, true}}, v1alpha1.ClusterHealthy, 3, metav1.ConditionTrue, "db-0"},
		{"member down", clustering.Decision{State: clustering.Degraded, Primary: 0, Ready: []bool{true, true, false}}, v1alpha1.ClusterDegraded, 2, metav1.ConditionFalse, "db-0"},
		// The decided primary is recorded even when it is not ready, so that a restarted
		// operator resumes from it.
		{"failing over", clustering.Decision{State: clustering.FailingOver, Primary: 1, Ready: []bool{false, false, false}}, v1alpha1.ClusterFailingOver, 0, metav1.ConditionFalse, "db-1"},
		{"lost", clustering.Decision{State: clustering.Lost, Primary: 0, Ready: []bool{false, false, false}}, v1alpha1.ClusterLost, 0, metav1.ConditionFalse, "db-0"},
		{"primary down, not yet failed over", clustering.Decision{State: clustering.Degraded, Primary: 0, Ready: []bool{false, true, true}}, v1alpha1.ClusterDegraded, 2, metav1.ConditionFalse, "db-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := computeStatus(v1alpha1.MySQLClusterStatus{}, observed{Cluster: c, Pods: pods,
				Clustering: &clusteringView{Decision: &tc.d, Observed: observedInstances}})
			if st.Phase != tc.phase || st.ReadyMembers != tc.ready || st.Primary != tc.primary {
				t.Errorf("phase %s ready %d primary %q; want %s %d %q", st.Phase, st.ReadyMembers, st.Primary, tc.phase, tc.ready, tc.primary)
			}
			if h := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionHealthy); h == nil || h.Status != tc.healthy || h.Reason != string(tc.d.State) {
				t.Errorf("Healthy condition %+v", h)
			}
			if ready := meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady); ready != (tc.phase == v1alpha1.ClusterHealthy) {
				t.Errorf("Ready condition %v in phase %s", ready, st.Phase)
			}
			if st.Instances[0].GTIDExecuted != "0-100-9" || st.Instances[1].LagSeconds == nil || *st.Instances[1].LagSeconds != 4 {
				t.Errorf("instances %+v", st.Instances)
			}
		})
	}
}

// A round that decides no primary (the recorded one was unreachable before this operator
// ever saw it) keeps the recorded primary instead of erasing it.
func TestComputeStatusKeepsTheRecordedPrimary(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Members = 3 })
	pods := []*corev1.Pod{pod(0, "h", "a", "", false), pod(1, "h", "a", "", true), pod(2, "h", "a", "", true)}
	d := clustering.Decision{State: clustering.Bootstrapping, Primary: -1, Ready: []bool{false, false, false}}
	st := computeStatus(v1alpha1.MySQLClusterStatus{Primary: "db-0"}, observed{Cluster: c, Pods: pods,
		Clustering: &clusteringView{Decision: &d}})
	if st.Primary != "db-0" {
		t.Fatalf("primary %q, want the recorded db-0", st.Primary)
	}
}

func TestDecideFence(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) {
		c.Annotations = map[string]string{v1alpha1.AnnotationRestore: "undo"}
	})
	restore := func(phase v1alpha1.JobPhase, method v1alpha1.BackupMethod, step v1alpha1.RestoreStep) *v1alpha1.MySQLRestore {
		return &v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{Name: "undo", Namespace: "ns"},
			Spec:   v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}},
			Status: v1alpha1.MySQLRestoreStatus{Phase: phase, Method: method, Step: step}}
	}
	deleting := restore(v1alpha1.JobRunning, v1alpha1.BackupLogical, v1alpha1.RestoreLoading)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	otherCluster := restore(v1alpha1.JobRunning, v1alpha1.BackupLogical, v1alpha1.RestoreLoading)
	otherCluster.Spec.ClusterRef.Name = "other"
	for _, tc := range []struct {
		name    string
		cluster *v1alpha1.MySQLCluster
		restore *v1alpha1.MySQLRestore
		want    fence
	}{
		{"no annotation", testutil.Cluster("ns", "db"), nil, fence{}},
		{"running logical restore", c, restore(v1alpha1.JobRunning, v1alpha1.BackupLogical, v1alpha1.RestoreLoading), fence{Reason: "MySQLRestore undo"}},
		{"physical restore still restarting members", c, restore(v1alpha1.JobRunning, v1alpha1.BackupPhysical, v1alpha1.RestoreRestarting), fence{Reason: "MySQLRestore undo"}},
		{"physical restore rejoining: every member re-filled", c, restore(v1alpha1.JobRunning, v1alpha1.BackupPhysical, v1alpha1.RestoreRejoining),
			fence{Reason: "MySQLRestore undo", ClearErrant: true}},
		{"restore gone", c, nil, fence{Stale: true}},
		{"restore resuming writes", c, restore(v1alpha1.JobRunning, v1alpha1.BackupPhysical, v1alpha1.RestoreResuming), fence{Stale: true}},
		{"restore finished", c, restore(v1alpha1.JobComplete, v1alpha1.BackupLogical, ""), fence{Stale: true}},
		{"restore failed", c, restore(v1alpha1.JobFailed, v1alpha1.BackupPhysical, v1alpha1.RestoreStaging), fence{Stale: true}},
		{"restore not started", c, restore(v1alpha1.JobPending, "", ""), fence{Stale: true}},
		{"restore being deleted", c, deleting, fence{Stale: true}},
		{"restore of another cluster", c, otherCluster, fence{Stale: true}},
	} {
		if got := decideFence(tc.cluster, tc.restore); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// While a restore runs, the phase says Fenced whatever else clustering reports, the primary
// is recorded but not ready, and a fenced cluster is not Degraded for it.
func TestComputeStatusFenced(t *testing.T) {
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Members = 3 })
	pods := []*corev1.Pod{pod(0, "h", "a", "", false), pod(1, "h", "a", "replica", true), pod(2, "h", "a", "replica", true)}
	for _, tc := range []struct {
		name     string
		d        clustering.Decision
		degraded metav1.ConditionStatus
	}{
		{"in place", clustering.Decision{State: clustering.Fenced, Primary: 0, Ready: []bool{false, true, true}, Reason: "writes are stopped",
			Fence: "MySQLRestore undo"}, metav1.ConditionFalse},
		{"a member down meanwhile", clustering.Decision{State: clustering.Degraded, Primary: 0, Ready: []bool{false, true, false}, Reason: "unreachable: [2]",
			Fence: "MySQLRestore undo"}, metav1.ConditionTrue},
	} {
		st := computeStatus(v1alpha1.MySQLClusterStatus{}, observed{Cluster: c, Pods: pods, Fence: "MySQLRestore undo",
			Clustering: &clusteringView{Decision: &tc.d}})
		ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
		if st.Phase != v1alpha1.ClusterFenced || st.Primary != "db-0" || ready.Status != metav1.ConditionFalse || ready.Reason != "Fenced" || ready.Message != tc.d.Reason {
			t.Errorf("%s: phase %s primary %q ready %+v", tc.name, st.Phase, st.Primary, ready)
		}
		if d := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionDegraded); d.Status != tc.degraded {
			t.Errorf("%s: Degraded %+v", tc.name, d)
		}
	}
	// Until clustering decided under the fence, the primary may still take writes: not Fenced.
	before := clustering.Decision{State: clustering.Healthy, Primary: 0, Ready: []bool{true, true, true}}
	if st := computeStatus(v1alpha1.MySQLClusterStatus{}, observed{Cluster: c, Pods: pods, Fence: "MySQLRestore undo",
		Clustering: &clusteringView{Decision: &before}}); st.Phase == v1alpha1.ClusterFenced {
		t.Error("phase Fenced before clustering applied the fence")
	}
}

func TestSwitchoverReason(t *testing.T) {
	for _, tc := range []struct {
		name      string
		requested string
		d         *clustering.Decision
		want      string
	}{
		{"annotation", "db-1", &clustering.Decision{Primary: 0}, "requested"},
		{"annotation wins over a scale-in", "db-0", &clustering.Decision{Primary: 2}, "requested"},
		{"primary above the new count", "", &clustering.Decision{Primary: 2}, "scale_in"},
		{"primary's pod restarts", "", &clustering.Decision{Primary: 0}, "restart"},
		{"no decision yet", "", nil, "restart"},
	} {
		if got := switchoverReason(tc.requested, 2, tc.d); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestStatusHold(t *testing.T) {
	ready := func(reason string) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason},
			{Type: v1alpha1.ConditionSynced, Status: metav1.ConditionTrue, Reason: "Synced"}}
	}
	pending := v1alpha1.MySQLClusterStatus{Phase: v1alpha1.ClusterPending, Primary: "db-0", Conditions: ready("MembersNotReady")}
	oneReady := *pending.DeepCopy()
	oneReady.Phase, oneReady.ReadyMembers = v1alpha1.ClusterDegraded, 1
	oneReady.Instances = []v1alpha1.InstanceStatus{{Name: "db-0", Ready: true}}
	oneReady.Conditions = ready("MembersNotReady ")
	for _, tc := range []struct {
		name      string
		prev      v1alpha1.MySQLClusterStatus
		next      func(*v1alpha1.MySQLClusterStatus)
		sinceLast time.Duration
		want      time.Duration
	}{
		{name: "member progress soon after a write waits", prev: pending, next: func(s *v1alpha1.MySQLClusterStatus) { *s = *oneReady.DeepCopy() },
			sinceLast: 500 * time.Millisecond, want: 1500 * time.Millisecond},
		{name: "member progress after the interval is written", prev: pending, next: func(s *v1alpha1.MySQLClusterStatus) { *s = *oneReady.DeepCopy() },
			sinceLast: 3 * time.Second},
		{name: "never written by this process", prev: pending, next: func(s *v1alpha1.MySQLClusterStatus) { *s = *oneReady.DeepCopy() },
			sinceLast: time.Duration(1 << 62)},
		{name: "turning Healthy is written at once", prev: oneReady, next: func(s *v1alpha1.MySQLClusterStatus) {
			s.Phase, s.ReadyMembers = v1alpha1.ClusterHealthy, 3
		}, sinceLast: 100 * time.Millisecond},
		{name: "leaving Healthy is written at once", prev: v1alpha1.MySQLClusterStatus{Phase: v1alpha1.ClusterHealthy, ReadyMembers: 3}, next: func(s *v1alpha1.MySQLClusterStatus) {
			s.Phase, s.ReadyMembers = v1alpha1.ClusterDegraded, 2
		}, sinceLast: 100 * time.Millisecond},
		{name: "a new primary is written at once", prev: oneReady, next: func(s *v1alpha1.MySQLClusterStatus) { s.Primary = "db-1" },
			sinceLast: 100 * time.Millisecond},
		{name: "an epoch is written at once", prev: oneReady, next: func(s *v1alpha1.MySQLClusterStatus) { s.Epoch = 2 },
			sinceLast: 100 * time.Millisecond},
		{name: "another condition is written at once", prev: oneReady, next: func(s *v1alpha1.MySQLClusterStatus) { s.Conditions[1].Status = metav1.ConditionFalse },
			sinceLast: 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := tc.prev.DeepCopy()
			tc.next(next)
			if got := statusHold(&tc.prev, next, tc.sinceLast); got != tc.want {
				t.Errorf("hold %v, want %v", got, tc.want)
			}
		})
	}
}
