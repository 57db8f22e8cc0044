package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// Bad MySQLCluster input is refused at admission, with a message naming what is wrong.
func TestBadClusterInputIsRefusedAtAdmission(t *testing.T) {
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		mutate func(*v1alpha1.MySQLCluster)
		says   string
	}{
		"name of 53 characters":      {func(c *v1alpha1.MySQLCluster) { c.Name = "d" + strings.Repeat("b", 52) }, "at most 52"},
		"name starting with a digit": {func(c *v1alpha1.MySQLCluster) { c.Name = "1db" }, "starting with a letter"},
		"owned key through skip-": {func(c *v1alpha1.MySQLCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"skip-read-only": "ON"}
		}, "prefixes"},
		"owned key through loose_disable_": {func(c *v1alpha1.MySQLCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"loose_disable_log_slave_updates": "1"}
		}, "prefixes"},
		"secure_file_priv": {func(c *v1alpha1.MySQLCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"secure-file-priv": ""}
		}, "secure_file_priv"},
		"value over 1024": {func(c *v1alpha1.MySQLCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"init_connect": v1alpha1.ConfigValue(strings.Repeat("x", 1025))}
		}, "1024"},
		"newline in a value": {func(c *v1alpha1.MySQLCluster) {
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"init_connect": "SET @a = 1\n!include /etc/passwd"}
		}, "should match"},
	} {
		c := newCluster(ns, "db", 1, "10.11.6")
		tc.mutate(c)
		_, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Create(ctx, c, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: created or wrong error: %v", name, err)
		}
	}
	// A free option with the loose_ prefix is accepted.
	c := newCluster(ns, "db", 1, "10.11.6")
	c.Spec.Config = map[string]v1alpha1.ConfigValue{"loose_innodb_buffer_pool_size": "64M"}
	if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Errorf("loose_ on a free option: %v", err)
	}
}

// A MySQLRestore names a backup, a target or both; a target is exactly one of a time, a GTID
// and latest.
func TestBadRestoreTargetsAreRefusedAtAdmission(t *testing.T) {
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	now := metav1.Now()
	restore := func(name string, backup string, target *v1alpha1.RestoreTarget) *v1alpha1.MySQLRestore {
		return &v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}, BackupRef: v1alpha1.LocalReference{Name: backup}, Target: target}}
	}
	verify := func(r *v1alpha1.MySQLRestore) *v1alpha1.MySQLRestore {
		r.Spec.Verify = true
		return r
	}
	for _, tc := range []struct {
		r    *v1alpha1.MySQLRestore
		says string
	}{
		{restore("nothing", "", nil), "set backupRef, target, or both"},
		{restore("two", "", &v1alpha1.RestoreTarget{Time: &now, GTID: "0-1-5"}), "set exactly one of time, gtid and latest"},
		{restore("none", "b", &v1alpha1.RestoreTarget{}), "set exactly one of time, gtid and latest"},
		{verify(restore("verify-nothing", "", &v1alpha1.RestoreTarget{Latest: true})), "verify checks the backup of spec.backupRef: set it, and no target"},
		{verify(restore("verify-to-a-target", "b", &v1alpha1.RestoreTarget{Latest: true})), "verify checks the backup of spec.backupRef"},
	} {
		_, err := mysql.MysqlopV1alpha1().MySQLRestores(ns).Create(ctx, tc.r, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: created or wrong error: %v", tc.r.Name, err)
		}
	}
	for _, r := range []*v1alpha1.MySQLRestore{
		restore("backup-only", "b", nil),
		restore("latest", "", &v1alpha1.RestoreTarget{Latest: true}),
		restore("gtid-from-backup", "b", &v1alpha1.RestoreTarget{GTID: "0-1-5"}),
		verify(restore("verify", "b", nil)),
	} {
		if _, err := mysql.MysqlopV1alpha1().MySQLRestores(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Errorf("%s refused: %v", r.Name, err)
		}
	}
}

// Names that become an account, a schema or a prefix of other names are bounded at admission.
func TestBadNamesAreRefusedAtAdmission(t *testing.T) {
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	api := mysql.MysqlopV1alpha1()
	long := "u" + strings.Repeat("x", 32)
	for name, tc := range map[string]struct {
		create func() error
		says   string
	}{
		"a MySQLUser named past 32 characters without spec.user": {func() error {
			_, err := api.MySQLUsers(ns).Create(ctx, newUser(ns, long, "p"), metav1.CreateOptions{})
			return err
		}, "at most 32"},
		"a MySQLUser named root without spec.user": {func() error {
			_, err := api.MySQLUsers(ns).Create(ctx, newUser(ns, "root", "p"), metav1.CreateOptions{})
			return err
		}, "the operator uses itself"},
		"a MySQLDatabase named with a dot without spec.name": {func() error {
			d := &v1alpha1.MySQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: "shop.orders", Namespace: ns},
				Spec: v1alpha1.MySQLDatabaseSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}}}
			_, err := api.MySQLDatabases(ns).Create(ctx, d, metav1.CreateOptions{})
			return err
		}, "spec.name is unset"},
		"a MySQLBackupSchedule named past 242 characters": {func() error {
			s := &v1alpha1.MySQLBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("s", 243), Namespace: ns},
				Spec: v1alpha1.MySQLBackupScheduleSpec{Schedule: "@daily", BackupTemplate: v1alpha1.MySQLBackupSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"},
					Storage: v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{Bucket: "bkt", CredentialsSecretRef: v1alpha1.LocalReference{Name: "s"}}}}}}
			_, err := api.MySQLBackupSchedules(ns).Create(ctx, s, metav1.CreateOptions{})
			return err
		}, "at most 242"},
		"an abbreviated owned option": {func() error {
			c := newCluster(ns, "db", 1, "10.11.6")
			c.Spec.Config = map[string]v1alpha1.ConfigValue{"skip-read-onl": ""}
			_, err := api.MySQLClusters(ns).Create(ctx, c, metav1.CreateOptions{})
			return err
		}, "abbreviates"},
	} {
		if err := tc.create(); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: created or wrong error: %v", name, err)
		}
	}
	// A long object name is fine once spec.user names the account.
	u := newUser(ns, long, "p")
	u.Spec.User = "app"
	if _, err := api.MySQLUsers(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Errorf("long name with spec.user: %v", err)
	}
}

// A root password Secret that does not exist is named in a condition, not left to a member
// that never starts.
func TestMissingRootPasswordSecretIsNamed(t *testing.T) {
	ns := cp.NewNamespace(t)
	startOperator(t, ns)
	c := newCluster(ns, "db", 1, "10.11.6")
	c.Spec.RootPasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "absent-root"}
	createCluster(t, c)
	eventually(t, 30*time.Second, "Synced=False/SecretNotFound naming the Secret", func(ctx context.Context) (bool, error) {
		cond := meta.FindStatusCondition(getCluster(t, ns, "db").Status.Conditions, v1alpha1.ConditionSynced)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == "SecretNotFound" && strings.Contains(cond.Message, "absent-root"), nil
	})
}

// Bad input that passes admission is conditioned once and then left alone: over a minute, no
// object the operator refuses is written more than a resync would write it, gets more events
// than its slowest re-check makes, or fills the operator's log. A reconcile that failed and
// retried with backoff would reach each bound within the minute.
func TestBadInputDoesNotHotLoop(t *testing.T) {
	ns := cp.NewNamespace(t)
	startOperator(t, ns)
	ctx := context.Background()
	api := mysql.MysqlopV1alpha1()

	noSecret := newCluster(ns, "nosecret", 1, "10.11.6")
	noSecret.Spec.RootPasswordSecretRef = &v1alpha1.SecretKeyRef{Name: "absent-root"}
	createCluster(t, noSecret)
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "taken-config", Namespace: ns}}
	if _, err := cp.Kube.CoreV1().ConfigMaps(ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createCluster(t, newCluster(ns, "taken", 1, "10.11.6"))
	orphanUser := newUser(ns, "orphan", "orphan-password")
	orphanUser.Spec.ClusterRef.Name = "absent"
	putSecret(t, ns, "orphan-password", "x-Pa55")
	noPassword := newUser(ns, "nopass", "absent-password")
	noPassword.Spec.ClusterRef.Name = "nosecret"
	orphanDB := &v1alpha1.MySQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: ns},
		Spec: v1alpha1.MySQLDatabaseSpec{ClusterRef: v1alpha1.ClusterReference{Name: "absent"}}}
	unlabelled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled", Namespace: ns},
		Data: map[string][]byte{"accessKeyId": []byte("id"), "secretAccessKey": []byte("key")}}
	backup := &v1alpha1.MySQLBackup{ObjectMeta: metav1.ObjectMeta{Name: "noready", Namespace: ns},
		Spec: v1alpha1.MySQLBackupSpec{ClusterRef: v1alpha1.ClusterReference{Name: "nosecret"}, Storage: v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{
			Endpoint: "http://127.0.0.1:1", Bucket: "bkt", CredentialsSecretRef: v1alpha1.LocalReference{Name: "unlabelled"}}}}}
	restore := &v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{Name: "nobackup", Namespace: ns},
		Spec: v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: "nosecret"}, BackupRef: v1alpha1.LocalReference{Name: "absent"}}}
	schedule := &v1alpha1.MySQLBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "badcron", Namespace: ns},
		Spec: v1alpha1.MySQLBackupScheduleSpec{Schedule: "every now and then", BackupTemplate: backup.Spec}}
	var errs []error
	for _, create := range []func() error{
		func() error { _, err := api.MySQLUsers(ns).Create(ctx, orphanUser, metav1.CreateOptions{}); return err },
		func() error { _, err := api.MySQLUsers(ns).Create(ctx, noPassword, metav1.CreateOptions{}); return err },
		func() error {
			_, err := api.MySQLDatabases(ns).Create(ctx, orphanDB, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cp.Kube.CoreV1().Secrets(ns).Create(ctx, unlabelled, metav1.CreateOptions{})
			return err
		},
		func() error { _, err := api.MySQLBackups(ns).Create(ctx, backup, metav1.CreateOptions{}); return err },
		func() error { _, err := api.MySQLRestores(ns).Create(ctx, restore, metav1.CreateOptions{}); return err },
		func() error {
			_, err := api.MySQLBackupSchedules(ns).Create(ctx, schedule, metav1.CreateOptions{})
			return err
		},
	} {
		errs = append(errs, create())
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	// Each is refused with a reason that says what is wrong.
	var state []string
	conditioned := func(conds []metav1.Condition, typ, reason, says string) bool {
		c := meta.FindStatusCondition(conds, typ)
		if c == nil || c.Reason != reason || !strings.Contains(c.Message, says) {
			state = append(state, fmt.Sprintf("want %s=%s saying %q, have %+v", typ, reason, says, c))
			return false
		}
		return true
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		state = nil
		c1, _ := api.MySQLClusters(ns).Get(ctx, "nosecret", metav1.GetOptions{})
		c2, _ := api.MySQLClusters(ns).Get(ctx, "taken", metav1.GetOptions{})
		u1, _ := api.MySQLUsers(ns).Get(ctx, "orphan", metav1.GetOptions{})
		u2, _ := api.MySQLUsers(ns).Get(ctx, "nopass", metav1.GetOptions{})
		d1, _ := api.MySQLDatabases(ns).Get(ctx, "orphan", metav1.GetOptions{})
		b1, _ := api.MySQLBackups(ns).Get(ctx, "noready", metav1.GetOptions{})
		r1, _ := api.MySQLRestores(ns).Get(ctx, "nobackup", metav1.GetOptions{})
		s1, _ := api.MySQLBackupSchedules(ns).Get(ctx, "badcron", metav1.GetOptions{})
		if c1 == nil || c2 == nil || u1 == nil || u2 == nil || d1 == nil || b1 == nil || r1 == nil || s1 == nil {
			return false, nil
		}
		results := []bool{conditioned(c1.Status.Conditions, v1alpha1.ConditionSynced, "SecretNotFound", "absent-root"),
			conditioned(c2.Status.Conditions, v1alpha1.ConditionSynced, "ErrResourceExists", "taken-config"),
			conditioned(u1.Status.Conditions, v1alpha1.ConditionReady, "ClusterNotFound", "absent"),
			conditioned(u2.Status.Conditions, v1alpha1.ConditionReady, "SecretNotFound", "absent-password"),
			conditioned(d1.Status.Conditions, v1alpha1.ConditionReady, "ClusterNotFound", "absent"),
			conditioned(b1.Status.Conditions, v1alpha1.ConditionComplete, "Waiting", "no ready member"),
			conditioned(r1.Status.Conditions, v1alpha1.ConditionComplete, "Waiting", "absent"),
			conditioned(s1.Status.Conditions, v1alpha1.ConditionReady, "InvalidSchedule", "every now and then")}
		return !slices.Contains(results, false), nil
	})
	if err != nil {
		t.Fatalf("not every bad object conditioned within a minute: %s", strings.Join(state, "; "))
	}

	// Then a minute of watching: writes to each object, events about it, log lines naming it.
	type obj struct{ kind, name string }
	watched := []obj{{"MySQLCluster", "nosecret"}, {"MySQLCluster", "taken"}, {"MySQLUser", "orphan"}, {"MySQLUser", "nopass"},
		{"MySQLDatabase", "orphan"}, {"MySQLBackup", "noready"}, {"MySQLRestore", "nobackup"}, {"MySQLBackupSchedule", "badcron"}}
	time.Sleep(3 * time.Second) // the last event or status write of the settling may still be in flight
	wctx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	writes := map[obj]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	count := func(kind string, w watch.Interface, err error) {
		if err != nil {
			t.Fatalf("watch %s: %v", kind, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for {
				select {
				case <-wctx.Done():
					return
				case e, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if m, isMeta := e.Object.(metav1.Object); isMeta && e.Type == watch.Modified {
						mu.Lock()
						writes[obj{kind, m.GetName()}]++
						mu.Unlock()
					}
				}
			}
		}()
	}
	w, err := api.MySQLClusters(ns).Watch(wctx, metav1.ListOptions{})
	count("MySQLCluster", w, err)
	w, err = api.MySQLUsers(ns).Watch(wctx, metav1.ListOptions{})
	count("MySQLUser", w, err)
	w, err = api.MySQLDatabases(ns).Watch(wctx, metav1.ListOptions{})
	count("MySQLDatabase", w, err)
	w, err = api.MySQLBackups(ns).Watch(wctx, metav1.ListOptions{})
	count("MySQLBackup", w, err)
	w, err = api.MySQLRestores(ns).Watch(wctx, metav1.ListOptions{})
	count("MySQLRestore", w, err)
	w, err = api.MySQLBackupSchedules(ns).Watch(wctx, metav1.ListOptions{})
	count("MySQLBackupSchedule", w, err)
	eventsBefore := eventCounts(t, ns)
	klog.Flush()
	logStart := fileSize(t, operatorLog)

	// The counters can see what they count: a control object written three times in the
	// window shows three writes.
	for i := range 3 {
		time.Sleep(5 * time.Second)
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"example.com/touched":"%d"}}}`, i)
		if _, err := api.MySQLDatabases(ns).Patch(ctx, "orphan", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	<-wctx.Done()
	wg.Wait()
	klog.Flush()
	logged := logLinesNaming(t, operatorLog, logStart, ns)
	eventsAfter := eventCounts(t, ns)
	if n := writes[obj{"MySQLDatabase", "orphan"}]; n < 3 {
		t.Errorf("the watch saw %d writes of the MySQLDatabase patched three times", n)
	}
	writes[obj{"MySQLDatabase", "orphan"}] -= 3
	if n := logLinesNaming(t, operatorLog, 0, ns)["taken"]; n == 0 {
		t.Error("no log line names the cluster whose ConfigMap is taken: the log count sees nothing")
	}
	if eventsBefore["MySQLCluster/taken"] == 0 {
		t.Error("no event about the cluster whose ConfigMap is taken: the event count sees nothing")
	}
	for _, o := range watched {
		// A watch without a resource version starts with an ADDED per object: only
		// MODIFIED counts. Resync (1 min here) may reconcile each once; in-sync costs nothing.
		events := eventsAfter[o.kind+"/"+o.name] - eventsBefore[o.kind+"/"+o.name]
		lines := logged[o.name]
		t.Logf("%s %s: %d writes, %d events, %d log lines in a minute", o.kind, o.name, writes[o], events, lines)
		if writes[o] > 2 || events > 7 || lines > 10 {
			t.Errorf("%s %s hot-loops: %d writes, %d events, %d log lines in a minute", o.kind, o.name, writes[o], events, lines)
		}
	}
}

// eventCounts sums the count of the events in ns per involved object ("Kind/name").
func eventCounts(t *testing.T, ns string) map[string]int {
	t.Helper()
	list, err := cp.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range list.Items {
		n := int(e.Count)
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		out[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] += max(n, 1)
	}
	return out
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// logLinesNaming counts, per object name, the lines of the log at path from offset on that
// name an object of namespace ns (klog.KObj prints "ns/name").
func logLinesNaming(t *testing.T, path string, offset int64, ns string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(b[offset:]), "\n") {
		i := strings.Index(line, ns+"/")
		if i < 0 {
			continue
		}
		name := line[i+len(ns)+1:]
		if j := strings.IndexAny(name, "\" ,}"); j >= 0 {
			name = name[:j]
		}
		out[name]++
	}
	return out
}
