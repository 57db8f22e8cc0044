package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"io"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/backup/executor"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	reasons "github.com/mysqlop/mysql-operator/pkg/events"
	mysqlsql "github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/options"
	"github.com/mysqlop/mysql-operator/pkg/resources/secret"
	"github.com/mysqlop/mysql-operator/test/mariadb"
	"github.com/mysqlop/mysql-operator/test/s3"
)

// testAgentTLS is the agent certificate and key tests put into clusters' credentials Secrets.
var testAgentTLS = sync.OnceValues(func() (pair [2][]byte, err error) {
	pair[0], pair[1], err = secret.AgentCertificate(time.Now())
	return pair, err
})

// withAgents serves an in-process agent for each server (standing for the members' agent
// containers) over TLS with the tests' agent certificate, and points the operator at them.
func withAgents(t *testing.T, servers []*mariadb.Server) func(*options.Options) {
	t.Helper()
	pair, err := testAgentTLS()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pair[0], pair[1])
	if err != nil {
		t.Fatal(err)
	}
	agents := make([]string, len(servers))
	for i, s := range servers {
		srv := agent.NewServer(s.Admin(), testAgentToken)
		srv.EnableBackups(context.Background(), agent.BackupConfig{Flavor: mysqlsql.MariaDB, Socket: s.Socket, DataDir: filepath.Join(s.Dir, "data"),
			User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir(), Tools: mariadb.Toolbox(t)})
		h := httptest.NewUnstartedServer(srv.Handler())
		h.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		h.StartTLS()
		t.Cleanup(h.Close)
		agents[i] = strings.TrimPrefix(h.URL, "https://")
	}
	return func(o *options.Options) {
		o.AgentAddress = func(_, _, pod string) (string, int) {
			i, _ := agentapi.Ordinal(pod)
			host, port, _ := net.SplitHostPort(agents[i])
			p, _ := strconv.Atoi(port)
			return host, p
		}
	}
}

// s3Secret creates the storage credentials Secret name in ns, labelled for backups' use.
func s3Secret(t *testing.T, ns, name, secretKey string) {
	t.Helper()
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{v1alpha1.LabelStorageCredentials: "true"}},
		Data: map[string][]byte{"accessKeyId": []byte(s3.AccessKey), "secretAccessKey": []byte(secretKey)}}
	if _, err := cp.Kube.CoreV1().Secrets(ns).Create(context.Background(), creds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func newBackup(ns, name string, gw *s3.Server, secret string) *v1alpha1.MySQLBackup {
	return &v1alpha1.MySQLBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.MySQLBackupSpec{
			ClusterRef: v1alpha1.ClusterReference{Name: "db"},
			Storage: v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{
				Endpoint: gw.Endpoint, Bucket: s3.Bucket, Prefix: "team", ForcePathStyle: true,
				CredentialsSecretRef: v1alpha1.LocalReference{Name: secret},
			}},
		},
	}
}

func waitBackupPhase(t *testing.T, ns, name string, phases ...v1alpha1.JobPhase) *v1alpha1.MySQLBackup {
	t.Helper()
	var b *v1alpha1.MySQLBackup
	eventually(t, 60*time.Second, "backup "+name+" in "+string(phases[0]), func(ctx context.Context) (bool, error) {
		var err error
		b, err = mysql.MysqlopV1alpha1().MySQLBackups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range phases {
			if b.Status.Phase == p {
				return true, nil
			}
		}
		return false, nil
	})
	return b
}

// On-demand backups end to end: kwok pods stand for the members, real MariaDB servers for
// their mysqld, in-process agents for their agent containers, versitygw for S3. A logical
// backup runs on the replica and stores a checksummed, GTID-stamped dump; a physical one on
// the member asked for; a missing Secret waits, wrong credentials fail; deletionPolicy Delete
// removes the stored object and Retain keeps it; a restore brings dropped data back on every
// member; a schedule creates and prunes backups.
func TestBackupsToS3(t *testing.T) {
	gw := s3.Start(t)
	servers := mariadb.Start(t, 2, mariadb.Options{})
	ctx := context.Background()
	ns := clusterOn(t, servers, withAgents(t, servers))
	waitRoles(t, ns, "db-0", "db-1")
	if err := mariadb.CreateApp(ctx, servers[0].Admin().DB); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "both members ready in status", func(context.Context) (bool, error) {
		c := getCluster(t, ns, "db")
		n := 0
		for _, in := range c.Status.Instances {
			if in.Ready {
				n++
			}
		}
		return n == 2, nil
	})
	backups := mysql.MysqlopV1alpha1().MySQLBackups(ns)

	// Waiting for the storage Secret, then running on the replica.
	logical := newBackup(ns, "nightly", gw, "s3-credentials")
	logical.Spec.DeletionPolicy = v1alpha1.DeletionDelete
	if _, err := backups.Create(ctx, logical, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := waitBackupPhase(t, ns, "nightly", v1alpha1.JobPending)
	if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionComplete); c == nil || !strings.Contains(c.Message, "s3-credentials") {
		t.Fatalf("pending backup condition %+v", c)
	}
	// A Secret without the opt-in label is never used: the backup keeps waiting, and says why.
	unlabelled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-credentials", Namespace: ns},
		Data: map[string][]byte{"accessKeyId": []byte(s3.AccessKey), "secretAccessKey": []byte(s3.SecretKey)}}
	if _, err := cp.Kube.CoreV1().Secrets(ns).Create(ctx, unlabelled, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the backup names the missing label", func(ctx context.Context) (bool, error) {
		b, err := mysql.MysqlopV1alpha1().MySQLBackups(ns).Get(ctx, "nightly", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionComplete)
		return b.Status.Phase == v1alpha1.JobPending && c != nil && strings.Contains(c.Message, v1alpha1.LabelStorageCredentials+"=true"), nil
	})
	if err := cp.Kube.CoreV1().Secrets(ns).Delete(ctx, "s3-credentials", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s3Secret(t, ns, "s3-credentials", s3.SecretKey)
	b = waitBackupPhase(t, ns, "nightly", v1alpha1.JobComplete, v1alpha1.JobFailed)
	if b.Status.Phase != v1alpha1.JobComplete || b.Status.Member != "db-1" || b.Status.GTIDPosition == "" || b.Status.StartTime == nil || b.Status.CompletionTime == nil {
		t.Fatalf("logical backup status %+v", b.Status)
	}
	store, err := storage.New(gw.Config("team"))
	if err != nil {
		t.Fatal(err)
	}
	object := strings.TrimPrefix(b.Status.Location, "s3://"+s3.Bucket+"/team/")
	r, err := store.Get(ctx, object)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	d, _ := executor.Decompress(io.TeeReader(r, h))
	dump, _ := io.ReadAll(d)
	r.Close()
	if hex.EncodeToString(h.Sum(nil)) != b.Status.SHA256 || !strings.Contains(string(dump), "CREATE TABLE `t`") {
		t.Fatalf("stored object: checksum %s (status %s), dump of %d bytes", hex.EncodeToString(h.Sum(nil)), b.Status.SHA256, len(dump))
	}
	if _, ok := event(t, ns, "nightly", reasons.BackupCompleted.Reason); !ok {
		t.Error("no BackupCompleted event")
	}

	// Physical, on the member asked for; Retain by default.
	physical := newBackup(ns, "full", gw, "s3-credentials")
	physical.Spec.Method, physical.Spec.Member = v1alpha1.BackupPhysical, "db-0"
	if _, err := backups.Create(ctx, physical, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitBackupPhase(t, ns, "full", v1alpha1.JobComplete, v1alpha1.JobFailed)
	if p.Status.Phase != v1alpha1.JobComplete || p.Status.Member != "db-0" || p.Status.SizeBytes == 0 {
		t.Fatalf("physical backup status %+v", p.Status)
	}

	// Restore: the table dropped after the backup comes back, through the primary, on both
	// members, with the checksum it had; a corrupted or a missing object fails the restore and
	// leaves the data as it was; a physical backup is refused with a clear reason.
	sumBefore := checksum(t, servers[0], "app.t")
	if err := servers[0].Admin().ExecSQL(ctx, "DROP TABLE app.t"); err != nil {
		t.Fatal(err)
	}
	restores := mysql.MysqlopV1alpha1().MySQLRestores(ns)
	restoreFrom := func(name, from string) *v1alpha1.MySQLRestore {
		t.Helper()
		r := &v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}, BackupRef: v1alpha1.LocalReference{Name: from}}}
		if _, err := restores.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "restore "+name+" finished", func(ctx context.Context) (bool, error) {
			r, err = restores.Get(ctx, name, metav1.GetOptions{})
			return err == nil && (r.Status.Phase == v1alpha1.JobComplete || r.Status.Phase == v1alpha1.JobFailed), nil
		})
		return r
	}
	if undo := restoreFrom("undo", "nightly"); undo.Status.Phase != v1alpha1.JobComplete || undo.Status.Member != "db-0" || undo.Status.Method != v1alpha1.BackupLogical {
		t.Fatalf("restore status %+v", undo.Status)
	}
	// Writes were stopped for the load and resumed after it.
	for _, want := range []string{reasons.WritesStopped.Reason, reasons.WritesResumed.Reason} {
		if _, ok := event(t, ns, "db", want); !ok {
			t.Errorf("no %s event on the cluster", want)
		}
	}
	eventually(t, 30*time.Second, "writable primary after the restore", func(ctx context.Context) (bool, error) {
		st, err := servers[0].Admin().Status(ctx)
		return err == nil && !st.ReadOnly, nil
	})
	for i, s := range servers {
		eventually(t, 20*time.Second, "restored table on server "+strconv.Itoa(i), func(ctx context.Context) (bool, error) {
			return checksum(t, s, "app.t") == sumBefore, nil
		})
	}
	// Corrupt a second backup's object in the bucket, then restore it: verified first, refused.
	if _, err := backups.Create(ctx, newBackup(ns, "victim", gw, "s3-credentials"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	victim := waitBackupPhase(t, ns, "victim", v1alpha1.JobComplete, v1alpha1.JobFailed)
	victimObject := strings.TrimPrefix(victim.Status.Location, "s3://"+s3.Bucket+"/team/")
	// Truncated to half: a valid start, so that loading it unverified would run its first
	// statements (drop and re-create the table, part of the rows) before failing.
	vr, err := store.Get(ctx, victimObject)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := io.ReadAll(vr)
	vr.Close()
	if _, err := store.Put(ctx, victimObject, bytes.NewReader(whole[:len(whole)/2])); err != nil {
		t.Fatal(err)
	}
	if err := servers[0].Admin().ExecSQL(ctx, "INSERT INTO app.t VALUES (1000001, 'after the backups')"); err != nil {
		t.Fatal(err)
	}
	current := checksum(t, servers[0], "app.t")
	for _, tc := range []struct{ name, want string }{{"corrupted", "corrupted"}, {"missing", "does not exist"}} {
		if tc.name == "missing" {
			if err := store.Delete(ctx, victimObject); err != nil {
				t.Fatal(err)
			}
		}
		r := restoreFrom("from-"+tc.name, "victim")
		c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionComplete)
		if r.Status.Phase != v1alpha1.JobFailed || c == nil || !strings.Contains(c.Message, tc.want) {
			t.Errorf("restore of a %s object: %+v", tc.name, r.Status)
		}
		if got := checksum(t, servers[0], "app.t"); got != current {
			t.Errorf("restore of a %s object changed the data", tc.name)
		}
	}
	// Wrong credentials: Failed with the reason, never retried.
	s3Secret(t, ns, "bad-credentials", "wrong-Secret-value")
	if _, err := backups.Create(ctx, newBackup(ns, "denied", gw, "bad-credentials"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f := waitBackupPhase(t, ns, "denied", v1alpha1.JobFailed, v1alpha1.JobComplete)
	if c := meta.FindStatusCondition(f.Status.Conditions, v1alpha1.ConditionComplete); f.Status.Phase != v1alpha1.JobFailed || c == nil || c.Status != metav1.ConditionFalse || strings.Contains(c.Message, "wrong-Secret-value") {
		t.Fatalf("denied backup %+v", f.Status)
	}

	// Deletion policies.
	for _, name := range []string{"nightly", "full"} {
		if err := backups.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "backup "+name+" deleted", func(ctx context.Context) (bool, error) {
			_, err := backups.Get(ctx, name, metav1.GetOptions{})
			return gone(ctx, err)
		})
	}
	if ok, err := store.Exists(ctx, object); ok || err != nil {
		t.Errorf("object of backup nightly (deletionPolicy Delete) still stored: %v", err)
	}
	kept := strings.TrimPrefix(p.Status.Location, "s3://"+s3.Bucket+"/team/")
	if ok, err := store.Exists(ctx, kept); !ok || err != nil {
		t.Errorf("object of backup full (default deletionPolicy Retain) was deleted: %v", err)
	}

	// A schedule every 3 s keeping 2: backups keep coming, at most 2 complete ones stay and the
	// pruned ones' objects go (the template's deletionPolicy is Delete); suspended, it stops.
	keep := int32(2)
	tmpl := newBackup(ns, "", gw, "s3-credentials").Spec
	tmpl.DeletionPolicy = v1alpha1.DeletionDelete
	sched := &v1alpha1.MySQLBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "frequent", Namespace: ns},
		Spec:       v1alpha1.MySQLBackupScheduleSpec{Schedule: "@every 3s", Retention: v1alpha1.BackupRetention{KeepLast: &keep}, BackupTemplate: tmpl},
	}
	schedules := mysql.MysqlopV1alpha1().MySQLBackupSchedules(ns)
	if _, err := schedules.Create(ctx, sched, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	eventually(t, 60*time.Second, "scheduled backups created and pruned", func(ctx context.Context) (bool, error) {
		list, err := backups.List(ctx, metav1.ListOptions{LabelSelector: "mysqlop.io/backup-schedule=frequent"})
		if err != nil {
			return false, nil
		}
		complete := 0
		for _, b := range list.Items {
			seen[b.Name] = true
			if b.Status.Phase == v1alpha1.JobComplete {
				complete++
			}
		}
		if complete > 2 {
			t.Logf("%d complete backups kept for a moment (pruning follows completion)", complete)
		}
		s, err := schedules.Get(ctx, "frequent", metav1.GetOptions{})
		return err == nil && len(seen) >= 4 && complete <= 2 && s.Status.LastSuccessfulBackup != "", nil
	})
	editSchedule := func(mutate func(*v1alpha1.MySQLBackupSchedule)) {
		eventually(t, 10*time.Second, "update schedule", func(ctx context.Context) (bool, error) {
			s, err := schedules.Get(ctx, "frequent", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			mutate(s)
			_, err = schedules.Update(ctx, s, metav1.UpdateOptions{})
			return err == nil, nil
		})
	}
	editSchedule(func(s *v1alpha1.MySQLBackupSchedule) { s.Spec.Suspend = true })
	time.Sleep(4 * time.Second) // a backup created just before the suspension settles
	before, _ := backups.List(ctx, metav1.ListOptions{LabelSelector: "mysqlop.io/backup-schedule=frequent"})
	time.Sleep(7 * time.Second)
	after, _ := backups.List(ctx, metav1.ListOptions{LabelSelector: "mysqlop.io/backup-schedule=frequent"})
	names := func(l *v1alpha1.MySQLBackupList) map[string]bool {
		m := map[string]bool{}
		for _, b := range l.Items {
			m[b.Name] = true
		}
		return m
	}
	for n := range names(after) {
		if !names(before)[n] {
			t.Errorf("suspended schedule created backup %s", n)
		}
	}
	// Deleting the schedule leaves its backups.
	if err := schedules.Delete(ctx, "frequent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if left, _ := backups.List(ctx, metav1.ListOptions{LabelSelector: "mysqlop.io/backup-schedule=frequent"}); len(left.Items) == 0 {
		t.Error("deleting the schedule deleted its backups")
	}
}

// checksum is CHECKSUM TABLE of table on s ("" when the table is missing).
func checksum(t *testing.T, s *mariadb.Server, table string) string {
	t.Helper()
	var name string
	var sum *int64
	if err := s.Admin().DB.QueryRow("CHECKSUM TABLE "+table).Scan(&name, &sum); err != nil || sum == nil {
		return ""
	}
	return strconv.FormatInt(*sum, 10)
}
