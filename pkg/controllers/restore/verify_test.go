package restore

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/archive"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/fixture"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

func TestScratchNames(t *testing.T) {
	for _, tc := range []struct{ name, wantBackup string }{
		{"nightly", "nightly-backup"},
		{strings.Repeat("a", 45), strings.Repeat("a", 45) + "-backup"},
		{strings.Repeat("a", 46), "verify-"},
		{"with.dot", "verify-"},
		{"1st", "verify-"},
	} {
		r := &v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{Name: tc.name, UID: types.UID("uid-" + tc.name)}}
		b, rp := scratchNames(r)
		if !strings.HasPrefix(b, tc.wantBackup) || !v1alpha1.ValidClusterName(b) || !v1alpha1.ValidClusterName(rp) || strings.TrimSuffix(b, "-backup") != strings.TrimSuffix(rp, "-replay") {
			t.Errorf("%q: scratch clusters %q and %q", tc.name, b, rp)
		}
	}
}

func TestChooseBase(t *testing.T) {
	b1, b2, b3 := backupAt("b1", "0-100-5", 5), backupAt("b2", "0-100-15", 15), backupAt("b3", "0-100-25", 25)
	same := backupAt("same", "0-100-15", 16) // finished after b2 at its position
	for _, tc := range []struct {
		name  string
		of    *v1alpha1.MySQLBackup
		all   []*v1alpha1.MySQLBackup
		since int
		start string
		want  string
	}{
		{"the newest before", b3, []*v1alpha1.MySQLBackup{b1, b2, b3}, 0, "", "b2"},
		{"never itself or a later one", b2, []*v1alpha1.MySQLBackup{b1, b2, b3, same}, 0, "", "b1"},
		{"none before", b1, []*v1alpha1.MySQLBackup{b1, b2}, 0, "", ""},
		{"none in the timeline", b2, []*v1alpha1.MySQLBackup{b1, b2}, 10, "", ""},
		{"none the archive continues", b2, []*v1alpha1.MySQLBackup{b1, b2}, 0, "0-100-10", ""},
		{"the archive continues from the base", b3, []*v1alpha1.MySQLBackup{b1, b2, b3}, 0, "0-100-10", "b2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if b := chooseBase(tc.all, tc.of, at(tc.since), tc.start, mysql.MariaDB); b != nil {
				got = b.Name
			}
			if got != tc.want {
				t.Errorf("base of %s = %q, want %q", tc.of.Name, got, tc.want)
			}
		})
	}
}

func verifyRestore() *v1alpha1.MySQLRestore {
	r := newRestore()
	r.Spec.BackupRef.Name, r.Spec.Verify = "b2", true
	return r
}

// verifyFixture is pitrFixture with a second backup, b2 at 10:00:15 at GTID position b2pos.
func verifyFixture(t *testing.T, b2pos string) (*fixture.Fixture, *Controller, fixture.Agents, *storage.Store) {
	f, c, as, store := pitrFixture(t, verifyRestore())
	f.Create(backupAt("b2", b2pos, 15))
	return f, c, as, store
}

// scratchReady plays the scratch cluster's controllers: its bootstrap restore Complete and a
// primary whose agent answers.
func scratchReady(f *fixture.Fixture, as fixture.Agents, name string) {
	cl := fixture.Get(f, &v1alpha1.MySQLCluster{}, name)
	cl.Annotations = map[string]string{v1alpha1.AnnotationBootstrapRestore: name + "-bootstrap"}
	cl.Status.Primary = name + "-0"
	f.Update(cl)
	f.Create(&v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-bootstrap"},
		Status: v1alpha1.MySQLRestoreStatus{Phase: v1alpha1.JobComplete}})
	as[name+"-0"] = &fixture.Agent{}
}

func checksums(kv ...string) []mysql.TableChecksum {
	var out []mysql.TableChecksum
	for i := 0; i < len(kv); i += 2 {
		out = append(out, mysql.TableChecksum{Table: kv[i], Checksum: kv[i+1]})
	}
	return out
}

// A verification restores the backup into one scratch cluster and the one before it, replayed
// to the backup's position, into another; it compares their checksums, reports the result,
// and deletes the scratch clusters and their volumes before it lets go of its finalizer. The
// cluster itself is never fenced.
func TestVerificationComparesTwoScratchClusters(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replayed []mysql.TableChecksum
		phase    v1alpha1.JobPhase
		reason   string
		says     string
	}{
		{"match", checksums("app.t", "11", "app.u", "22"), v1alpha1.JobComplete, v1alpha1.ReasonCompleted,
			"Verified: the checksums of the 2 tables of MySQLBackup b2 match MySQLBackup b1 with the archive replayed to 0-100-15"},
		{"mismatch", checksums("app.t", "12", "app.u", "22", "app.w", "0"), v1alpha1.JobFailed, v1alpha1.ReasonChecksumMismatch,
			"2 of 3 tables differ between MySQLBackup b2 and MySQLBackup b1 with the archive replayed to its position 0-100-15: app.t, app.w"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c, as, _ := verifyFixture(t, "0-100-15")
			f.Sync(c.Sync, "r")
			r := restoreOf(f)
			v := r.Status.Verification
			if r.Status.Phase != v1alpha1.JobRunning || r.Status.Step != v1alpha1.RestoreVerifying || v == nil || v.Base != "b1" || v.BackupCluster != "r-backup" || v.ReplayCluster != "r-replay" ||
				!objects.HasFinalizer(r, v1alpha1.FinalizerRestore) {
				t.Fatalf("start: %+v verification %+v", r.Status, r.Status.Verification)
			}
			f.Sync(c.Sync, "r")
			for name, boot := range map[string]v1alpha1.BootstrapSpec{
				"r-backup": {FromBackup: v1alpha1.LocalReference{Name: "b2"}},
				"r-replay": {FromBackup: v1alpha1.LocalReference{Name: "b1"}, Target: &v1alpha1.RestoreTarget{GTID: "0-100-15"}},
			} {
				s := fixture.Get(f, &v1alpha1.MySQLCluster{}, name)
				if s.Spec.Members != 1 || s.Spec.BinlogArchive != nil || s.Spec.Flavor != v1alpha1.FlavorMariaDB || !metav1.IsControlledBy(s, r) ||
					s.Spec.Bootstrap.FromBackup != boot.FromBackup || (boot.Target == nil) != (s.Spec.Bootstrap.Target == nil) ||
					(boot.Target != nil && s.Spec.Bootstrap.Target.GTID != boot.Target.GTID) {
					t.Fatalf("scratch cluster %s: %+v", name, s.Spec)
				}
			}
			scratchReady(f, as, "r-backup")
			scratchReady(f, as, "r-replay")
			f.Sync(c.Sync, "r")
			if msg := meta.FindStatusCondition(restoreOf(f).Status.Conditions, v1alpha1.ConditionComplete).Message; !strings.Contains(msg, "r-backup checksums its tables; r-replay checksums its tables") {
				t.Fatalf("while checksumming: %q", msg)
			}
			as["r-backup-0"].Set("uid-r-checksum", func(s *agentapi.BackupState) {
				s.Phase, s.Checksums = agentapi.BackupComplete, checksums("app.t", "11", "app.u", "22")
			})
			as["r-replay-0"].Set("uid-r-checksum", func(s *agentapi.BackupState) { s.Phase, s.Checksums = agentapi.BackupComplete, tc.replayed })
			res := f.Sync(c.Sync, "r")
			r = restoreOf(f)
			cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionComplete)
			if r.Status.Phase != tc.phase || cond.Reason != tc.reason || cond.Message != tc.says {
				t.Fatalf("result: phase %s, %s: %q\nwant %s, %s: %q", r.Status.Phase, cond.Reason, cond.Message, tc.phase, tc.reason, tc.says)
			}
			if tc.phase == v1alpha1.JobFailed && !slices.Equal(r.Status.Verification.Mismatched, []string{"app.t", "app.w"}) {
				t.Errorf("mismatched %v", r.Status.Verification.Mismatched)
			}
			// The scratch clusters were deleted; once gone, their volumes go and so does the
			// finalizer. A status write does not requeue a restore: the Sync asks for it.
			if !objects.HasFinalizer(r, v1alpha1.FinalizerRestore) || res.RequeueAfter == 0 {
				t.Fatalf("finalizer %v, result %+v: want the finalizer kept and a requeue until the volumes are deleted", r.Finalizers, res)
			}
			f.Sync(c.Sync, "r")
			if r := restoreOf(f); objects.HasFinalizer(r, v1alpha1.FinalizerRestore) {
				t.Fatalf("finalizer kept once the scratch clusters are gone: %v", r.Finalizers)
			}
			var pvcs []string
			for _, a := range f.Kube.Actions() {
				if a.GetVerb() == "delete-collection" && a.GetResource().Resource == "persistentvolumeclaims" {
					pvcs = append(pvcs, a.(k8stesting.DeleteCollectionAction).GetListRestrictions().Labels.String())
				}
			}
			if !slices.Equal(pvcs, []string{"app.kubernetes.io/name=mysql,mysqlop.io/cluster=r-backup", "app.kubernetes.io/name=mysql,mysqlop.io/cluster=r-replay"}) {
				t.Errorf("volume deletions %v", pvcs)
			}
			if a := clusterOf(f).Annotations; a[v1alpha1.AnnotationRestore] != "" {
				t.Errorf("a verification fenced the cluster: %v", a)
			}
		})
	}
}

// Before anything is created: a verification waits for the archive to reach the backup,
// refuses a chain with a gap, and without an archive checks the backup alone.
func TestVerificationStart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		b2pos     string
		noArchive bool
		change    func(context.Context, *storage.Store) error
		phase     v1alpha1.JobPhase
		says      string
	}{
		{"the archive has not reached the backup yet", "0-101-40", false, nil, v1alpha1.JobPending,
			"waiting for the binary log archive of MySQLCluster db to reach MySQLBackup b2's GTID position 0-101-40 (archived to 0-101-30)"},
		{"a gap between the backups", "0-100-15", false, func(ctx context.Context, s *storage.Store) error {
			return s.Delete(ctx, "ns/db/binlog/100/bin.000002")
		}, v1alpha1.JobFailed,
			"the archive does not lead from MySQLBackup b1 to b2: cannot restore MySQLBackup b1 to GTID 0-100-15: the archive has a gap"},
		{"no archive: the backup alone", "0-100-15", true, nil, v1alpha1.JobRunning, "Verifying MySQLBackup b2 in scratch cluster r-backup"},
		{"the archive began after the earlier backup: the backup alone", "0-100-15", false, func(ctx context.Context, s *storage.Store) error {
			ix, err := archive.LoadIndex(ctx, s, "ns/db/binlog", mysql.MariaDB)
			if err != nil {
				return err
			}
			ix.Entries = ix.Entries[1:] // the archive now starts at 0-100-10, after b1's 0-100-5
			b, _ := json.Marshal(ix)
			_, err = s.Put(ctx, "ns/db/binlog/"+archive.IndexName, strings.NewReader(string(b)))
			return err
		}, v1alpha1.JobRunning, "Verifying MySQLBackup b2 in scratch cluster r-backup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c, _, store := verifyFixture(t, tc.b2pos)
			if tc.change != nil {
				if err := tc.change(context.Background(), store); err != nil {
					t.Fatal(err)
				}
			}
			if tc.noArchive {
				cl := clusterOf(f)
				cl.Spec.BinlogArchive = nil
				f.Update(cl)
			}
			f.Sync(c.Sync, "r")
			r := restoreOf(f)
			cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionComplete)
			if r.Status.Phase != tc.phase || !strings.HasPrefix(cond.Message, tc.says) {
				t.Fatalf("phase %s: %q\nwant %s: %q", r.Status.Phase, cond.Message, tc.phase, tc.says)
			}
			if tc.phase == v1alpha1.JobRunning && (r.Status.Verification.Base != "" || r.Status.Verification.ReplayCluster != "" || len(scratches(r)) != 1) {
				t.Errorf("without an archive: %+v", r.Status.Verification)
			}
		})
	}
}
