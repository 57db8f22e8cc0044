package backup

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

// cluster is a healthy two-member cluster whose replica db-1 takes backups.
func cluster() *v1alpha1.MySQLCluster {
	return testutil.Cluster(ns, "db", func(c *v1alpha1.MySQLCluster) {
		c.Status.Primary = "db-0"
		c.Status.Instances = []v1alpha1.InstanceStatus{{Name: "db-0", Role: "primary", Ready: true}, {Name: "db-1", Role: "replica", Ready: true}}
	})
}

func storageSecret(labelled bool) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3"},
		Data: map[string][]byte{"accessKeyId": []byte("AKID"), "secretAccessKey": []byte("s3cr3t")}}
	if labelled {
		s.Labels = map[string]string{v1alpha1.LabelStorageCredentials: "true"}
	}
	return s
}

func newBackup(name string) *v1alpha1.MySQLBackup {
	return &v1alpha1.MySQLBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: v1alpha1.MySQLBackupSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"},
			Storage: v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{Bucket: "bk", CredentialsSecretRef: v1alpha1.LocalReference{Name: "s3"}}}}}
}

// start builds the controller over a fixture holding objs, with fake agents for db-0 and db-1.
func start(t *testing.T, objs ...runtime.Object) (*fixture.Fixture, *Controller, fixture.Agents) {
	t.Helper()
	f := fixture.New(t, objs...)
	c, err := New(f.Kube, f.MySQL, f.Set, f.Recorder, nil)
	if err != nil {
		t.Fatal(err)
	}
	as := fixture.Agents{"db-0": {}, "db-1": {}}
	c.dial = as.Dialer()
	return f, c, as
}

func backupOf(f *fixture.Fixture, name string) *v1alpha1.MySQLBackup {
	return fixture.Get(f, &v1alpha1.MySQLBackup{}, name)
}

func complete(b *v1alpha1.MySQLBackup) *metav1.Condition {
	return meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionComplete)
}

// A backup goes Pending -> Running on the replica -> Complete, polling the agent on a
// RequeueAfter while it runs, and costs nothing once finished.
func TestBackupRunsOnAReplicaToCompletion(t *testing.T) {
	f, c, as := start(t, cluster(), storageSecret(true), newBackup("b1"))

	res := f.Sync(c.Sync, "b1")
	if res != ctrl.After(pollInterval) {
		t.Errorf("result %+v, want a poll", res)
	}
	b := backupOf(f, "b1")
	if b.Status.Phase != v1alpha1.JobRunning || b.Status.Member != "db-1" || b.Status.Location != "s3://bucket/ns/db/b1-uid-b1.sql.zst" {
		t.Fatalf("status %+v", b.Status)
	}
	if got := as["db-1"].Calls; !slices.Equal(got, []string{"StartBackup uid-b1"}) || len(as["db-0"].Calls) != 0 {
		t.Errorf("agent calls: db-1 %v, db-0 %v", got, as["db-0"].Calls)
	}
	if ev := f.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal BackupStarted Member db-1 takes a logical backup") {
		t.Errorf("events %q", ev)
	}

	// Running: the agent is asked again later; nothing is written meanwhile.
	if res := f.Sync(c.Sync, "b1"); res != ctrl.After(pollInterval) {
		t.Errorf("while running: result %+v", res)
	}
	if w := f.Writes(); len(w) != 0 {
		t.Errorf("while running wrote %q", w)
	}

	as["db-1"].Set("uid-b1", func(s *agentapi.BackupState) {
		s.Phase, s.Size, s.SHA256, s.GTID = agentapi.BackupComplete, 42, "abc", "0-1-7"
	})
	if res := f.Sync(c.Sync, "b1"); res != (ctrl.Result{}) {
		t.Errorf("completed: result %+v, want none", res)
	}
	b = backupOf(f, "b1")
	if b.Status.Phase != v1alpha1.JobComplete || b.Status.SizeBytes != 42 || b.Status.GTIDPosition != "0-1-7" || complete(b).Status != metav1.ConditionTrue {
		t.Fatalf("completed status %+v", b.Status)
	}
	if ev := f.Events(); len(ev) != 1 || ev[0] != "Normal BackupCompleted Stored 42 bytes at s3://bucket/ns/db/b1-uid-b1.sql.zst, consistent with GTID 0-1-7" {
		t.Errorf("events %q", ev)
	}
	f.Sync(c.Sync, "b1")
	if w := f.Writes(); len(w) != 0 {
		t.Errorf("a finished backup wrote %q", w)
	}
}

// A storage Secret without the opt-in label keeps the backup Pending with a condition naming
// the label; it is looked at again later (no watch covers user Secrets), with no second event.
func TestBackupWaitsForALabelledStorageSecret(t *testing.T) {
	f, c, as := start(t, cluster(), storageSecret(false), newBackup("b1"))
	if res := f.Sync(c.Sync, "b1"); res != ctrl.After(waitInterval) {
		t.Errorf("result %+v, want a later look", res)
	}
	b := backupOf(f, "b1")
	if cond := complete(b); b.Status.Phase != v1alpha1.JobPending || cond == nil || cond.Reason != v1alpha1.ReasonWaiting ||
		!strings.Contains(cond.Message, v1alpha1.LabelStorageCredentials) || strings.Contains(cond.Message, "s3cr3t") {
		t.Fatalf("status %+v", b.Status)
	}
	if ev := f.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal BackupWaiting ") {
		t.Errorf("events %q", ev)
	}
	f.Sync(c.Sync, "b1")
	if w, ev := f.Writes(), f.Events(); len(w) != 0 || len(ev) != 0 {
		t.Errorf("waiting again wrote %q and emitted %q", w, ev)
	}
	if len(as["db-1"].Calls) != 0 {
		t.Errorf("an agent was asked before the storage was usable: %v", as["db-1"].Calls)
	}

	f.Update(storageSecret(true))
	f.Sync(c.Sync, "b1")
	if b := backupOf(f, "b1"); b.Status.Phase != v1alpha1.JobRunning {
		t.Errorf("after labelling: phase %s", b.Status.Phase)
	}
}

// A cluster that does not exist keeps the backup Pending without a requeue: the cluster's
// appearance wakes it.
func TestBackupOfAMissingClusterWaitsForIt(t *testing.T) {
	f, c, _ := start(t, storageSecret(true), newBackup("b1"))
	if res := f.Sync(c.Sync, "b1"); res != (ctrl.Result{}) {
		t.Errorf("result %+v, want none", res)
	}
	if cond := complete(backupOf(f, "b1")); cond == nil || cond.Message != "MySQLCluster db not found" {
		t.Errorf("condition %+v", cond)
	}
}

// One backup per cluster runs at a time: the second waits, polling, until the first ends.
func TestOneBackupOfAClusterAtATime(t *testing.T) {
	f, c, as := start(t, cluster(), storageSecret(true), newBackup("b1"), newBackup("b2"))
	f.Sync(c.Sync, "b1")
	if res := f.Sync(c.Sync, "b2"); res != ctrl.After(pollInterval) {
		t.Errorf("second backup: result %+v", res)
	}
	if cond := complete(backupOf(f, "b2")); cond == nil || !strings.Contains(cond.Message, "waiting for MySQLBackup b1") {
		t.Errorf("second backup's condition %+v", cond)
	}
	as["db-1"].Set("uid-b1", func(s *agentapi.BackupState) { s.Phase = agentapi.BackupComplete })
	f.Sync(c.Sync, "b1")
	f.Sync(c.Sync, "b2")
	if b := backupOf(f, "b2"); b.Status.Phase != v1alpha1.JobRunning {
		t.Errorf("second backup after the first ended: phase %s", b.Status.Phase)
	}
}

// A backup the agent lost (it restarted) fails with a Warning; it is never retried.
func TestBackupLostByTheAgentFails(t *testing.T) {
	f, c, as := start(t, cluster(), storageSecret(true), newBackup("b1"))
	f.Sync(c.Sync, "b1")
	as["db-1"].Jobs = nil
	f.Sync(c.Sync, "b1")
	b := backupOf(f, "b1")
	if cond := complete(b); b.Status.Phase != v1alpha1.JobFailed || cond.Status != metav1.ConditionFalse || cond.Message != "the agent restarted during the backup" {
		t.Fatalf("status %+v", b.Status)
	}
	if ev := f.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning BackupFailed ") {
		t.Errorf("events %q", ev)
	}
	f.Sync(c.Sync, "b1")
	if n := len(as["db-1"].Calls); n != 2 {
		t.Errorf("a failed backup called its agent again: %v", as["db-1"].Calls)
	}
}

// An agent that does not answer while the backup runs is a transient error: retried with
// backoff, the status unchanged.
func TestUnansweringAgentIsRetried(t *testing.T) {
	f, c, as := start(t, cluster(), storageSecret(true), newBackup("b1"))
	f.Sync(c.Sync, "b1")
	as["db-1"].Down = true
	if _, err := f.SyncErr(c.Sync, "b1"); err == nil {
		t.Fatal("no error while the agent does not answer")
	}
	if w := f.Writes(); len(w) != 0 {
		t.Errorf("wrote %q", w)
	}
}
