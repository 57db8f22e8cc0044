package backupschedule

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/fixture"
)

func schedule(spec string) *v1alpha1.MySQLBackupSchedule {
	return &v1alpha1.MySQLBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: fixture.Namespace, Name: "nightly", Generation: 1,
			CreationTimestamp: metav1.NewTime(t0.Add(-90 * time.Minute))},
		Spec: v1alpha1.MySQLBackupScheduleSpec{Schedule: spec,
			BackupTemplate: v1alpha1.MySQLBackupSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}}},
	}
}

func start(t *testing.T, objs ...runtime.Object) (*fixture.Fixture, *Controller) {
	t.Helper()
	f := fixture.New(t, objs...)
	c, err := New(f.MySQL, f.Set, f.Recorder)
	if err != nil {
		t.Fatal(err)
	}
	c.now = func() time.Time { return t0 }
	return f, c
}

// A due backup is created once, named after its due time; the schedule then requeues itself
// for the next due time and an unchanged schedule costs no write.
func TestScheduleCreatesTheDueBackupOnce(t *testing.T) {
	f, c := start(t, schedule("@hourly"))
	res := f.Sync(c.Sync, "nightly")
	due := t0.Add(-time.Hour).Truncate(time.Hour).Add(time.Hour) // 10:00, the last hour boundary
	name := fmt.Sprintf("nightly-%d", due.Unix())
	if w := f.Writes(); !slices.Equal(w, []string{"create mysqlbackups " + name, "update mysqlbackupschedules/status nightly"}) {
		t.Fatalf("wrote %q", w)
	}
	if want := t0.Add(time.Hour).Sub(t0) + 100*time.Millisecond; res != ctrl.After(want) {
		t.Errorf("result %+v, want a requeue at the next due time (%v)", res, want)
	}
	b := fixture.Get(f, &v1alpha1.MySQLBackup{}, name)
	if b.Labels[v1alpha1.LabelSchedule] != "nightly" || b.Spec.ClusterRef.Name != "db" {
		t.Errorf("backup %+v", b.ObjectMeta)
	}
	s := fixture.Get(f, &v1alpha1.MySQLBackupSchedule{}, "nightly")
	if !slices.Equal(s.Status.Active, []string{name}) || s.Status.LastScheduleTime == nil || !s.Status.LastScheduleTime.Time.Equal(due) {
		t.Errorf("status %+v", s.Status)
	}
	if ev := f.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal BackupScheduled Created backup "+name) {
		t.Errorf("events %q", ev)
	}
	f.Sync(c.Sync, "nightly")
	if w := f.Writes(); len(w) != 0 {
		t.Errorf("an in-sync schedule wrote %q", w)
	}
}

// A schedule that cannot be parsed gets Ready=False and one Warning, and no requeue: only an
// edit of the spec can fix it.
func TestInvalidScheduleIsReportedOnce(t *testing.T) {
	f, c := start(t, schedule("every now and then"))
	if res := f.Sync(c.Sync, "nightly"); res != (ctrl.Result{}) {
		t.Errorf("result %+v, want no requeue", res)
	}
	s := fixture.Get(f, &v1alpha1.MySQLBackupSchedule{}, "nightly")
	if cond := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReady); cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonInvalidSchedule {
		t.Errorf("condition %+v", cond)
	}
	if ev := f.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning InvalidSpec ") {
		t.Errorf("events %q", ev)
	}
	f.Sync(c.Sync, "nightly")
	if w, ev := f.Writes(), f.Events(); len(w) != 0 || len(ev) != 0 {
		t.Errorf("again: wrote %q, emitted %q", w, ev)
	}
}

// Retention deletes the finished backups it no longer keeps, and only the schedule's.
func TestRetentionPrunesOldBackups(t *testing.T) {
	keep := int32(1)
	s := schedule("@hourly")
	s.Spec.Retention.KeepLast = &keep
	s.Status.LastScheduleTime = &metav1.Time{Time: t0}
	mine := func(name string, hoursAgo int) *v1alpha1.MySQLBackup {
		b := bk(name, v1alpha1.JobComplete, hoursAgo)
		b.Namespace, b.Labels = fixture.Namespace, map[string]string{v1alpha1.LabelSchedule: "nightly"}
		return b
	}
	other := bk("manual", v1alpha1.JobComplete, 5)
	other.Namespace = fixture.Namespace
	f, c := start(t, s, mine("old", 3), mine("new", 1), other)
	f.Sync(c.Sync, "nightly")
	var deleted []string
	for _, w := range f.Writes() {
		if strings.HasPrefix(w, "delete ") {
			deleted = append(deleted, w)
		}
	}
	if !slices.Equal(deleted, []string{"delete mysqlbackups old"}) {
		t.Errorf("deleted %q", deleted)
	}
}

// spec.verify: the newest completed backup gets one verifying MySQLRestore, owned by the
// backup (retention deletes it with the backup) and labelled as the backup; no second one.
func TestScheduleVerifiesTheNewestCompletedBackup(t *testing.T) {
	s := schedule("@hourly")
	s.Spec.Verify = true
	s.Status.LastScheduleTime = &metav1.Time{Time: t0}
	mine := func(name string, phase v1alpha1.JobPhase, hoursAgo int) *v1alpha1.MySQLBackup {
		b := bk(name, phase, hoursAgo)
		b.Namespace, b.UID, b.Labels = fixture.Namespace, types.UID("uid-"+name), map[string]string{v1alpha1.LabelSchedule: "nightly"}
		b.Spec.ClusterRef.Name = "db"
		return b
	}
	f, c := start(t, s, mine("older", v1alpha1.JobComplete, 3), mine("newest", v1alpha1.JobComplete, 1), mine("running", v1alpha1.JobRunning, 0))
	f.Sync(c.Sync, "nightly")
	r := fixture.Get(f, &v1alpha1.MySQLRestore{}, "newest-verify")
	if !r.Spec.Verify || r.Spec.BackupRef.Name != "newest" || r.Spec.ClusterRef.Name != "db" || r.Labels[v1alpha1.LabelSchedule] != "nightly" ||
		len(r.OwnerReferences) != 1 || r.OwnerReferences[0].UID != "uid-newest" || r.OwnerReferences[0].Kind != "MySQLBackup" {
		t.Fatalf("verification %+v", r)
	}
	var created []string
	for _, w := range f.Writes() {
		if strings.HasPrefix(w, "create mysqlrestores") {
			created = append(created, w)
		}
	}
	if !slices.Equal(created, []string{"create mysqlrestores newest-verify"}) {
		t.Errorf("created %q", created)
	}
	f.Sync(c.Sync, "nightly")
	if w := f.Writes(); len(w) != 0 {
		t.Errorf("again: wrote %q", w)
	}
}
