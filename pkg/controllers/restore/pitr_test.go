package restore

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/archive"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/fixture"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/test/s3"
)

func at(s int) time.Time { return time.Date(2026, 12, 4, 10, 0, s, 0, time.UTC) }

func backupAt(name, gtid string, done int) *v1alpha1.MySQLBackup {
	b := completeBackup(v1alpha1.JobComplete)
	b.Name, b.UID, b.Status.GTIDPosition = name, types.UID("uid-"+name), gtid
	t := metav1.NewTime(at(done))
	b.Status.CompletionTime = &t
	return b
}

func TestChooseBackup(t *testing.T) {
	b1, b2 := backupAt("b1", "0-1-5", 5), backupAt("b2", "0-1-25", 25)
	running := backupAt("b3", "0-1-40", 40)
	running.Status.Phase = v1alpha1.JobRunning
	other := backupAt("other", "0-1-1", 1)
	other.Spec.ClusterRef.Name = "elsewhere"
	all := []*v1alpha1.MySQLBackup{b1, b2, running, other}
	tp := func(s int) *time.Time { t := at(s); return &t }
	for _, tc := range []struct {
		name    string
		since   time.Time
		target  archive.Target
		want    string
		waiting bool
	}{
		{"latest is the newest", time.Time{}, archive.Target{}, "b2", false},
		{"a time picks the newest before it", time.Time{}, archive.Target{Time: tp(20)}, "b1", false},
		{"a time at a completion takes it", time.Time{}, archive.Target{Time: tp(25)}, "b2", false},
		{"a GTID picks the newest inside it", time.Time{}, archive.Target{GTID: "0-1-24"}, "b1", false},
		{"before every backup", time.Time{}, archive.Target{Time: tp(2)}, "refused: no backup of MySQLCluster db precedes 2026-12-04T10:00:02Z: the oldest, b1", false},
		{"backups before the timeline do not count", at(10), archive.Target{Time: tp(20)}, "refused: no backup of MySQLCluster db precedes", false},
		{"no backup in the timeline yet", at(30), archive.Target{}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, wait, refused := chooseBackup(all, "db", tc.since, tc.target, mysql.MariaDB)
			got := refused
			if refused != "" {
				got = "refused: " + refused
			} else if b != nil {
				got = b.Name
			}
			if (wait != "") != tc.waiting || !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %q (wait %q), want %q (waiting %v)", got, wait, tc.want, tc.waiting)
			}
		})
	}
}

// pitrFixture is a cluster that archives to a real S3 server, with an archive of three files
// written by hand (10:00:00-10, 10:00:11-20, 10:00:21-30) and a backup at 10:00:05.
func pitrFixture(t *testing.T, restore *v1alpha1.MySQLRestore) (*fixture.Fixture, *Controller, fixture.Agents, *storage.Store) {
	t.Helper()
	gw := s3.Start(t)
	cfg := gw.AgentConfig("pitr")
	store, err := storage.New(cfg.Config())
	if err != nil {
		t.Fatal(err)
	}
	cl := cluster()
	cl.Spec.Flavor = v1alpha1.FlavorMariaDB
	cl.Spec.BinlogArchive = &v1alpha1.BinlogArchiveSpec{Storage: v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{
		Endpoint: cfg.Endpoint, Bucket: cfg.Bucket, Prefix: cfg.Prefix, Region: cfg.Region, ForcePathStyle: true,
		CredentialsSecretRef: v1alpha1.LocalReference{Name: "archive-s3"}}}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "archive-s3", Labels: map[string]string{v1alpha1.LabelStorageCredentials: "true"}},
		Data: map[string][]byte{"accessKeyId": []byte(cfg.AccessKeyID), "secretAccessKey": []byte(cfg.SecretAccessKey)}}
	prefix := resources.ArchivePrefix(cl)
	ix := archive.Index{Flavor: mysql.MariaDB}
	ctx := context.Background()
	for i, e := range []archive.Entry{
		{Object: "100/bin.000001", Start: "", End: "0-100-10", FirstTime: at(0), LastTime: at(10)},
		{Object: "100/bin.000002", Start: "0-100-10", End: "0-100-20", FirstTime: at(11), LastTime: at(20)},
		{Object: "101/bin.000001", Start: "0-100-20", End: "0-101-30", FirstTime: at(21), LastTime: at(30)},
	} {
		body := strings.Repeat("x", 100+i)
		if _, err := store.Put(ctx, prefix+"/"+e.Object, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		e.Size, e.Transactions = int64(len(body)), 10
		ix.Entries = append(ix.Entries, e)
	}
	b, _ := json.Marshal(ix)
	if _, err := store.Put(ctx, prefix+"/"+archive.IndexName, strings.NewReader(string(b))); err != nil {
		t.Fatal(err)
	}
	f, c, as := start(t, cl, backupAt("b1", "0-100-5", 5), storageSecret(), secret, restore)
	return f, c, as, store
}

func targetRestore(target v1alpha1.RestoreTarget) *v1alpha1.MySQLRestore {
	r := newRestore()
	r.Spec.BackupRef = v1alpha1.LocalReference{}
	r.Spec.Target = &target
	return r
}

// A restore to a time inside the archive, without a backupRef: the backup before it is
// chosen, writes stop only once archiving is paused, the backup is loaded, then the primary
// replays exactly the files up to the target with the backup's position as start, and the
// cluster resumes in a new archive timeline.
func TestPointInTimeRestoreReplaysTheArchive(t *testing.T) {
	target := metav1.NewTime(at(15))
	f, c, as, _ := pitrFixture(t, targetRestore(v1alpha1.RestoreTarget{Time: &target}))
	as["db-1"].Archiving.Config = "still-configured"

	f.Sync(c.Sync, "r")
	r := restoreOf(f)
	if r.Status.Phase != v1alpha1.JobRunning || r.Status.Backup != "b1" || clusterOf(f).Annotations[v1alpha1.AnnotationRestore] != "r" {
		t.Fatalf("start: status %+v", r.Status)
	}
	fenced(f, as)
	f.Sync(c.Sync, "r")
	if r := restoreOf(f); r.Status.Step != v1alpha1.RestoreFencing || !strings.Contains(meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionComplete).Message, "archiving to pause on db-1") {
		t.Fatalf("with archiving still configured on db-1: %+v", r.Status)
	}
	as["db-1"].Archiving.Config = ""
	f.Sync(c.Sync, "r")
	if r := restoreOf(f); r.Status.Step != v1alpha1.RestoreLoading {
		t.Fatalf("after the pause: step %s", r.Status.Step)
	}
	as["db-0"].Set("uid-r", func(s *agentapi.BackupState) { s.Phase = agentapi.BackupComplete })
	f.Sync(c.Sync, "r")
	r = restoreOf(f)
	req := as["db-0"].Requests["uid-r-replay"]
	if r.Status.Step != v1alpha1.RestoreReplaying || req.Method != agentapi.MethodReplay || req.Replay == nil {
		t.Fatalf("after loading: step %s, replay request %+v", r.Status.Step, req)
	}
	wantObjects := []string{"ns/db/binlog/100/bin.000001", "ns/db/binlog/100/bin.000002"}
	if !slices.Equal(req.Replay.Objects, wantObjects) || req.Replay.Start != "0-100-5" || !req.Replay.StopTime.Equal(at(15)) || req.Storage.AccessKeyID == "" {
		t.Errorf("replay request %+v (objects %v)", req.Replay, req.Replay.Objects)
	}
	last := at(15)
	as["db-0"].Set("uid-r-replay", func(s *agentapi.BackupState) {
		s.Phase, s.Transactions, s.GTID, s.LastTransactionTime = agentapi.BackupComplete, 10, "0-100-15", &last
	})
	f.Sync(c.Sync, "r")
	r = restoreOf(f)
	if r.Status.Step != v1alpha1.RestoreResuming || r.Status.Replay == nil || r.Status.Replay.Transactions != 10 || r.Status.Replay.GTID != "0-100-15" {
		t.Fatalf("after the replay: %+v replay %+v", r.Status, r.Status.Replay)
	}
	a := clusterOf(f).Annotations
	if a[v1alpha1.AnnotationRestore] != "" || a[v1alpha1.AnnotationArchiveTimeline] != resources.Timeline(r.Status.StartTime.Time) {
		t.Errorf("cluster annotations after the replay: %v", a)
	}
	if msg := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionComplete).Message; !strings.Contains(msg, "replayed 10 archived transactions up to 2026-12-04T10:00:15Z") {
		t.Errorf("message %q", msg)
	}
}

// Targets the archive cannot reach fail the restore before writes stop, naming the window.
func TestPointInTimeRestoreRefusesWhatTheArchiveCannotReach(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target v1alpha1.RestoreTarget
		delete string
		want   string
	}{
		{"after the archive", v1alpha1.RestoreTarget{Time: &metav1.Time{Time: at(45)}}, "",
			"2026-12-04T10:00:45Z is after the last archived transaction: the archive holds transactions from 2026-12-04T10:00:00Z to 2026-12-04T10:00:30Z"},
		{"before every backup", v1alpha1.RestoreTarget{Time: &metav1.Time{Time: at(2)}}, "", "no backup of MySQLCluster db precedes 2026-12-04T10:00:02Z"},
		{"a GTID the archive lacks", v1alpha1.RestoreTarget{GTID: "0-101-99"}, "", "GTID 0-101-99 is not in the archive"},
		{"a deleted file on the way", v1alpha1.RestoreTarget{Latest: true}, "100/bin.000002",
			"the archive has a gap, archived binary log missing: 100/bin.000002 (transactions 0-100-10 to 0-100-20, 2026-12-04T10:00:11Z to 2026-12-04T10:00:20Z)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c, _, store := pitrFixture(t, targetRestore(tc.target))
			if tc.delete != "" {
				if err := store.Delete(context.Background(), "ns/db/binlog/"+tc.delete); err != nil {
					t.Fatal(err)
				}
			}
			f.Sync(c.Sync, "r")
			r := restoreOf(f)
			cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionComplete)
			if r.Status.Phase != v1alpha1.JobFailed || cond.Reason != v1alpha1.ReasonTargetUnreachable || !strings.Contains(cond.Message, tc.want) {
				t.Errorf("status %+v\nmessage %q\nwant    %q", r.Status, cond.Message, tc.want)
			}
			if a := clusterOf(f).Annotations; a[v1alpha1.AnnotationRestore] != "" {
				t.Errorf("writes were stopped: %v", a)
			}
		})
	}
}
