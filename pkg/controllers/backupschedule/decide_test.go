package backupschedule

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func bk(name string, phase v1alpha1.JobPhase, createdHoursAgo int) *v1alpha1.MySQLBackup {
	b := &v1alpha1.MySQLBackup{}
	b.Name = name
	b.CreationTimestamp = metav1.NewTime(t0.Add(-time.Duration(createdHoursAgo) * time.Hour))
	b.Status.Phase = phase
	if phase == v1alpha1.JobComplete || phase == v1alpha1.JobFailed {
		done := metav1.NewTime(b.CreationTimestamp.Add(10 * time.Minute))
		b.Status.CompletionTime = &done
	}
	return b
}

func TestDecide(t *testing.T) {
	hourly, err := parse(&v1alpha1.MySQLBackupScheduleSpec{Schedule: "@hourly"})
	if err != nil {
		t.Fatal(err)
	}
	two := int32(2)
	day := metav1.Duration{Duration: 24 * time.Hour}
	for _, tc := range []struct {
		name    string
		now     time.Time
		last    time.Time
		spec    v1alpha1.MySQLBackupScheduleSpec
		backups []*v1alpha1.MySQLBackup
		want    plan
	}{
		{"not due", t0.Add(30 * time.Minute), t0, v1alpha1.MySQLBackupScheduleSpec{}, nil,
			plan{Next: t0.Add(time.Hour)}},
		{"due", t0.Add(time.Hour + time.Second), t0, v1alpha1.MySQLBackupScheduleSpec{}, nil,
			plan{Due: t0.Add(time.Hour), Next: t0.Add(2 * time.Hour)}},
		{"missed runs: only the latest", t0.Add(5*time.Hour + time.Minute), t0, v1alpha1.MySQLBackupScheduleSpec{}, nil,
			plan{Due: t0.Add(5 * time.Hour), Next: t0.Add(6 * time.Hour)}},
		{"suspended", t0.Add(time.Hour), t0, v1alpha1.MySQLBackupScheduleSpec{Suspend: true}, nil,
			plan{Next: t0.Add(2 * time.Hour)}},
		{"forbid while one runs", t0.Add(time.Hour), t0, v1alpha1.MySQLBackupScheduleSpec{},
			[]*v1alpha1.MySQLBackup{bk("r", v1alpha1.JobRunning, 0)},
			plan{Due: t0.Add(time.Hour), Skipped: true, Active: []string{"r"}, Next: t0.Add(2 * time.Hour)}},
		{"replace", t0.Add(time.Hour), t0, v1alpha1.MySQLBackupScheduleSpec{ConcurrencyPolicy: v1alpha1.ConcurrencyReplace},
			[]*v1alpha1.MySQLBackup{bk("r", v1alpha1.JobPending, 0)},
			plan{Due: t0.Add(time.Hour), Replace: []string{"r"}, Active: []string{"r"}, Next: t0.Add(2 * time.Hour)}},
		{"allow", t0.Add(time.Hour), t0, v1alpha1.MySQLBackupScheduleSpec{ConcurrencyPolicy: v1alpha1.ConcurrencyAllow},
			[]*v1alpha1.MySQLBackup{bk("r", v1alpha1.JobRunning, 0)},
			plan{Due: t0.Add(time.Hour), Active: []string{"r"}, Next: t0.Add(2 * time.Hour)}},
		{"keepLast", t0, t0, v1alpha1.MySQLBackupScheduleSpec{Retention: v1alpha1.BackupRetention{KeepLast: &two}},
			[]*v1alpha1.MySQLBackup{bk("c3", v1alpha1.JobComplete, 3), bk("c1", v1alpha1.JobComplete, 1), bk("c2", v1alpha1.JobComplete, 2)},
			plan{Prune: []string{"c3"}, LastSuccessful: "c1", Next: t0.Add(time.Hour)}},
		{"maxAge never prunes the newest", t0, t0, v1alpha1.MySQLBackupScheduleSpec{Retention: v1alpha1.BackupRetention{MaxAge: &day}},
			[]*v1alpha1.MySQLBackup{bk("old", v1alpha1.JobComplete, 50), bk("older", v1alpha1.JobComplete, 70)},
			plan{Prune: []string{"older"}, LastSuccessful: "old", Next: t0.Add(time.Hour)}},
		{"verify the newest complete", t0, t0, v1alpha1.MySQLBackupScheduleSpec{Verify: true},
			[]*v1alpha1.MySQLBackup{bk("c2", v1alpha1.JobComplete, 2), bk("c1", v1alpha1.JobComplete, 1), bk("r", v1alpha1.JobRunning, 0)},
			plan{LastSuccessful: "c1", Verify: "c1", Active: []string{"r"}, Next: t0.Add(time.Hour)}},
		{"nothing to verify yet", t0, t0, v1alpha1.MySQLBackupScheduleSpec{Verify: true},
			[]*v1alpha1.MySQLBackup{bk("f", v1alpha1.JobFailed, 1)},
			plan{Next: t0.Add(time.Hour)}},
		{"failed kept three", t0, t0, v1alpha1.MySQLBackupScheduleSpec{},
			[]*v1alpha1.MySQLBackup{bk("f1", v1alpha1.JobFailed, 1), bk("f2", v1alpha1.JobFailed, 2), bk("f3", v1alpha1.JobFailed, 3), bk("f4", v1alpha1.JobFailed, 4)},
			plan{Prune: []string{"f4"}, Next: t0.Add(time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decide(tc.now, tc.last, hourly, &tc.spec, tc.backups)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tz := "Europe/Paris"
	s, err := parse(&v1alpha1.MySQLBackupScheduleSpec{Schedule: "30 2 * * *", TimeZone: &tz})
	if err != nil {
		t.Fatal(err)
	}
	paris, _ := time.LoadLocation(tz)
	if got, want := s.Next(t0), time.Date(2026, 12, 3, 2, 30, 0, 0, paris); !got.Equal(want) {
		t.Errorf("next %v, want %v", got, want)
	}
	for _, bad := range []v1alpha1.MySQLBackupScheduleSpec{{Schedule: "61 * * * *"}, {Schedule: "@sometimes"}, {Schedule: "@daily", TimeZone: ptr("Mars/Olympus")}} {
		if _, err := parse(&bad); err == nil {
			t.Errorf("%+v parsed", bad)
		}
	}
}

func ptr(s string) *string { return &s }

func TestLastSuccessAndInterval(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &v1alpha1.MySQLBackupSchedule{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	done := func(phase v1alpha1.JobPhase, at time.Time) *v1alpha1.MySQLBackup {
		t := metav1.NewTime(at)
		return &v1alpha1.MySQLBackup{Status: v1alpha1.MySQLBackupStatus{Phase: phase, CompletionTime: &t}}
	}
	if got := lastSuccess(s, nil); !got.Equal(created) {
		t.Errorf("no backup: %v, want the schedule's creation", got)
	}
	newest := created.Add(48 * time.Hour)
	got := lastSuccess(s, []*v1alpha1.MySQLBackup{done(v1alpha1.JobComplete, created.Add(24*time.Hour)), done(v1alpha1.JobComplete, newest),
		done(v1alpha1.JobFailed, created.Add(72*time.Hour))})
	if !got.Equal(newest) {
		t.Errorf("last success %v, want the newest complete backup's %v (a failed one does not count)", got, newest)
	}
	daily, err := parse(&v1alpha1.MySQLBackupScheduleSpec{Schedule: "@daily"})
	if err != nil {
		t.Fatal(err)
	}
	if got := interval(daily, created); got != 24*time.Hour {
		t.Errorf("interval %v, want 24h", got)
	}
	if got := interval(daily, time.Time{}); got != 0 {
		t.Errorf("interval with no next run %v, want 0", got)
	}
}
