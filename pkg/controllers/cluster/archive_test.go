package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	fx "github.com/mysqlop/mysql-operator/pkg/controllers/internal/fixture"
)

func archiveSpec() *v1alpha1.BinlogArchiveSpec {
	return &v1alpha1.BinlogArchiveSpec{Interval: &metav1.Duration{Duration: 10 * time.Second},
		Storage: v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{Bucket: "bk", CredentialsSecretRef: v1alpha1.LocalReference{Name: "s3"}}}}
}

func TestArchiveStatus(t *testing.T) {
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	reported := func(mutate func(*agentapi.ArchiveState)) *archiveView {
		s := &agentapi.ArchiveState{Config: "c", End: "0-1-9", RoundTime: at, LastArchiveTime: &at, LagSeconds: 3, LagBytes: 400}
		mutate(s)
		return &archiveView{Member: "db-0", State: s}
	}
	for _, tc := range []struct {
		name   string
		spec   *v1alpha1.BinlogArchiveSpec
		view   *archiveView
		status metav1.ConditionStatus
		reason string
	}{
		{"no archive", nil, nil, "", ""},
		{"not seen yet", archiveSpec(), nil, metav1.ConditionFalse, v1alpha1.ReasonArchivePending},
		{"configured, no round yet", archiveSpec(), &archiveView{Member: "db-0", State: &agentapi.ArchiveState{Config: "c"}}, metav1.ConditionFalse, v1alpha1.ReasonArchivePending},
		{"archiving", archiveSpec(), reported(func(*agentapi.ArchiveState) {}), metav1.ConditionTrue, v1alpha1.ReasonArchiving},
		{"lagging", archiveSpec(), reported(func(s *agentapi.ArchiveState) { s.LagSeconds = 25 }), metav1.ConditionFalse, v1alpha1.ReasonArchiveLagging},
		{"round failed", archiveSpec(), reported(func(s *agentapi.ArchiveState) { s.Error = "upload: 403" }), metav1.ConditionFalse, v1alpha1.ReasonArchiveFailed},
		{"gap", archiveSpec(), reported(func(s *agentapi.ArchiveState) { s.Gap = true }), metav1.ConditionFalse, v1alpha1.ReasonArchiveGap},
		{"primary read-only", archiveSpec(), reported(func(s *agentapi.ArchiveState) { s.Idle = true }), metav1.ConditionFalse, v1alpha1.ReasonArchivePending},
		{"storage unusable", archiveSpec(), &archiveView{Member: "db-0", Err: "storage credentials Secret s3 is not labelled"}, metav1.ConditionFalse, v1alpha1.ReasonArchiveFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, cond := archiveStatus(tc.spec, tc.view)
			if tc.spec == nil {
				if st != nil || cond != nil {
					t.Fatalf("status %+v condition %+v without an archive", st, cond)
				}
				return
			}
			if cond.Status != tc.status || cond.Reason != tc.reason {
				t.Errorf("condition %s/%s %q, want %s/%s", cond.Status, cond.Reason, cond.Message, tc.status, tc.reason)
			}
			if tc.view != nil && tc.view.State != nil && tc.view.State.RoundTime.Equal(at) && (st.End != "0-1-9" || st.Member != "db-0" || st.LastArchiveTime == nil) {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// The runner's archiver configures every member's agent once per configuration, reports the
// primary's state, refuses an unlabelled storage Secret, and stops every agent once the spec
// drops the archive.
func TestArchiverConfiguresEveryMember(t *testing.T) {
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3"},
		Data: map[string][]byte{"accessKeyId": []byte("AKID"), "secretAccessKey": []byte("s3cr3t")}}
	f := newFixture(t, config("v1"), creds)
	as := fx.Agents{"db-0": {}, "db-1": {}, "db-2": {}}
	f.ctrl.dial = as.Dialer()
	cl := mariadb(3, "10.11.6")
	cl.Spec.BinlogArchive = archiveSpec()
	pods := []string{"db-0", "db-1", "db-2"}
	ctx := context.Background()
	var a archiver

	v := a.sync(ctx, f.ctrl, cl, pods, "db-1")
	if v == nil || !strings.Contains(v.Err, "not labelled") || len(as["db-0"].Calls) != 0 {
		t.Fatalf("unlabelled Secret: view %+v, calls %v", v, as["db-0"].Calls)
	}

	creds.Labels = map[string]string{v1alpha1.LabelStorageCredentials: "true"}
	if _, err := f.kube.CoreV1().Secrets(ns).Update(ctx, creds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.req = nil // as after the TTL
	v = a.sync(ctx, f.ctrl, cl, pods, "db-1")
	if v.Err != "" || v.Member != "db-1" || v.State == nil || v.State.Config == "" {
		t.Fatalf("view %+v", v)
	}
	for _, p := range pods {
		if !slices.Contains(as[p].Calls, "ConfigureArchive ns/db/binlog") {
			t.Errorf("%s not configured: %v", p, as[p].Calls)
		}
	}
	a.sync(ctx, f.ctrl, cl, pods, "db-1")
	for _, p := range pods {
		if n := strings.Count(strings.Join(as[p].Calls, ","), "ConfigureArchive"); n != 1 {
			t.Errorf("%s configured %d times for one configuration", p, n)
		}
	}

	// An agent that restarted forgot its configuration: it is configured again.
	as["db-2"].Archiving = agentapi.ArchiveState{}
	a.sync(ctx, f.ctrl, cl, pods, "db-1")
	if n := strings.Count(strings.Join(as["db-2"].Calls, ","), "ConfigureArchive"); n != 2 {
		t.Errorf("a restarted agent was configured %d times in all, want 2", n)
	}

	// The primary's agent does not answer: the view says so.
	as["db-1"].Down = true
	if v := a.sync(ctx, f.ctrl, cl, pods, "db-1"); !strings.Contains(v.Err, "agent of db-1") || v.State != nil {
		t.Errorf("primary's agent down: %+v", v)
	}
	as["db-1"].Down = false

	cl.Spec.BinlogArchive = nil
	if v := a.sync(ctx, f.ctrl, cl, pods, "db-1"); v != nil {
		t.Errorf("view without an archive: %+v", v)
	}
	for _, p := range pods {
		if !slices.Contains(as[p].Calls, "StopArchive") || as[p].Archiving.Config != "" {
			t.Errorf("%s not stopped: %v", p, as[p].Calls)
		}
	}

	// A new operator process (a new archiver) finds an agent an earlier one left archiving
	// after the spec dropped the archive: it stops that one, and asks the others only once.
	as["db-2"].Archiving.Config = "left-over"
	for _, p := range pods {
		as[p].Calls = nil
	}
	var fresh archiver
	fresh.sync(ctx, f.ctrl, cl, pods, "db-1")
	fresh.sync(ctx, f.ctrl, cl, pods, "db-1")
	if !slices.Equal(as["db-2"].Calls, []string{"Archive", "StopArchive"}) || !slices.Equal(as["db-0"].Calls, []string{"Archive"}) {
		t.Errorf("after a restart: db-2 %v, db-0 %v", as["db-2"].Calls, as["db-0"].Calls)
	}
}

// The primary's report becomes status.binlogArchive and the Archiving condition; a condition
// turning False for a reason other than waiting is a Warning event.
func TestArchiveReachesTheStatus(t *testing.T) {
	c := mariadb(3, "10.11.6")
	c.Spec.BinlogArchive = archiveSpec()
	f := inSync(t, c)
	fake := withClustering(f, 0)
	now := time.Now().UTC()
	fake.archiving = &archiveView{Member: "db-0", State: &agentapi.ArchiveState{Config: "c", End: "0-1-42", RoundTime: now, LastArchiveTime: &now}}
	f.sync()
	st := f.cluster().Status
	cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionArchiving)
	if st.BinlogArchive == nil || st.BinlogArchive.End != "0-1-42" || cond == nil || cond.Status != metav1.ConditionTrue {
		t.Fatalf("status %+v condition %+v", st.BinlogArchive, cond)
	}
	f.settle()
	f.events()
	fake.archiving = &archiveView{Member: "db-0", State: &agentapi.ArchiveState{Config: "c", RoundTime: now, Error: "upload: 403 Forbidden"}}
	f.sync()
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ArchiveFailed The archiver of db-0 failed: upload: 403") {
		t.Errorf("events %q", ev)
	}
	f.settle()
	f.editCluster(func(c *v1alpha1.MySQLCluster) { c.Spec.BinlogArchive = nil })
	f.sync()
	if st := f.cluster().Status; st.BinlogArchive != nil || meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionArchiving) != nil {
		t.Errorf("archive left in the status: %+v %v", st.BinlogArchive, st.Conditions)
	}
}

// A restore's fence pauses archiving on every member (a member whose agent does not answer is
// told again at the next round), and the timeline the restore records moves the archive to a
// prefix of its own once the fence is lifted.
func TestArchivingPausesForARestoreAndResumesInANewTimeline(t *testing.T) {
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s3", Labels: map[string]string{v1alpha1.LabelStorageCredentials: "true"}},
		Data: map[string][]byte{"accessKeyId": []byte("AKID"), "secretAccessKey": []byte("s3cr3t")}}
	f := newFixture(t, config("v1"), creds)
	as := fx.Agents{"db-0": {}, "db-1": {}}
	f.ctrl.dial = as.Dialer()
	cl := mariadb(2, "10.11.6")
	cl.Spec.BinlogArchive = archiveSpec()
	pods := []string{"db-0", "db-1"}
	ctx := context.Background()
	var a archiver
	a.sync(ctx, f.ctrl, cl, pods, "db-0")
	if as["db-0"].Archiving.Config == "" || as["db-1"].Archiving.Config == "" {
		t.Fatal("not configured")
	}

	cl.Annotations = map[string]string{v1alpha1.AnnotationRestore: "r"}
	as["db-1"].Down = true
	v := a.sync(ctx, f.ctrl, cl, pods, "db-0")
	if v == nil || v.Paused != "r" || as["db-0"].Archiving.Config != "" {
		t.Fatalf("fenced: view %+v, db-0 %+v", v, as["db-0"].Archiving)
	}
	st, cond := archiveStatus(cl.Spec.BinlogArchive, v)
	if st == nil || cond.Reason != v1alpha1.ReasonArchivePending || !strings.Contains(cond.Message, "paused while MySQLRestore r") {
		t.Errorf("paused condition %+v", cond)
	}
	as["db-1"].Down = false
	a.sync(ctx, f.ctrl, cl, pods, "db-0")
	if as["db-1"].Archiving.Config != "" {
		t.Errorf("db-1 still archiving after its agent answered again: %v", as["db-1"].Calls)
	}

	cl.Annotations = map[string]string{v1alpha1.AnnotationArchiveTimeline: "20261204T100000Z"}
	a.sync(ctx, f.ctrl, cl, pods, "db-0")
	for _, p := range pods {
		if !slices.Contains(as[p].Calls, "ConfigureArchive ns/db/binlog/20261204T100000Z") {
			t.Errorf("%s not configured in the new timeline: %v", p, as[p].Calls)
		}
	}
}

func TestRecoverableWindow(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 12, 4, 10, 0, s, 0, time.UTC) }
	backup := func(name string, done int, phase v1alpha1.JobPhase) *v1alpha1.MySQLBackup {
		t := metav1.NewTime(at(done))
		return &v1alpha1.MySQLBackup{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: v1alpha1.MySQLBackupStatus{Phase: phase, CompletionTime: &t, GTIDPosition: fmt.Sprintf("0-1-%d", done)}}
	}
	view := func(start string, until int) *archiveView {
		u := at(until)
		return &archiveView{State: &agentapi.ArchiveState{Start: start, Until: &u}}
	}
	backups := []*v1alpha1.MySQLBackup{backup("b2", 20, v1alpha1.JobComplete), backup("b1", 5, v1alpha1.JobComplete), backup("b0", 1, v1alpha1.JobFailed)}
	for _, tc := range []struct {
		name     string
		timeline string
		backups  []*v1alpha1.MySQLBackup
		view     *archiveView
		want     string
	}{
		{"the oldest backup to the last archived transaction", "", backups, view("", 30), "10:00:05-10:00:30"},
		{"a backup the archive's chain starts after does not count", "", backups, view("0-1-10", 30), "10:00:20-10:00:30"},
		{"the timeline excludes older backups", "20261204T100010Z", backups, view("", 30), "10:00:20-10:00:30"},
		{"no backup", "", nil, view("", 30), "none"},
		{"no report", "", backups, &archiveView{}, "none"},
		{"the archive ends before the backup", "", backups[:1], view("", 15), "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := mariadb(3, "10.11.6")
			cl.Spec.BinlogArchive = archiveSpec()
			if tc.timeline != "" {
				cl.Annotations = map[string]string{v1alpha1.AnnotationArchiveTimeline: tc.timeline}
			}
			from, until := recoverableWindow(cl, tc.backups, tc.view)
			got := "none"
			if from != nil {
				got = from.UTC().Format("15:04:05") + "-" + until.UTC().Format("15:04:05")
			}
			if got != tc.want {
				t.Errorf("window %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRetainFrom(t *testing.T) {
	done := func(name, gtid string, s int, phase v1alpha1.JobPhase) *v1alpha1.MySQLBackup {
		tm := metav1.NewTime(time.Date(2026, 12, 4, 10, 0, s, 0, time.UTC))
		return &v1alpha1.MySQLBackup{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1alpha1.MySQLBackupStatus{Phase: phase, CompletionTime: &tm, GTIDPosition: gtid}}
	}
	backups := []*v1alpha1.MySQLBackup{done("b2", "0-1-20", 20, v1alpha1.JobComplete), done("b1", "0-1-5", 5, v1alpha1.JobComplete), done("b0", "0-1-1", 1, v1alpha1.JobFailed)}
	cl := mariadb(3, "10.11.6")
	if got := retainFrom(cl, backups); got != "0-1-5" {
		t.Errorf("retain from %q, want the oldest Complete backup's 0-1-5", got)
	}
	cl.Annotations = map[string]string{v1alpha1.AnnotationArchiveTimeline: "20261204T100010Z"}
	if got := retainFrom(cl, backups); got != "0-1-20" {
		t.Errorf("in a timeline begun at 10:00:10: %q, want 0-1-20", got)
	}
	if got := retainFrom(cl, backups[1:]); got != "" {
		t.Errorf("no backup in the timeline: %q, want everything kept", got)
	}
}
