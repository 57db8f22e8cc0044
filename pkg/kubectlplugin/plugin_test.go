package kubectlplugin

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

var now = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

func testCluster() *v1alpha1.MySQLCluster {
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop"}}
	c.Spec.Members, c.Spec.Flavor = 3, v1alpha1.FlavorMariaDB
	c.Status = v1alpha1.MySQLClusterStatus{Phase: v1alpha1.ClusterDegraded, Primary: "db-0", ReadyMembers: 2, Epoch: 4, CurrentVersion: "10.11.7",
		Instances: []v1alpha1.InstanceStatus{
			{Name: "db-0", Role: "primary", Ready: true, GTIDExecuted: "0-1-90", TLS: true},
			{Name: "db-1", Role: "replica", Ready: true, LagSeconds: ptr.To[int64](3), GTIDExecuted: "0-1-88", TLS: true},
			{Name: "db-2", Role: "replica", Ready: true, LagSeconds: ptr.To[int64](0), GTIDExecuted: "0-1-90", TLS: true},
		},
		Conditions: []metav1.Condition{{Type: "Ready", Status: "False", Reason: "MemberNotReady", Message: "db-1 lags"}, {Type: "Available", Status: "True", Reason: "PrimaryServes"}},
	}
	return c
}

func backup(name, cluster string, phase v1alpha1.JobPhase, completed time.Time, size int64) v1alpha1.MySQLBackup {
	b := v1alpha1.MySQLBackup{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.MySQLBackupSpec{ClusterRef: v1alpha1.ClusterReference{Name: cluster}}}
	b.Status.Phase, b.Status.SizeBytes = phase, size
	if !completed.IsZero() {
		b.Status.CompletionTime = &metav1.Time{Time: completed}
	}
	return b
}

func TestSummarizeAndPrint(t *testing.T) {
	backups := []v1alpha1.MySQLBackup{
		backup("old", "db", v1alpha1.JobComplete, now.Add(-48*time.Hour), 1<<20),
		backup("newest", "db", v1alpha1.JobComplete, now.Add(-90*time.Minute), 3<<30),
		backup("failed-later", "db", v1alpha1.JobFailed, now.Add(-time.Minute), 0),
		backup("other-cluster", "web", v1alpha1.JobComplete, now, 5),
	}
	s := Summarize(testCluster(), backups)
	if s.LastBackup == nil || s.LastBackup.Name != "newest" || s.LastBackup.Method != "logical" {
		t.Fatalf("last backup %+v, want the newest complete one of this cluster", s.LastBackup)
	}
	if s.Conditions[0].Type != "Available" {
		t.Errorf("conditions not sorted by type: %+v", s.Conditions)
	}
	var out bytes.Buffer
	if err := PrintSummary(&out, s, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"shop/db (mariadb 10.11.7)", "Degraded, 2/3 members ready", "db-0 (4 primary changes)",
		"newest (logical, 3.0 GiB, 1h ago)",
		"db-1    replica  true   3s   0-1-88",
		"Ready      False   MemberNotReady  db-1 lags",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSwitchoverTarget(t *testing.T) {
	c := testCluster()
	for _, tc := range []struct {
		name, to, want, err string
		edit                func(*v1alpha1.MySQLCluster)
	}{
		{name: "least lag by default", want: "db-2"},
		{name: "a named ready replica", to: "db-1", want: "db-1"},
		{name: "not a member", to: "db-9", err: "not a member"},
		{name: "the primary", to: "db-0", err: "already the primary"},
		{name: "a replica not ready", to: "db-2", err: "not ready", edit: func(c *v1alpha1.MySQLCluster) { c.Status.Instances[2].Ready = false }},
		{name: "unknown lag ranks last", want: "db-1", edit: func(c *v1alpha1.MySQLCluster) { c.Status.Instances[2].LagSeconds = nil }},
		{name: "no ready replica", err: "no ready replica", edit: func(c *v1alpha1.MySQLCluster) {
			c.Status.Instances[1].Ready, c.Status.Instances[2].Ready = false, false
		}},
	} {
		cc := c.DeepCopy()
		if tc.edit != nil {
			tc.edit(cc)
		}
		got, err := switchoverTarget(cc, tc.to)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %q, %v; want %q, %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestBackupSpec(t *testing.T) {
	storage := v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{Bucket: "b"}}
	sched := func(name, cluster string) v1alpha1.MySQLBackupSchedule {
		s := v1alpha1.MySQLBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.Spec.BackupTemplate = v1alpha1.MySQLBackupSpec{ClusterRef: v1alpha1.ClusterReference{Name: cluster}, Method: v1alpha1.BackupPhysical, Storage: storage}
		return s
	}
	like := backup("earlier", "db", v1alpha1.JobComplete, now, 1)
	like.Spec.Storage = storage
	for _, tc := range []struct {
		name      string
		schedules []v1alpha1.MySQLBackupSchedule
		schedule  string
		like      *v1alpha1.MySQLBackup
		err       string
	}{
		{name: "the cluster's only schedule", schedules: []v1alpha1.MySQLBackupSchedule{sched("nightly", "db"), sched("web", "web")}},
		{name: "a named schedule", schedules: []v1alpha1.MySQLBackupSchedule{sched("nightly", "db"), sched("hourly", "db")}, schedule: "hourly"},
		{name: "two schedules, none named", schedules: []v1alpha1.MySQLBackupSchedule{sched("nightly", "db"), sched("hourly", "db")}, err: "choose one with --schedule"},
		{name: "no schedule", schedules: []v1alpha1.MySQLBackupSchedule{sched("web", "web")}, err: "--like"},
		{name: "like a backup", like: &like},
		{name: "like another cluster's backup", like: ptr.To(backup("x", "web", v1alpha1.JobComplete, now, 1)), err: "not db"},
	} {
		spec, err := backupSpec("db", tc.schedules, tc.schedule, tc.like)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
			continue
		}
		if err == nil && (spec.ClusterRef.Name != "db" || spec.Storage != storage) {
			t.Errorf("%s: spec %+v", tc.name, spec)
		}
	}
}

func TestFindUserAndOptionFile(t *testing.T) {
	user := func(name, cluster, spec string) v1alpha1.MySQLUser {
		return v1alpha1.MySQLUser{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.MySQLUserSpec{ClusterRef: v1alpha1.ClusterReference{Name: cluster}, User: spec}}
	}
	users := []v1alpha1.MySQLUser{user("app", "db", ""), user("other", "web", "")}
	u, err := findUser(users, "db", "")
	if err != nil || u.Spec.User != "app" || u.Spec.PasswordSecretRef.Key != "password" {
		t.Fatalf("the only user, defaulted: %+v %v", u, err)
	}
	users = append(users, user("reporting", "db", "reports"))
	if _, err := findUser(users, "db", ""); err == nil || !strings.Contains(err.Error(), "app, reporting") {
		t.Errorf("two users, none named: %v", err)
	}
	if u, err := findUser(users, "db", "reporting"); err != nil || u.Spec.User != "reports" {
		t.Errorf("named: %+v %v", u, err)
	}
	if _, err := findUser(users, "db", "other"); err == nil {
		t.Error("another cluster's user was found")
	}
	got := string(optionFile("app", `pa"ss\word`))
	if want := "[client]\nuser=\"app\"\npassword=\"pa\\\"ss\\\\word\"\n"; got != want {
		t.Errorf("option file %q, want %q", got, want)
	}
}

func TestClientCommand(t *testing.T) {
	c := testCluster()
	if got := clientCommand(c, "db-0"); strings.Join(got, " ") != "mariadb --ssl" {
		t.Errorf("MariaDB with TLS: %v", got)
	}
	c.Spec.Flavor = v1alpha1.FlavorMySQL
	c.Status.Instances[0].TLS = false
	if got := clientCommand(c, "db-0"); strings.Join(got, " ") != "mysql --ssl-mode=DISABLED" {
		t.Errorf("MySQL without TLS: %v", got)
	}
}
