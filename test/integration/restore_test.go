package integration

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	reasons "github.com/mysqlop/mysql-operator/pkg/events"
	mysqlsql "github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
	"github.com/mysqlop/mysql-operator/test/s3"
)

// restartMember plays the kubelet for a member whose kwok pod was replaced: its server
// stops, the agent's init step puts a committed restore in place, and it starts again.
func restartMember(t *testing.T, s *mariadb.Server) {
	t.Helper()
	if err := s.RestartOnRestore(context.Background(), "root-Pa55", time.Minute); err != nil {
		t.Fatal(err)
	}
}

// podUIDs returns the UID of each member pod of cluster db.
func podUIDs(t *testing.T, ns string, n int) []types.UID {
	t.Helper()
	out := make([]types.UID, n)
	for i := range n {
		p, err := cp.Kube.CoreV1().Pods(ns).Get(context.Background(), "db-"+strconv.Itoa(i), metav1.GetOptions{})
		if err == nil {
			out[i] = p.UID
		}
	}
	return out
}

// A physical restore through the real control plane: kwok pods stand for the members, real
// MariaDB servers for their mysqld, in-process agents for their agent containers, versitygw
// for S3, and the test for the kubelet (it runs the agent's init step when a pod is
// replaced). A corrupted object fails the restore before anything is replaced and writes
// resume; the real restore stops writes, stages the backup on every member, restarts the
// primary first and the replicas after it, and brings every member to the backup's table
// checksum and GTID position, with replication running and writes resumed; a MySQLUser whose
// password changed after the backup gets its current password again.
func TestPhysicalRestore(t *testing.T) {
	gw := s3.Start(t)
	servers := mariadb.Start(t, 3, mariadb.Options{})
	ctx := context.Background()
	ns := clusterOn(t, servers, withAgents(t, servers))
	waitRoles(t, ns, "db-0", "db-1", "db-2")
	if err := mariadb.CreateApp(ctx, servers[0].Admin().DB); err != nil {
		t.Fatal(err)
	}
	app := servers[0].Conn(mariadb.AppUser, mariadb.AppPassword)
	for i := range 50 {
		if _, err := app.Exec("INSERT INTO app.t VALUES (?, 'at the backup')", i); err != nil {
			t.Fatal(err)
		}
	}
	waitHealthy(t, ns, "db", 3, 60*time.Second)
	// A declared account whose password is rotated after the backup: the restore brings back
	// the old one, and the operator sets the Secret's again.
	putSecret(t, ns, "reporter-password", "first-Pa55")
	if _, err := mysql.MysqlopV1alpha1().MySQLUsers(ns).Create(ctx, newUser(ns, "reporter", "reporter-password",
		v1alpha1.Grant{Privileges: []string{"SELECT"}, Database: "app"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUserReady(t, ns, "reporter", "True")
	logsIn := func(s *mariadb.Server, password string) bool {
		db, err := mysqlsql.Open(mysqlsql.ConnConfig{Addr: s.Addr(), User: "reporter", Password: password, Timeout: time.Second})
		if err != nil {
			return false
		}
		defer db.Close()
		return db.PingContext(ctx) == nil
	}
	s3Secret(t, ns, "s3-credentials", s3.SecretKey)
	if _, err := mysql.MysqlopV1alpha1().MySQLBackups(ns).Create(ctx, func() *v1alpha1.MySQLBackup {
		b := newBackup(ns, "full", gw, "s3-credentials")
		b.Spec.Method = v1alpha1.BackupPhysical
		return b
	}(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bk := waitBackupPhase(t, ns, "full", v1alpha1.JobComplete, v1alpha1.JobFailed)
	if bk.Status.Phase != v1alpha1.JobComplete || bk.Status.GTIDPosition == "" {
		t.Fatalf("physical backup %+v", bk.Status)
	}
	atBackup := checksum(t, servers[0], "app.t")
	putSecret(t, ns, "reporter-password", "second-Pa55")
	eventually(t, 30*time.Second, "reporter's password rotated", func(context.Context) (bool, error) {
		return logsIn(servers[0], "second-Pa55"), nil
	})
	if _, err := app.Exec("INSERT INTO app.t VALUES (1000, 'after the backup')"); err != nil {
		t.Fatal(err)
	}
	afterBackup := checksum(t, servers[0], "app.t")
	restores := mysql.MysqlopV1alpha1().MySQLRestores(ns)
	restore := func(name string) {
		t.Helper()
		r := &v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}, BackupRef: v1alpha1.LocalReference{Name: "full"}}}
		if _, err := restores.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	getRestore := func(name string) *v1alpha1.MySQLRestore {
		r, err := restores.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// A corrupted object: every member refuses to stage it, no pod restarts, nothing changes,
	// writes resume.
	store, err := storage.New(gw.Config("team"))
	if err != nil {
		t.Fatal(err)
	}
	object := strings.TrimPrefix(bk.Status.Location, "s3://"+s3.Bucket+"/team/")
	r, err := store.Get(ctx, object)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := io.ReadAll(r)
	r.Close()
	if _, err := store.Put(ctx, object, bytes.NewReader(whole[:len(whole)/2])); err != nil {
		t.Fatal(err)
	}
	uids := podUIDs(t, ns, 3)
	restore("corrupted")
	eventually(t, 60*time.Second, "restore of a corrupted object failed", func(context.Context) (bool, error) {
		return getRestore("corrupted").Status.Phase == v1alpha1.JobFailed, nil
	})
	if c := meta.FindStatusCondition(getRestore("corrupted").Status.Conditions, v1alpha1.ConditionComplete); c == nil ||
		!strings.Contains(c.Message, "corrupted") || !strings.Contains(c.Message, "every member keeps its data") {
		t.Errorf("failed restore condition %+v", c)
	}
	if got := podUIDs(t, ns, 3); !slices.Equal(got, uids) {
		t.Errorf("a failed restore restarted members: %v -> %v", uids, got)
	}
	for i, s := range servers {
		if got := checksum(t, s, "app.t"); got != afterBackup {
			t.Errorf("server %d data changed by a failed restore", i)
		}
	}
	waitHealthy(t, ns, "db", 3, 60*time.Second)
	if c := getCluster(t, ns, "db"); c.Annotations[v1alpha1.AnnotationRestore] != "" {
		t.Error("a failed restore left the writes stopped")
	}
	if _, err := store.Put(ctx, object, bytes.NewReader(whole)); err != nil {
		t.Fatal(err)
	}

	// The restore. The test restarts each member whose pod the operator replaced, so it can
	// look at the cluster in between.
	restore("back")
	replaced := func(want int) []int {
		t.Helper()
		var got []int
		eventually(t, 60*time.Second, strconv.Itoa(want)+" pods replaced", func(context.Context) (bool, error) {
			got = got[:0]
			now := podUIDs(t, ns, 3)
			for i := range now {
				if now[i] != "" && now[i] != uids[i] {
					got = append(got, i)
				}
			}
			return len(got) >= want, nil
		})
		return got
	}
	if got := replaced(1); !slices.Equal(got, []int{0}) {
		t.Fatalf("pods replaced first: %v, want only the primary db-0", got)
	}
	// Writes are stopped: the primary is read-only for the application, out of the primary Service.
	if c := getCluster(t, ns, "db"); c.Status.Phase != v1alpha1.ClusterFenced {
		t.Errorf("cluster phase %s during the restore", c.Status.Phase)
	}
	if _, err := app.Exec("INSERT INTO app.t VALUES (2000, 'during the restore')"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("application write during the restore: %v", err)
	}
	if st := getRestore("back").Status; st.Step != v1alpha1.RestoreRestarting || st.Method != v1alpha1.BackupPhysical {
		t.Errorf("restore status while the primary restarts: %+v", st)
	}
	time.Sleep(time.Second) // the replicas wait for the primary to run on the restored data
	if got := replaced(1); len(got) != 1 {
		t.Fatalf("replicas replaced before the primary ran on the restored data: %v", got)
	}
	restartMember(t, servers[0])
	uids[0] = podUIDs(t, ns, 3)[0]
	if got := replaced(2); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("after the primary, pods replaced: %v", got)
	}
	restartMember(t, servers[1])
	restartMember(t, servers[2])

	eventually(t, 2*time.Minute, "restore complete", func(context.Context) (bool, error) {
		p := getRestore("back").Status.Phase
		if p == v1alpha1.JobFailed {
			t.Fatalf("restore failed: %+v", getRestore("back").Status)
		}
		return p == v1alpha1.JobComplete, nil
	})
	st := getRestore("back").Status
	if st.GTIDPosition != bk.Status.GTIDPosition || !slices.Equal(st.Members, []string{"db-0", "db-1", "db-2"}) ||
		!slices.Equal(st.Restarted, []string{"db-0", "db-1", "db-2"}) || st.CompletionTime == nil {
		t.Errorf("restore status %+v", st)
	}
	waitHealthy(t, ns, "db", 3, 60*time.Second)
	for i, s := range servers {
		eventually(t, 20*time.Second, "server "+strconv.Itoa(i)+" has the backup's data", func(context.Context) (bool, error) {
			return checksum(t, s, "app.t") == atBackup, nil
		})
	}
	// Writes resume through the application account and replicate.
	if _, err := app.Exec("INSERT INTO app.t VALUES (3000, 'after the restore')"); err != nil {
		t.Fatalf("application write after the restore: %v", err)
	}
	after := checksum(t, servers[0], "app.t")
	for i, s := range servers[1:] {
		eventually(t, 20*time.Second, "replica "+strconv.Itoa(i+1)+" replicates the new write", func(context.Context) (bool, error) {
			return checksum(t, s, "app.t") == after, nil
		})
	}
	for i, s := range servers {
		eventually(t, 30*time.Second, "server "+strconv.Itoa(i)+" takes the Secret's current password", func(context.Context) (bool, error) {
			return logsIn(s, "second-Pa55") && !logsIn(s, "first-Pa55"), nil
		})
	}
	if c := getCluster(t, ns, "db"); !strings.HasPrefix(c.Annotations[v1alpha1.AnnotationDataRestored], "back/") {
		t.Errorf("cluster annotations after the restore: %v", c.Annotations)
	}
	for _, want := range []string{reasons.WritesStopped.Reason, reasons.WritesResumed.Reason, reasons.MemberRestarted.Reason} {
		if _, ok := event(t, ns, "db", want); !ok {
			t.Errorf("no %s event on the cluster", want)
		}
	}
	if _, ok := event(t, ns, "back", reasons.RestoreCompleted.Reason); !ok {
		t.Error("no RestoreCompleted event")
	}

	// A running restore deleted after the primary restarted onto its data: the replicas
	// discard what they staged (a later restart of theirs must not put it in place), the
	// fence is lifted and the object goes.
	uids = podUIDs(t, ns, 3)
	restore("deleted")
	if got := replaced(1); !slices.Equal(got, []int{0}) {
		t.Fatalf("pods replaced first: %v, want only the primary db-0", got)
	}
	for i := 1; i < 3; i++ {
		if _, err := os.Stat(filepath.Join(servers[i].Dir, "restore", "restore.json")); err != nil {
			t.Fatalf("replica %d has no committed staging: %v", i, err)
		}
	}
	if err := restores.Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "deleted restore gone", func(ctx context.Context) (bool, error) {
		_, err := restores.Get(ctx, "deleted", metav1.GetOptions{})
		return gone(ctx, err)
	})
	for i := 1; i < 3; i++ {
		if _, err := os.Stat(filepath.Join(servers[i].Dir, "restore")); !os.IsNotExist(err) {
			t.Errorf("replica %d keeps the staging of a deleted restore: %v", i, err)
		}
	}
	eventually(t, 30*time.Second, "fence lifted", func(context.Context) (bool, error) {
		return getCluster(t, ns, "db").Annotations[v1alpha1.AnnotationRestore] == "", nil
	})
}
