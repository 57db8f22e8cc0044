package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/archive"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	pkgmysql "github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/test/localcluster"
	"github.com/mysqlop/mysql-operator/test/localkubelet"
	"github.com/mysqlop/mysql-operator/test/mariadb"
	"github.com/mysqlop/mysql-operator/test/s3"
)

const (
	ns          = "shop"
	name        = "db"
	appPassword = "app-e2e-Pa55"
)

// The user journeys, in order, on one three-member MariaDB cluster: Ready with real members;
// an application account and schema declared as CRs; rows written through the primary are
// served by the replicas; a crash-looping primary fails over with no acknowledged write lost
// and the Services follow; a deleted replica pod comes back with its data; a partitioned
// replica leaves the replicas Service and catches up when healed; scale 3 -> 5 -> 3
// by spec.members and kubectl scale; a version upgrade rolls replicas first and the primary
// last; the operator pod killed during a failover converges; backups to S3 from a replica, a
// logical and a physical restore (every member restarted onto the backup's datadir) and a new
// cluster bootstrapped from the physical backup; deleting the cluster keeps the claims. After the
// failover, kubectl logs, exec and port-forward are used on the members. TLS is on throughout,
// and its certificate is rotated under a writer first. Each step needs the ones before it.
func TestUserJourneys(t *testing.T) {
	ctx := context.Background()
	// The members' pods must pass the restricted Pod Security profile.
	if err := lc.RestrictNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	manifest := localcluster.ClusterManifest(name, appPassword)
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	if _, err := lc.Kubectl(ctx, "apply", "-n", ns, "-f", path); err != nil {
		t.Fatal(err)
	}
	c := waitHealthy(t, 3, 5*time.Minute)
	t.Logf("apply to Ready (3 members, Healthy): %v", time.Since(applied).Round(time.Millisecond))
	eventually(t, 60*time.Second, "user and database Ready", func(ctx context.Context) (bool, error) {
		u, err := mysql.MysqlopV1alpha1().MySQLUsers(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		d, err := mysql.MysqlopV1alpha1().MySQLDatabases(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return condTrue(u.Status.Conditions, v1alpha1.ConditionReady) && condTrue(d.Status.Conditions, v1alpha1.ConditionReady), nil
	})

	primary := c.Status.Primary
	if _, err := appDB(t, primary).ExecContext(ctx, "CREATE TABLE app.t (id INT PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := appDB(t, primary).ExecContext(ctx, "INSERT INTO app.t VALUES (1, 'first')"); err != nil {
		t.Fatal(err)
	}
	for _, m := range members(3) {
		if m != primary {
			waitRows(t, m, 1)
		}
	}

	t.Run("TLS on by default, and a certificate rotation under a writer", func(t *testing.T) { tlsJourney(t, primary) })

	t.Run("failover", func(t *testing.T) {
		w := localcluster.StartWriter(memberDB, statusPrimary)
		time.Sleep(time.Second)
		killed := time.Now()
		newPrimary := crashLoop(pod(t, primary), resources.ContainerMySQL)
		if newPrimary == "" {
			w.Stop()
			t.Fatalf("no failover from %s within 2 minutes", primary)
		}
		promoted := time.Since(killed)
		firstWrite := w.FirstAckAfter(killed, newPrimary, 30*time.Second)
		acked := w.Stop()
		t.Logf("failover: SIGKILL of %s's mysqld (kept crashing) -> %s promoted in %v, first acknowledged write on it after %v; %d writes acknowledged",
			primary, newPrimary, promoted.Round(time.Millisecond), firstWrite.Round(time.Millisecond), len(acked))
		// Typically under 2 s here; 10 s leaves room for a loaded CI machine while still
		// catching a writer stalled for tens of seconds, which once went unseen for two stops.
		if firstWrite < 0 || firstWrite > 10*time.Second {
			t.Errorf("no acknowledged write on the new primary %s within 10 s of the SIGKILL (%v)", newPrimary, firstWrite)
		}
		settleAfterFailover(t, primary)
		if lost := missing(t, newPrimary, acked); len(lost) > 0 {
			t.Fatalf("%d acknowledged writes lost, e.g. %v", len(lost), lost[:min(5, len(lost))])
		}
		waitServiceEndpoints(t, name+"-primary", newPrimary)
		primary = newPrimary
	})

	t.Run("kubectl logs, exec and port-forward on the members", func(t *testing.T) { kubectlJourney(t, primary) })

	t.Run("a real Prometheus scrapes the members and the operator, with the chart's rules and dashboard", func(t *testing.T) { prometheusJourney(t, primary) })

	t.Run("kubectl mysqlop: status, credentials, connect, logs, switchover, reseed", func(t *testing.T) { primary = pluginJourney(t, primary) })

	t.Run("deleted replica comes back with its data", func(t *testing.T) {
		replica := otherThan(members(3), primary)[0]
		old := pod(t, replica)
		if err := lc.CP.Kube.CoreV1().Pods(ns).Delete(ctx, replica, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, replica+" recreated and ready", func(ctx context.Context) (bool, error) {
			p, err := lc.CP.Kube.CoreV1().Pods(ns).Get(ctx, replica, metav1.GetOptions{})
			return err == nil && p.UID != old.UID && localcluster.PodReady(p), nil
		})
		n := rows(t, primary)
		waitRows(t, replica, n)
		waitHealthy(t, 3, 2*time.Minute)
	})

	t.Run("a partitioned replica leaves the replicas Service and catches up when healed", func(t *testing.T) {
		replica := otherThan(members(3), primary)[0]
		p := pod(t, replica)
		if err := lc.SetNetwork(p, false); err != nil {
			t.Fatal(err)
		}
		healed := false
		defer func() {
			if !healed {
				_ = lc.SetNetwork(p, true)
			}
		}()
		eventually(t, 60*time.Second, replica+" out of the replicas Service", func(ctx context.Context) (bool, error) {
			c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && c.Status.Phase == v1alpha1.ClusterDegraded && pod(t, replica).Labels[v1alpha1.LabelRole] == "", nil
		})
		// Semi-sync still has the other replica: writes go on.
		if _, err := appDB(t, primary).ExecContext(ctx, "INSERT INTO app.t VALUES (2, 'while partitioned')"); err != nil {
			t.Fatal(err)
		}
		if err := lc.SetNetwork(p, true); err != nil {
			t.Fatal(err)
		}
		healed = true
		waitHealthy(t, 3, 2*time.Minute)
		waitRows(t, replica, rows(t, primary))
	})

	t.Run("scale 3 to 5 by spec.members and back to 3 by kubectl scale", func(t *testing.T) {
		if _, err := lc.Kubectl(ctx, "patch", "-n", ns, "mysqlcluster/"+name, "--type=merge", "-p", `{"spec":{"members":5}}`); err != nil {
			t.Fatal(err)
		}
		waitHealthy(t, 5, 4*time.Minute)
		n := rows(t, primary)
		waitRows(t, name+"-4", n)
		if _, err := lc.Kubectl(ctx, "scale", "-n", ns, "mysqlcluster/"+name, "--replicas=3"); err != nil {
			t.Fatal(err)
		}
		c := waitHealthy(t, 3, 4*time.Minute)
		if !contains(members(3), c.Status.Primary) {
			t.Fatalf("primary %s is not one of the 3 members left", c.Status.Primary)
		}
		primary = c.Status.Primary
		waitRows(t, primary, n)
	})

	t.Run("upgrade rolls replicas first and the primary last", func(t *testing.T) {
		starts := map[string]time.Time{}
		var mu sync.Mutex
		stopWatch := watchRestarts(t, starts, &mu)
		if _, err := lc.Kubectl(ctx, "patch", "-n", ns, "mysqlcluster/"+name, "--type=merge", "-p", `{"spec":{"version":"10.11.7"}}`); err != nil {
			t.Fatal(err)
		}
		eventually(t, 6*time.Minute, "upgraded to 10.11.7 and Healthy", func(ctx context.Context) (bool, error) {
			c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && c.Status.CurrentVersion == "10.11.7" && c.Status.Phase == v1alpha1.ClusterHealthy && c.Status.ReadyMembers == 3, nil
		})
		stopWatch()
		c := cluster(t)
		mu.Lock()
		defer mu.Unlock()
		// The pod that was primary when the rollout began restarts last, after a switchover.
		order := make([]string, 0, len(starts))
		for m := range starts {
			order = append(order, m)
		}
		sort.Slice(order, func(i, j int) bool { return starts[order[i]].Before(starts[order[j]]) })
		if len(order) != 3 || order[2] != primary || c.Status.Primary == primary {
			t.Fatalf("restart order %v (primary before %s, after %s)", order, primary, c.Status.Primary)
		}
		primary = c.Status.Primary
		waitRows(t, primary, 1)
	})

	t.Run("operator killed during a failover converges", func(t *testing.T) {
		ops, err := lc.CP.Kube.CoreV1().Pods(operatorNamespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(ops.Items) == 0 {
			t.Fatalf("operator pods: %v", err)
		}
		op := &ops.Items[0]
		done := make(chan string, 1)
		victim := pod(t, primary)
		go func() { done <- crashLoop(victim, resources.ContainerMySQL) }()
		time.Sleep(1500 * time.Millisecond)
		if pid, err := lc.PID(op, "operator"); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		newPrimary := <-done
		if newPrimary == "" {
			c := cluster(t)
			t.Fatalf("no new primary after the operator restarted: status %+v", c.Status)
		}
		settleAfterFailover(t, victim.Name)
		c := waitHealthy(t, 3, time.Minute)
		primary = c.Status.Primary
		waitServiceEndpoints(t, name+"-primary", primary)
	})

	t.Run("a new operator version restarts the agents but not mysqld", func(t *testing.T) {
		before := map[string]*corev1.Pod{}
		pids := map[string]int{}
		for _, m := range members(3) {
			p := pod(t, m)
			before[m] = p
			pid, err := lc.PID(p, resources.ContainerMySQL)
			if err != nil {
				t.Fatal(err)
			}
			pids[m] = pid
		}
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		if err := lc.InstallOperator(ctx, operatorNamespace, "kubeAPI.qps=100", "kubeAPI.burst=200",
			"image.tag="+nextVersion, "agentImage.tag="+nextVersion); err != nil {
			t.Fatal(err)
		}
		eventually(t, 3*time.Minute, "agents on "+nextVersion+" and the cluster Healthy", func(ctx context.Context) (bool, error) {
			c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || c.Status.OperatorVersion != nextVersion || c.Status.Phase != v1alpha1.ClusterHealthy || c.Status.ReadyMembers != 3 {
				return false, nil
			}
			for _, m := range members(3) {
				p := pod(t, m)
				for _, cs := range p.Status.ContainerStatuses {
					if cs.Name == resources.ContainerAgent && (!strings.HasSuffix(cs.Image, ":"+nextVersion) || !cs.Ready) {
						return false, nil
					}
				}
			}
			return true, nil
		})
		for _, m := range members(3) {
			p := pod(t, m)
			pid, err := lc.PID(p, resources.ContainerMySQL)
			if p.UID != before[m].UID || err != nil || pid != pids[m] || syscall.Kill(pid, 0) != nil {
				t.Fatalf("%s: pod or mysqld replaced (uid %s -> %s, mysqld pid %d -> %d)", m, before[m].UID, p.UID, pids[m], pid)
			}
			if agentRestarts(p) <= agentRestarts(before[m]) {
				t.Fatalf("%s: the agent container did not restart onto the new image", m)
			}
		}
	})

	t.Run("backups from real pods to S3, logical and physical restores, a cluster from a backup", func(t *testing.T) {
		gw, _, err := localkubelet.Gateway(lc.Opts.CIDR)
		if err != nil {
			t.Fatal(err)
		}
		// On the bridge's address, so that the agents in the pods reach it.
		store := s3.StartOn(t, gw.String())
		creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-credentials", Namespace: ns, Labels: map[string]string{v1alpha1.LabelStorageCredentials: "true"}},
			Data: map[string][]byte{"accessKeyId": []byte(s3.AccessKey), "secretAccessKey": []byte(s3.SecretKey)}}
		if _, err := lc.CP.Kube.CoreV1().Secrets(ns).Create(ctx, creds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		backup := func(backupName string, method v1alpha1.BackupMethod) *v1alpha1.MySQLBackup {
			b := &v1alpha1.MySQLBackup{ObjectMeta: metav1.ObjectMeta{Name: backupName, Namespace: ns}, Spec: v1alpha1.MySQLBackupSpec{
				ClusterRef: v1alpha1.ClusterReference{Name: name}, Method: method,
				Storage: v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{Endpoint: store.Endpoint, Bucket: s3.Bucket, Prefix: "e2e",
					ForcePathStyle: true, CredentialsSecretRef: v1alpha1.LocalReference{Name: "s3-credentials"}}}}}
			if _, err := mysql.MysqlopV1alpha1().MySQLBackups(ns).Create(ctx, b, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
				b, err = mysql.MysqlopV1alpha1().MySQLBackups(ns).Get(ctx, backupName, metav1.GetOptions{})
				return err == nil && (b.Status.Phase == v1alpha1.JobComplete || b.Status.Phase == v1alpha1.JobFailed), nil
			}); err != nil {
				t.Fatalf("backup %s not finished: %v; status %+v", backupName, err, b.Status)
			}
			if b.Status.Phase != v1alpha1.JobComplete || b.Status.Member == primary || b.Status.SHA256 == "" || b.Status.GTIDPosition == "" {
				t.Fatalf("%s backup: %+v", method, b.Status)
			}
			// The tool ran in the member's toolbox container (the server image's tools), not
			// in the agent's, on the pipes the agent passed it.
			tool := map[v1alpha1.BackupMethod]string{v1alpha1.BackupLogical: "mariadb-dump", v1alpha1.BackupPhysical: "mariadb-backup"}[method]
			if log := lc.Log(pod(t, b.Status.Member), resources.ContainerToolbox); !strings.Contains(log, `tool="`+tool+`" piped=true`) {
				t.Fatalf("%s backup on %s: the toolbox container did not run %s on the agent's pipes; its log:\n%s", method, b.Status.Member, tool, log)
			}
			return b
		}
		n := rows(t, primary)
		backup("logical", v1alpha1.BackupLogical)
		backup("physical", v1alpha1.BackupPhysical)

		// kubectl mysqlop backup now, to the storage of an earlier backup; status names it.
		out, errOut, code := plugin(t, "", "backup", "now", name, "--like", "logical", "--wait", "3m", "-o", "json")
		var now v1alpha1.MySQLBackup
		logical, err := mysql.MysqlopV1alpha1().MySQLBackups(ns).Get(ctx, "logical", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &now); code != 0 || err != nil || now.Status.Phase != v1alpha1.JobComplete || now.Spec.Storage != logical.Spec.Storage {
			t.Fatalf("kubectl mysqlop backup now (exit %d, %v): %s\n%s", code, err, out, errOut)
		}
		if out, _, _ := plugin(t, "", "status", name); !regexp.MustCompile(`Last backup:\s+` + now.Name + ` \(logical`).MatchString(out) {
			t.Errorf("status does not name the backup just taken, %s:\n%s", now.Name, out)
		}
		// Gone again (its stored copy stays: Retain), so that "the newest backup" below is as before.
		if err := mysql.MysqlopV1alpha1().MySQLBackups(ns).Delete(ctx, now.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}

		// Binary log archiving from the real pods: the primary's agent archives a write within
		// the interval; dropping spec.binlogArchive stops it and clears the status.
		setArchive := func(a *v1alpha1.BinlogArchiveSpec) {
			t.Helper()
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"binlogArchive": a}})
			if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		setArchive(&v1alpha1.BinlogArchiveSpec{Interval: &metav1.Duration{Duration: 2 * time.Second},
			Storage: v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{Endpoint: store.Endpoint, Bucket: s3.Bucket, Prefix: "e2e",
				ForcePathStyle: true, CredentialsSecretRef: v1alpha1.LocalReference{Name: "s3-credentials"}}}})
		if _, err := appDB(t, primary).ExecContext(ctx, "INSERT INTO app.t VALUES (100, 'archived')"); err != nil {
			t.Fatal(err)
		}
		var written string
		if err := appDB(t, primary).QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&written); err != nil {
			t.Fatal(err)
		}
		archiveStarted := time.Now()
		eventually(t, 2*time.Minute, "the write archived, in the status", func(ctx context.Context) (bool, error) {
			c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || c.Status.BinlogArchive == nil {
				return false, nil
			}
			cond := apimeta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionArchiving)
			return c.Status.BinlogArchive.End == written && c.Status.BinlogArchive.Member == primary && cond != nil && cond.Status == metav1.ConditionTrue, nil
		})
		t.Logf("write archived and in the status after %v (interval 2 s, status checked every 10 s)", time.Since(archiveStarted).Round(100*time.Millisecond))
		objStore, err := storage.New(store.Config("e2e"))
		if err != nil {
			t.Fatal(err)
		}
		ix, err := archive.LoadIndex(ctx, objStore, ns+"/"+name+"/binlog", pkgmysql.MariaDB)
		if err != nil || len(ix.Entries) == 0 || archive.Check(ctx, objStore, ns+"/"+name+"/binlog", ix) != nil {
			t.Fatalf("archive index %+v: %v", ix, err)
		}
		restore := func(restoreName, backupName string) *v1alpha1.MySQLRestore {
			t.Helper()
			r := &v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{Name: restoreName, Namespace: ns},
				Spec: v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: name}, BackupRef: v1alpha1.LocalReference{Name: backupName}}}
			if _, err := mysql.MysqlopV1alpha1().MySQLRestores(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			return waitRestore(t, restoreName, 5*time.Minute)
		}
		// exactly waits until every listed member holds n rows.
		exactly := func(n int, ms ...string) {
			t.Helper()
			for _, m := range ms {
				eventually(t, time.Minute, fmt.Sprintf("%d rows on %s after the restore", n, m), func(ctx context.Context) (bool, error) {
					var got int
					db, err := memberDB(m)
					if err != nil {
						return false, nil
					}
					err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM app.t").Scan(&got)
					return err == nil && got == n, nil
				})
			}
		}
		// Point-in-time recovery across a failover: the primary is killed until another takes
		// over, which archives on; row 101 is written in one second, row 102 in a later one.
		// Restoring to the second of 101 brings back the backup's rows with 100 and 101, not
		// 102: from the physical backup into a new cluster, then from the logical backup in
		// place (which starts a new archive timeline, so it comes second).
		old := primary
		if primary = crashLoop(pod(t, old), resources.ContainerMySQL); primary == "" {
			t.Fatalf("no failover from %s within 2 minutes", old)
		}
		settleAfterFailover(t, old)
		waitServiceEndpoints(t, name+"-primary", primary)
		if _, err := appDB(t, primary).ExecContext(ctx, "INSERT INTO app.t VALUES (101, 'at the target')"); err != nil {
			t.Fatal(err)
		}
		target := metav1.NewTime(time.Now().Truncate(time.Second))
		time.Sleep(time.Until(target.Add(1200 * time.Millisecond)))
		if _, err := appDB(t, primary).ExecContext(ctx, "INSERT INTO app.t VALUES (102, 'after the target')"); err != nil {
			t.Fatal(err)
		}
		if err := appDB(t, primary).QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&written); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "row 102 archived by the new primary, a recoverable window in the status", func(ctx context.Context) (bool, error) {
			c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && c.Status.BinlogArchive != nil && c.Status.BinlogArchive.End == written && c.Status.BinlogArchive.Member == primary &&
				c.Status.RecoverableFrom != nil && c.Status.RecoverableUntil != nil && !c.Status.RecoverableUntil.Before(&target), nil
		})
		if c := cluster(t); c.Status.RecoverableFrom.After(target.Time) {
			t.Errorf("recoverable from %v, after the target %v", c.Status.RecoverableFrom, target)
		}
		pitrRows := func(ms ...string) {
			t.Helper()
			exactly(n+2, ms...)
			for _, m := range ms {
				db, err := memberDB(m)
				if err != nil {
					t.Fatal(err)
				}
				var ids string
				if err := db.QueryRowContext(ctx, "SELECT GROUP_CONCAT(id ORDER BY id) FROM app.t WHERE id BETWEEN 100 AND 102").Scan(&ids); err != nil || ids != "100,101" {
					t.Errorf("%s holds rows %q of 100-102 after the point-in-time restore (%v), want 100,101", m, ids, err)
				}
			}
		}
		pitrCopy := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Name: "pitr", Namespace: ns}, Spec: v1alpha1.MySQLClusterSpec{
			Flavor: v1alpha1.FlavorMariaDB, Version: cluster(t).Spec.Version, Members: 2,
			Bootstrap: &v1alpha1.BootstrapSpec{FromBackup: v1alpha1.LocalReference{Name: "physical"}, Target: &v1alpha1.RestoreTarget{Time: &target}}}}
		if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Create(ctx, pitrCopy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r := waitRestore(t, "pitr-bootstrap", 6*time.Minute)
		if r.Status.Phase != v1alpha1.JobComplete || r.Status.Replay == nil || r.Status.Replay.Transactions < 2 {
			t.Fatalf("point-in-time bootstrap restore: %+v replay %+v", r.Status, r.Status.Replay)
		}
		t.Logf("new cluster from the physical backup to %s: %s", target.UTC().Format(time.RFC3339), apimeta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionComplete).Message)
		pitrRows("pitr-0", "pitr-1")
		if err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Delete(ctx, "pitr", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// In place through kubectl mysqlop restore: refused without the confirmation, then made.
		at := target.UTC().Format(time.RFC3339Nano)
		if _, errOut, code := plugin(t, "no\n", "restore", name, "--from", "logical", "--to-time", at); code == 0 || !strings.Contains(errOut, "not confirmed") {
			t.Fatalf("an unconfirmed restore (exit %d): %s", code, errOut)
		}
		out, errOut, code = plugin(t, name+"\n", "restore", name, "--from", "logical", "--to-time", at, "-o", "json")
		var inPlace v1alpha1.MySQLRestore
		if err := json.Unmarshal([]byte(out), &inPlace); code != 0 || err != nil || !inPlace.Spec.Target.Time.Equal(&target) {
			t.Fatalf("kubectl mysqlop restore (exit %d, %v): %s\n%s", code, err, out, errOut)
		}
		if r := waitRestore(t, inPlace.Name, 5*time.Minute); r.Status.Phase != v1alpha1.JobComplete {
			t.Fatalf("point-in-time restore in place: %+v", r.Status)
		}
		pitrRows(members(3)...)
		if tl := cluster(t).Annotations[v1alpha1.AnnotationArchiveTimeline]; tl == "" {
			t.Error("the in-place restore began no archive timeline")
		}

		// Verification: a logical backup, writes, a physical backup. Verifying the physical one
		// restores it into one scratch cluster, the logical one replayed to its position into
		// another, and their checksums agree; then the scratch clusters and volumes are gone.
		backup("verify-base", v1alpha1.BackupLogical)
		if _, err := appDB(t, primary).ExecContext(ctx, "INSERT INTO app.t VALUES (200, 'between the backups'), (201, 'and another')"); err != nil {
			t.Fatal(err)
		}
		backup("verify-me", v1alpha1.BackupPhysical)
		verifyStarted := time.Now()
		check := &v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{Name: "verify", Namespace: ns},
			Spec: v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: name}, BackupRef: v1alpha1.LocalReference{Name: "verify-me"}, Verify: true}}
		if _, err := mysql.MysqlopV1alpha1().MySQLRestores(ns).Create(ctx, check, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r = waitRestore(t, "verify", 8*time.Minute)
		v := r.Status.Verification
		if r.Status.Phase != v1alpha1.JobComplete || v == nil || v.Base != "verify-base" || v.Tables < 1 || len(v.Mismatched) > 0 {
			t.Fatalf("verification: %+v verification %+v", r.Status, v)
		}
		t.Logf("verified in %v: %s", time.Since(verifyStarted).Round(time.Second), apimeta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionComplete).Message)
		// left says what of the verification is still there ("" when nothing is).
		left := func(ctx context.Context) string {
			var out []string
			if r, err := mysql.MysqlopV1alpha1().MySQLRestores(ns).Get(ctx, "verify", metav1.GetOptions{}); err != nil || len(r.Finalizers) > 0 {
				out = append(out, fmt.Sprintf("restore finalizers %v (%v)", r.Finalizers, err))
			}
			for _, s := range []string{v.BackupCluster, v.ReplayCluster} {
				if c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, s, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					out = append(out, fmt.Sprintf("cluster %s (%v, deleted %v, finalizers %v)", s, err, c.DeletionTimestamp, c.Finalizers))
				}
				pvcs, err := lc.CP.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelCluster + "=" + s})
				if err != nil {
					out = append(out, err.Error())
					continue
				}
				for _, p := range pvcs.Items {
					out = append(out, fmt.Sprintf("volume %s (deleted %v, finalizers %v)", p.Name, p.DeletionTimestamp, p.Finalizers))
				}
			}
			return strings.Join(out, "; ")
		}
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			return left(ctx) == "", nil
		}); err != nil {
			t.Fatalf("the scratch clusters, their volumes and the finalizer not gone within 2 minutes: %s", left(ctx))
		}

		setArchive(nil)
		eventually(t, time.Minute, "archiving off and out of the status", func(ctx context.Context) (bool, error) {
			c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && c.Status.BinlogArchive == nil && apimeta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionArchiving) == nil, nil
		})
		// (The rows archived above came after both backups: the restores below take them away.)
		if _, err := appDB(t, primary).ExecContext(ctx, "INSERT INTO app.t VALUES (3, 'after the backup')"); err != nil {
			t.Fatal(err)
		}

		// Logical: loaded through the primary, replicated; the table is back as it was at the
		// backup, on every member.
		if r := restore("back", "logical"); r.Status.Phase != v1alpha1.JobComplete {
			t.Fatalf("logical restore: %+v", r.Status)
		}
		exactly(n, members(3)...)

		// Physical: every member restarts onto the backup's datadir, the primary first.
		if _, err := appDB(t, primary).ExecContext(ctx, "INSERT INTO app.t VALUES (4, 'after the logical restore')"); err != nil {
			t.Fatal(err)
		}
		uids := map[string]types.UID{}
		for _, m := range members(3) {
			uids[m] = pod(t, m).UID
		}
		started := time.Now()
		r = restore("back-physical", "physical")
		if r.Status.Phase != v1alpha1.JobComplete || len(r.Status.Restarted) != 3 || r.Status.Restarted[0] != primary {
			t.Fatalf("physical restore: %+v", r.Status)
		}
		t.Logf("physical restore of 3 members: %v from the MySQLRestore to Complete", time.Since(started).Round(time.Millisecond))
		waitHealthy(t, 3, 3*time.Minute)
		for _, m := range members(3) {
			if pod(t, m).UID == uids[m] {
				t.Errorf("%s did not restart onto the restored data", m)
			}
		}
		exactly(n, members(3)...)
		// init set each member's old datadir aside; its agent deletes it once running.
		for _, m := range members(3) {
			err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				out, err := lc.Kubectl(ctx, "-n", ns, "exec", m, "-c", resources.ContainerMySQL, "--", "ls", "/var/lib/mysql")
				// "data": the volume, not some other directory.
				return err == nil && strings.Contains(out, "data") && !strings.Contains(out, "restore-replaced"), nil
			})
			if err != nil {
				t.Errorf("%s: the datadir the restore replaced is still on the volume a minute after the restart", m)
			}
		}
		if statusPrimary() != primary {
			t.Errorf("the primary moved during the restore: %s -> %s", primary, statusPrimary())
		}
		if _, err := appDB(t, primary).ExecContext(ctx, "INSERT INTO app.t VALUES (5, 'after the physical restore')"); err != nil {
			t.Fatalf("write after the physical restore: %v", err)
		}
		exactly(n+1, members(3)...)

		// A member added after the physical restore cannot replay the primary's binary logs
		// (they restart at the backup's position): init seeds it with a copy of a peer. The
		// claims kept from the members removed earlier hold the history before the restore
		// (docs/backup.md), so they go first.
		for _, m := range []string{name + "-3", name + "-4"} {
			if err := lc.CP.Kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data-"+m, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		eventually(t, time.Minute, "old claims gone", func(ctx context.Context) (bool, error) {
			_, err := lc.CP.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-"+name+"-3", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if _, err := lc.Kubectl(ctx, "patch", "-n", ns, "mysqlcluster/"+name, "--type=merge", "-p", `{"spec":{"members":4}}`); err != nil {
			t.Fatal(err)
		}
		waitHealthy(t, 4, 4*time.Minute)
		exactly(n+1, name+"-3")
		// A copy completes either in one init run, or across two: an init that copied and then
		// failed (a credential file not yet in its volume, seen once) leaves the copy staged as
		// committed, and the next run puts it in place.
		if log := lc.Log(pod(t, name+"-3"), resources.ContainerInit); !strings.Contains(log, "Seeded the datadir from a peer") &&
			!strings.Contains(log, `"Restored the datadir from a physical backup" restore="seed from `) {
			t.Errorf("%s was not seeded; its init log:\n%s", name+"-3", log)
		}
		if _, err := lc.Kubectl(ctx, "patch", "-n", ns, "mysqlcluster/"+name, "--type=merge", "-p", `{"spec":{"members":3}}`); err != nil {
			t.Fatal(err)
		}
		waitHealthy(t, 3, 4*time.Minute)

		// A new cluster bootstrapped from the physical backup: the backup's data and accounts,
		// its own credentials.
		copyCluster := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: ns}, Spec: v1alpha1.MySQLClusterSpec{
			Flavor: v1alpha1.FlavorMariaDB, Version: cluster(t).Spec.Version, Members: 2,
			Bootstrap: &v1alpha1.BootstrapSpec{FromBackup: v1alpha1.LocalReference{Name: "physical"}}}}
		if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Create(ctx, copyCluster, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if r := waitRestore(t, "copy-bootstrap", 6*time.Minute); r.Status.Phase != v1alpha1.JobComplete {
			t.Fatalf("bootstrap restore: %+v", r.Status)
		}
		eventually(t, 3*time.Minute, "cluster copy Healthy", func(ctx context.Context) (bool, error) {
			c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, "copy", metav1.GetOptions{})
			return err == nil && c.Status.Phase == v1alpha1.ClusterHealthy && c.Status.ReadyMembers == 2, nil
		})
		exactly(n, "copy-0", "copy-1")
		if err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Delete(ctx, "copy", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("deleting the cluster removes its children and keeps the claims", func(t *testing.T) {
		if err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 3*time.Minute, "pods, statefulset and services gone", func(ctx context.Context) (bool, error) {
			pods, _ := lc.CP.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name})
			_, errS := lc.CP.Kube.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
			_, errP := lc.CP.Kube.CoreV1().Services(ns).Get(ctx, name+"-primary", metav1.GetOptions{})
			return len(pods.Items) == 0 && apierrors.IsNotFound(errS) && apierrors.IsNotFound(errP), nil
		})
		claims, err := lc.CP.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(claims.Items) < 3 {
			t.Fatalf("claims after delete: %d (%v); the documented policy keeps them", len(claims.Items), err)
		}
	})
}

// waitRestore waits until restore name finished and returns it.
func waitRestore(t *testing.T, restoreName string, timeout time.Duration) *v1alpha1.MySQLRestore {
	t.Helper()
	var r *v1alpha1.MySQLRestore
	eventually(t, timeout, "restore "+restoreName+" finished", func(ctx context.Context) (bool, error) {
		var err error
		r, err = mysql.MysqlopV1alpha1().MySQLRestores(ns).Get(ctx, restoreName, metav1.GetOptions{})
		return err == nil && (r.Status.Phase == v1alpha1.JobComplete || r.Status.Phase == v1alpha1.JobFailed), nil
	})
	return r
}

func condTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func cluster(t *testing.T) *v1alpha1.MySQLCluster {
	t.Helper()
	c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func waitHealthy(t *testing.T, members int32, timeout time.Duration) *v1alpha1.MySQLCluster {
	t.Helper()
	var c *v1alpha1.MySQLCluster
	eventually(t, timeout, fmt.Sprintf("cluster Healthy with %d ready members", members), func(ctx context.Context) (bool, error) {
		var err error
		c, err = mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && c.Status.Phase == v1alpha1.ClusterHealthy && c.Status.ReadyMembers == members &&
			c.Spec.Members == members && c.Status.Primary != "", nil
	})
	return c
}

func members(n int) []string {
	var m []string
	for i := 0; i < n; i++ {
		m = append(m, fmt.Sprintf("%s-%d", name, i))
	}
	return m
}

func otherThan(all []string, x string) []string {
	var out []string
	for _, m := range all {
		if m != x {
			out = append(out, m)
		}
	}
	return out
}

func contains(all []string, x string) bool {
	for _, m := range all {
		if m == x {
			return true
		}
	}
	return false
}

func pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := lc.CP.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// apps are pools to the members as the application account.
var apps *localcluster.Pools

// appDB is a pool to member m as the application account, through the member's pod IP.
func appDB(t *testing.T, m string) *sql.DB {
	t.Helper()
	db, err := memberDB(m)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// memberDB is appDB for goroutines that must not fail the test.
func memberDB(m string) (*sql.DB, error) { return apps.Get(m) }

func rows(t *testing.T, m string) int {
	t.Helper()
	var n int
	if err := appDB(t, m).QueryRowContext(context.Background(), "SELECT COUNT(*) FROM app.t").Scan(&n); err != nil {
		t.Fatalf("count rows on %s: %v", m, err)
	}
	return n
}

func waitRows(t *testing.T, m string, n int) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%d rows on %s", n, m), func(ctx context.Context) (bool, error) {
		var got int
		err := appDB(t, m).QueryRowContext(ctx, "SELECT COUNT(*) FROM app.t").Scan(&got)
		return err == nil && got >= n, nil
	})
}

func missing(t *testing.T, m string, ids []int) []int {
	t.Helper()
	lost, err := mariadb.Lost(context.Background(), appDB(t, m), ids)
	if err != nil {
		t.Fatal(err)
	}
	return lost
}

// statusPrimary is the member the cluster's status names primary ("" when unknown).
func statusPrimary() string {
	c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return c.Status.Primary
}

// crashLoop SIGKILLs container of the member's pod each time it runs until the status names
// another primary, and returns it ("" after 2 minutes).
func crashLoop(victim *corev1.Pod, container string) string {
	m := victim.Name
	var next string
	lc.CrashLoop(victim, container, 2*time.Minute, func() bool {
		next = statusPrimary()
		return next != "" && next != m
	})
	if next == m {
		return ""
	}
	return next
}

// settleAfterFailover waits until the cluster is Healthy again with old, the failed primary,
// back as a replica, with no action of ours: a primary killed while a commit waited for its
// acknowledgement drops that commit in crash recovery (init_rpl_role) and rejoins, and one that
// kept it is re-seeded by the operator (spec.replication.reseed: FailedPrimaries).
func settleAfterFailover(t *testing.T, old string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return c.Status.Phase == v1alpha1.ClusterHealthy && c.Status.ReadyMembers == c.Spec.Members && len(c.Status.Replaced) == 0, nil
	})
	if err != nil {
		dumpCluster(t)
		t.Fatalf("cluster Healthy after the failover, %s rejoined: not within 4m: %v", old, err)
	}
}

// dumpCluster logs what a failed wait needs: the cluster's status and each member's
// container states and the end of its server's log.
func dumpCluster(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
		t.Logf("cluster: phase %s primary %s ready %d replaced %v", c.Status.Phase, c.Status.Primary, c.Status.ReadyMembers, c.Status.Replaced)
		for _, cond := range c.Status.Conditions {
			t.Logf("  condition %s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
	}
	pods, err := lc.CP.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		for _, cs := range p.Status.ContainerStatuses {
			t.Logf("pod %s container %s: ready %v restarts %d state %+v last %+v", p.Name, cs.Name, cs.Ready, cs.RestartCount, cs.State, cs.LastTerminationState)
		}
		log := strings.Split(strings.TrimRight(lc.Log(p, resources.ContainerMySQL), "\n"), "\n")
		t.Logf("pod %s: end of the server's log:\n%s", p.Name, strings.Join(log[max(len(log)-25, 0):], "\n"))
		dumpTLSFiles(t, p)
	}
}

// dumpTLSFiles logs the TLS files as the member's server sees them (through its process's
// root, which follows its mount namespace) next to the Secret's: a replica that cannot load
// its CA bundle reports only "SSL_CTX_set_default_verify_paths failed".
func dumpTLSFiles(t *testing.T, p *corev1.Pod) {
	t.Helper()
	sec, err := lc.CP.Kube.CoreV1().Secrets(ns).Get(context.Background(), name+"-tls", metav1.GetOptions{})
	if err != nil {
		t.Logf("pod %s: TLS Secret: %v", p.Name, err)
		return
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != resources.ContainerMySQL || cs.State.Running == nil {
			continue
		}
		pid := strings.TrimPrefix(cs.ContainerID, "local://")
		for _, f := range []string{"ca.crt", "tls.crt", "tls.key"} {
			path := filepath.Join("/proc", pid, "root", "etc/mysqlop/tls", f)
			b, err := os.ReadFile(path)
			var st syscall.Stat_t
			statErr := syscall.Stat(path, &st)
			t.Logf("pod %s (pid %s) %s: %d bytes, equal to the Secret's %v, read error %v, stat error %v, mode %o uid %d gid %d, %d PEM blocks",
				p.Name, pid, f, len(b), string(b) == string(sec.Data[f]), err, statErr, st.Mode, st.Uid, st.Gid, strings.Count(string(b), "-----BEGIN"))
		}
		if mi, err := os.ReadFile(filepath.Join("/proc", pid, "mountinfo")); err == nil {
			for _, l := range strings.Split(string(mi), "\n") {
				if strings.Contains(l, "mysqlop") {
					t.Logf("pod %s (pid %s) mount: %s", p.Name, pid, l)
				}
			}
		}
		if st, err := os.ReadFile(filepath.Join("/proc", pid, "status")); err == nil {
			for _, l := range strings.Split(string(st), "\n") {
				if strings.HasPrefix(l, "Uid:") || strings.HasPrefix(l, "Gid:") || strings.HasPrefix(l, "Groups:") {
					t.Logf("pod %s (pid %s) %s", p.Name, pid, l)
				}
			}
		}
	}
}

// waitServiceEndpoints waits until the Service's endpoints are exactly member m's pod IP.
func waitServiceEndpoints(t *testing.T, svc, m string) {
	t.Helper()
	eventually(t, 60*time.Second, "service "+svc+" on "+m, func(ctx context.Context) (bool, error) {
		ip := pod(t, m).Status.PodIP
		slices, err := lc.CP.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc})
		if err != nil {
			return false, nil
		}
		var got []string
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					got = append(got, e.Addresses...)
				}
			}
		}
		return strings.Join(got, ",") == ip, nil
	})
}

// watchRestarts records when each member's mysqld container started anew (its pod was
// replaced) while the returned stop is not called.
func watchRestarts(t *testing.T, starts map[string]time.Time, mu *sync.Mutex) func() {
	uids := map[string]types.UID{}
	for _, m := range members(3) {
		uids[m] = pod(t, m).UID
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(200 * time.Millisecond):
			}
			for _, m := range members(3) {
				p, err := lc.CP.Kube.CoreV1().Pods(ns).Get(context.Background(), m, metav1.GetOptions{})
				if err != nil {
					continue
				}
				mu.Lock()
				if _, seen := starts[m]; !seen && p.UID != uids[m] {
					starts[m] = time.Now()
				}
				mu.Unlock()
			}
		}
	}()
	return func() { close(quit); <-done }
}

func agentRestarts(p *corev1.Pod) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == resources.ContainerAgent {
			return cs.RestartCount
		}
	}
	return -1
}
