package restore

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/fixture"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

const ns = fixture.Namespace

func cluster() *v1alpha1.MySQLCluster {
	return testutil.Cluster(ns, "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Members = 2
		c.Status.Primary, c.Status.Phase = "db-0", v1alpha1.ClusterHealthy
		c.Status.Instances = []v1alpha1.InstanceStatus{{Name: "db-0", Role: "primary", Ready: true}, {Name: "db-1", Role: "replica", Ready: true}}
	})
}

func completeBackup(phase v1alpha1.JobPhase) *v1alpha1.MySQLBackup {
	return &v1alpha1.MySQLBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "back", UID: "uid-back"},
		Spec: v1alpha1.MySQLBackupSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"},
			Storage: v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{Bucket: "bk", CredentialsSecretRef: v1alpha1.LocalReference{Name: "s3"}}}},
		Status: v1alpha1.MySQLBackupStatus{Phase: phase, Location: "s3://bk/back", SHA256: "abc", GTIDPosition: "0-1-9"}}
}

func storageSecret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3", Labels: map[string]string{v1alpha1.LabelStorageCredentials: "true"}},
		Data: map[string][]byte{"accessKeyId": []byte("AKID"), "secretAccessKey": []byte("s3cr3t")}}
}

func newRestore() *v1alpha1.MySQLRestore {
	return &v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r", UID: types.UID("uid-r"), Generation: 1},
		Spec: v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}, BackupRef: v1alpha1.LocalReference{Name: "back"}}}
}

func start(t *testing.T, objs ...runtime.Object) (*fixture.Fixture, *Controller, fixture.Agents) {
	t.Helper()
	f := fixture.New(t, objs...)
	c, err := New(f.Kube, f.MySQL, f.Set, f.Recorder, nil)
	if err != nil {
		t.Fatal(err)
	}
	as := fixture.Agents{"db-0": {State: &agentapi.StatusJSON{}}, "db-1": {State: &agentapi.StatusJSON{ReadOnly: true}}}
	c.dial = as.Dialer()
	return f, c, as
}

func restoreOf(f *fixture.Fixture) *v1alpha1.MySQLRestore {
	return fixture.Get(f, &v1alpha1.MySQLRestore{}, "r")
}

func clusterOf(f *fixture.Fixture) *v1alpha1.MySQLCluster {
	return fixture.Get(f, &v1alpha1.MySQLCluster{}, "db")
}

// fenced plays the Cluster controller and clustering: the cluster is Fenced and its primary
// read-only.
func fenced(f *fixture.Fixture, as fixture.Agents) {
	cl := clusterOf(f)
	cl.Status.Phase = v1alpha1.ClusterFenced
	f.Update(cl)
	as["db-0"].State.ReadOnly = true
}

// A logical restore stops writes (finalizer, Running, then the fence), waits for the cluster
// to be fenced, loads through the primary, lifts the fence, and completes once the primary is
// writable again, removing its finalizer. Every wait is a RequeueAfter.
func TestLogicalRestoreFromStartToEnd(t *testing.T) {
	f, c, as := start(t, cluster(), completeBackup(v1alpha1.JobComplete), storageSecret(), newRestore())

	if res := f.Sync(c.Sync, "r"); res != ctrl.After(pollInterval) {
		t.Errorf("start: result %+v", res)
	}
	want := []string{"patch mysqlclusters db", "update mysqlrestores r", "update mysqlrestores/status r"}
	if w := f.Writes(); !slices.Equal(w, want) {
		t.Errorf("start wrote %q, want %q", w, want)
	}
	r := restoreOf(f)
	if r.Status.Phase != v1alpha1.JobRunning || r.Status.Step != v1alpha1.RestoreFencing || !slices.Contains(r.Finalizers, v1alpha1.FinalizerRestore) ||
		clusterOf(f).Annotations[v1alpha1.AnnotationRestore] != "r" {
		t.Fatalf("after start: status %+v finalizers %v cluster annotations %v", r.Status, r.Finalizers, clusterOf(f).Annotations)
	}

	// Not fenced yet: look again, write nothing.
	if res := f.Sync(c.Sync, "r"); res != ctrl.After(pollInterval) || len(f.Writes()) != 0 {
		t.Errorf("before the fence holds: result %+v writes %q", res, f.Writes())
	}

	fenced(f, as)
	f.Sync(c.Sync, "r")
	if r := restoreOf(f); r.Status.Step != v1alpha1.RestoreLoading || r.Status.Member != "db-0" {
		t.Fatalf("after the fence: status %+v", r.Status)
	}
	if !slices.Contains(as["db-0"].Calls, "StartRestore uid-r") || slices.ContainsFunc(as["db-1"].Calls, func(s string) bool { return strings.HasPrefix(s, "Start") }) {
		t.Errorf("agent calls: db-0 %v db-1 %v", as["db-0"].Calls, as["db-1"].Calls)
	}

	as["db-0"].Set("uid-r", func(s *agentapi.BackupState) { s.Phase, s.Size = agentapi.BackupComplete, 7 })
	f.Sync(c.Sync, "r")
	if r := restoreOf(f); r.Status.Step != v1alpha1.RestoreResuming {
		t.Fatalf("after loading: step %s", r.Status.Step)
	}
	if a := clusterOf(f).Annotations; a[v1alpha1.AnnotationRestore] != "" {
		t.Errorf("fence not lifted: %v", a)
	}

	// The primary is still read-only: the restore waits for it.
	if res := f.Sync(c.Sync, "r"); res != ctrl.After(pollInterval) || restoreOf(f).Status.Phase != v1alpha1.JobRunning {
		t.Errorf("while the primary is read-only: result %+v phase %s", res, restoreOf(f).Status.Phase)
	}
	as["db-0"].State.ReadOnly = false
	if res := f.Sync(c.Sync, "r"); res != (ctrl.Result{}) {
		t.Errorf("completion: result %+v", res)
	}
	r = restoreOf(f)
	cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionComplete)
	if r.Status.Phase != v1alpha1.JobComplete || cond.Status != metav1.ConditionTrue || len(r.Finalizers) != 0 ||
		!strings.HasSuffix(cond.Message, "; writes resumed") {
		t.Fatalf("completed: status %+v finalizers %v", r.Status, r.Finalizers)
	}
	var reasons []string
	for _, e := range f.Events() {
		reasons = append(reasons, strings.Fields(e)[1])
	}
	if !slices.Contains(reasons, "RestoreCompleted") {
		t.Errorf("events %v", reasons)
	}
	f.Sync(c.Sync, "r")
	if w := f.Writes(); len(w) != 0 {
		t.Errorf("a finished restore wrote %q", w)
	}
}

// A fence lifted by hand while the restore loads fails it: it cannot vouch for the data.
func TestRestoreFailsWhenItsFenceIsLifted(t *testing.T) {
	f, c, as := start(t, cluster(), completeBackup(v1alpha1.JobComplete), storageSecret(), newRestore())
	f.Sync(c.Sync, "r")
	fenced(f, as)
	f.Sync(c.Sync, "r")
	cl := clusterOf(f)
	delete(cl.Annotations, v1alpha1.AnnotationRestore)
	f.Update(cl)
	f.Sync(c.Sync, "r")
	r := restoreOf(f)
	if cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionComplete); r.Status.Phase != v1alpha1.JobFailed ||
		!strings.Contains(cond.Message, "writes were resumed during the restore") || len(r.Finalizers) != 0 {
		t.Fatalf("status %+v finalizers %v", r.Status, r.Finalizers)
	}
}

// A failed backup fails the restore before anything is stopped.
func TestRestoreOfAFailedBackupFailsWithoutAFence(t *testing.T) {
	f, c, _ := start(t, cluster(), completeBackup(v1alpha1.JobFailed), storageSecret(), newRestore())
	f.Sync(c.Sync, "r")
	if r := restoreOf(f); r.Status.Phase != v1alpha1.JobFailed {
		t.Fatalf("phase %s", r.Status.Phase)
	}
	if a := clusterOf(f).Annotations; a[v1alpha1.AnnotationRestore] != "" {
		t.Errorf("the cluster was fenced: %v", a)
	}
}

// A finished restore that still carries a finalizer (this build's or the one earlier builds
// used) loses both in one write.
func TestFinishedRestoreReleasesEveryFinalizer(t *testing.T) {
	r := newRestore()
	r.Finalizers = []string{v1alpha1.LegacyFinalizerRestore, v1alpha1.FinalizerRestore, "someone-else"}
	r.Status.Phase = v1alpha1.JobComplete
	f, c, _ := start(t, cluster(), completeBackup(v1alpha1.JobComplete), r)
	f.Sync(c.Sync, "r")
	if w := f.Writes(); !slices.Equal(w, []string{"update mysqlrestores r"}) {
		t.Errorf("wrote %q", w)
	}
	if got := restoreOf(f).Finalizers; !slices.Equal(got, []string{"someone-else"}) {
		t.Errorf("finalizers %v", got)
	}
}

// A cluster with spec.bootstrap gets exactly one restore, owned by the cluster, and is marked.
func TestBootstrapCreatesOneRestore(t *testing.T) {
	cl := cluster()
	cl.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: v1alpha1.LocalReference{Name: "back"}}
	f, c, _ := start(t, cl)
	f.Sync(c.SyncBootstrap, "db")
	if w := f.Writes(); !slices.Equal(w, []string{"create mysqlrestores db-bootstrap", "patch mysqlclusters db"}) {
		t.Errorf("wrote %q", w)
	}
	r := fixture.Get(f, &v1alpha1.MySQLRestore{}, "db-bootstrap")
	if !metav1.IsControlledBy(r, cl) || r.Spec.BackupRef.Name != "back" || clusterOf(f).Annotations[v1alpha1.AnnotationBootstrapRestore] != "db-bootstrap" {
		t.Errorf("restore %+v, cluster annotations %v", r, clusterOf(f).Annotations)
	}
	f.Sync(c.SyncBootstrap, "db")
	if w := f.Writes(); len(w) != 0 {
		t.Errorf("a bootstrapped cluster wrote %q", w)
	}
}
