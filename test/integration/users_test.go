package integration

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	reasons "github.com/mysqlop/mysql-operator/pkg/events"
	mysqlsql "github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/options"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

func newUser(ns, name, secret string, grants ...v1alpha1.Grant) *v1alpha1.MySQLUser {
	return &v1alpha1.MySQLUser{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.MySQLUserSpec{
			ClusterRef:        v1alpha1.ClusterReference{Name: "db"},
			PasswordSecretRef: v1alpha1.SecretKeyRef{Name: secret},
			Grants:            grants,
		},
	}
}

func putSecret(t *testing.T, ns, name, password string) {
	t.Helper()
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{"password": []byte(password)}}
	_, err := cp.Kube.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = cp.Kube.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("write secret %s: %v", name, err)
	}
}

// readyReason returns the reason of a user's or database's Ready condition, "True" when ready.
func readyReason(conds []metav1.Condition) string {
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady)
	switch {
	case c == nil:
		return ""
	case c.Status == metav1.ConditionTrue:
		return "True"
	}
	return c.Reason
}

func userReady(t *testing.T, ns, name string) string {
	t.Helper()
	u, err := mysql.MysqlopV1alpha1().MySQLUsers(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "error: " + err.Error()
	}
	if u.Status.ObservedGeneration != u.Generation {
		return "stale"
	}
	return readyReason(u.Status.Conditions)
}

func waitUserReady(t *testing.T, ns, name, want string) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("user %s Ready=%s", name, want), func(context.Context) (bool, error) {
		return userReady(t, ns, name) == want, nil
	})
}

func editUser(t *testing.T, ns, name string, mutate func(*v1alpha1.MySQLUser)) {
	t.Helper()
	eventually(t, 10*time.Second, "update user", func(ctx context.Context) (bool, error) {
		u, err := mysql.MysqlopV1alpha1().MySQLUsers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mutate(u)
		_, err = mysql.MysqlopV1alpha1().MySQLUsers(ns).Update(ctx, u, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

func accountOn(t *testing.T, s *mariadb.Server, user string) *mysqlsql.AccountState {
	t.Helper()
	st, err := s.Admin().Account(context.Background(), mysqlsql.Account{User: user, Host: "%"})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func grantsOf(t *testing.T, gs ...v1alpha1.Grant) mysqlsql.Grants {
	t.Helper()
	g := mysqlsql.Grants{}
	for _, x := range gs {
		if x.Table == "" {
			x.Table = "*"
		}
		if err := g.Add(mysqlsql.Scope{Database: x.Database, Table: x.Table}, x.Privileges, x.GrantOption); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

func logsIn(s *mariadb.Server, user, password string) error {
	db, err := mysqlsql.Open(mysqlsql.ConnConfig{Addr: s.Addr(), User: user, Password: password, Timeout: 3 * time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Ping()
}

func gone(ctx context.Context, err error) (bool, error) { return apierrors.IsNotFound(err), nil }

// A MySQLUser and a MySQLDatabase on a real two-member cluster: the schema and the account
// appear (on the replica too, through replication), the user logs in with the Secret's
// password and holds exactly the listed grants; a missing Secret is a clear condition and no
// account; rotation, revocation and both deletion policies work.
func TestUsersAndDatabasesOnMariaDB(t *testing.T) {
	ns, servers := clusterOnServers(t, 2)
	ctx := context.Background()
	waitRoles(t, ns, "db-0", "db-1")
	users := mysql.MysqlopV1alpha1().MySQLUsers(ns)
	dbs := mysql.MysqlopV1alpha1().MySQLDatabases(ns)

	// The schema, Retain by default.
	if _, err := dbs.Create(ctx, &v1alpha1.MySQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec:       v1alpha1.MySQLDatabaseSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}, CharacterSet: "utf8mb4", Collation: "utf8mb4_bin"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "database ready", func(ctx context.Context) (bool, error) {
		d, err := dbs.Get(ctx, "app", metav1.GetOptions{})
		return err == nil && readyReason(d.Status.Conditions) == "True" && d.Status.Collation == "utf8mb4_bin", nil
	})
	for i, s := range servers {
		eventually(t, 10*time.Second, fmt.Sprintf("schema on server %d", i), func(ctx context.Context) (bool, error) {
			sc, err := s.Admin().Schema(ctx, "app")
			return err == nil && sc != nil && sc.CharacterSet == "utf8mb4", nil
		})
	}

	// The user before its Secret: a condition and an event, and no account.
	rw := v1alpha1.Grant{Privileges: []string{"SELECT", "INSERT"}, Database: "app"}
	u := newUser(ns, "app", "app-password", rw)
	u.Spec.MaxUserConnections = 5
	if _, err := users.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUserReady(t, ns, "app", v1alpha1.ReasonSecretNotFound)
	if _, ok := event(t, ns, "app", reasons.SecretNotFound.Reason); !ok {
		t.Error("no SecretNotFound event")
	}
	if st := accountOn(t, servers[0], "app"); st != nil {
		t.Fatalf("an account exists without its Secret: %+v", st)
	}

	putSecret(t, ns, "app-password", "first-Pa55")
	waitUserReady(t, ns, "app", "True")
	if err := logsIn(servers[0], "app", "first-Pa55"); err != nil {
		t.Fatalf("login with the Secret's password: %v", err)
	}
	st := accountOn(t, servers[0], "app")
	if want := grantsOf(t, rw); !reflect.DeepEqual(st.Grants, want) || st.Options.MaxUserConnections != 5 {
		t.Fatalf("account %+v, want grants %+v and 5 connections", st, want)
	}
	eventually(t, 10*time.Second, "account replicated", func(context.Context) (bool, error) {
		return accountOn(t, servers[1], "app") != nil, nil
	})
	out, err := kubectl("get", "myu,mydb", "-n", ns).output()
	// The columns show the effective account and schema, though both names are defaulted.
	if err != nil || !regexp.MustCompile(`mysqluser.mysqlop.io/app\s+db\s+'app'@'%'\s+True\s+Reconciled`).MatchString(out) ||
		!regexp.MustCompile(`mysqldatabase.mysqlop.io/app\s+db\s+app\s+True\s+Reconciled`).MatchString(out) {
		t.Errorf("kubectl get myu,mydb: %v\n%s", err, out)
	}

	// A second MySQLUser for the same account changes nothing and says who owns it; deleting
	// it leaves the account alone.
	dup := newUser(ns, "app-again", "app-password", v1alpha1.Grant{Privileges: []string{"ALL"}, Database: "app"})
	dup.Spec.User = "app"
	if _, err := users.Create(ctx, dup, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUserReady(t, ns, "app-again", "Conflict")
	if st := accountOn(t, servers[0], "app"); !reflect.DeepEqual(st.Grants, grantsOf(t, rw)) {
		t.Fatalf("a conflicting MySQLUser changed the grants: %+v", st.Grants)
	}
	if err := users.Delete(ctx, "app-again", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "conflicting user deleted", func(ctx context.Context) (bool, error) {
		_, err := users.Get(ctx, "app-again", metav1.GetOptions{})
		return gone(ctx, err)
	})
	if accountOn(t, servers[0], "app") == nil {
		t.Fatal("deleting the conflicting MySQLUser dropped the account")
	}

	// Rotation through the Secret.
	putSecret(t, ns, "app-password", "second-Pa55")
	eventually(t, 30*time.Second, "password rotated", func(context.Context) (bool, error) {
		return logsIn(servers[0], "app", "second-Pa55") == nil, nil
	})
	if logsIn(servers[0], "app", "first-Pa55") == nil {
		t.Error("the old password still logs in")
	}
	if _, ok := event(t, ns, "app", reasons.PasswordRotated.Reason); !ok {
		t.Error("no PasswordRotated event")
	}

	// Revocation: INSERT leaves the list, a table grant with grant option joins it.
	ro := v1alpha1.Grant{Privileges: []string{"SELECT"}, Database: "app"}
	tbl := v1alpha1.Grant{Privileges: []string{"ALL"}, Database: "app", Table: "t", GrantOption: true}
	editUser(t, ns, "app", func(u *v1alpha1.MySQLUser) { u.Spec.Grants = []v1alpha1.Grant{ro, tbl}; u.Spec.MaxUserConnections = 0 })
	eventually(t, 30*time.Second, "grants converge", func(context.Context) (bool, error) {
		st := accountOn(t, servers[0], "app")
		return reflect.DeepEqual(st.Grants, grantsOf(t, ro, tbl)) && st.Options.MaxUserConnections == 0, nil
	})

	// Deletion: Delete drops the account; Retain keeps it; the default database policy keeps
	// the schema and its data, Delete drops it.
	keep := newUser(ns, "keep", "app-password", ro)
	keep.Spec.DeletionPolicy = v1alpha1.DeletionRetain
	if _, err := users.Create(ctx, keep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs.Create(ctx, &v1alpha1.MySQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "scratch", Namespace: ns},
		Spec:       v1alpha1.MySQLDatabaseSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}, DeletionPolicy: v1alpha1.DeletionDelete},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUserReady(t, ns, "keep", "True")
	eventually(t, 30*time.Second, "scratch database", func(ctx context.Context) (bool, error) {
		sc, err := servers[0].Admin().Schema(ctx, "scratch")
		return err == nil && sc != nil, nil
	})
	for _, del := range []func() error{
		func() error { return users.Delete(ctx, "app", metav1.DeleteOptions{}) },
		func() error { return users.Delete(ctx, "keep", metav1.DeleteOptions{}) },
		func() error { return dbs.Delete(ctx, "app", metav1.DeleteOptions{}) },
		func() error { return dbs.Delete(ctx, "scratch", metav1.DeleteOptions{}) },
	} {
		if err := del(); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"app", "keep"} {
		eventually(t, 30*time.Second, "user "+name+" deleted", func(ctx context.Context) (bool, error) {
			_, err := users.Get(ctx, name, metav1.GetOptions{})
			return gone(ctx, err)
		})
	}
	for _, name := range []string{"app", "scratch"} {
		eventually(t, 30*time.Second, "database "+name+" deleted", func(ctx context.Context) (bool, error) {
			_, err := dbs.Get(ctx, name, metav1.GetOptions{})
			return gone(ctx, err)
		})
	}
	if accountOn(t, servers[0], "app") != nil {
		t.Error("account app (deletionPolicy Delete) was not dropped")
	}
	if accountOn(t, servers[0], "keep") == nil {
		t.Error("account keep (deletionPolicy Retain) was dropped")
	}
	if sc, _ := servers[0].Admin().Schema(ctx, "app"); sc == nil {
		t.Error("database app (default deletionPolicy Retain) was dropped")
	}
	if sc, _ := servers[0].Admin().Schema(ctx, "scratch"); sc != nil {
		t.Error("database scratch (deletionPolicy Delete) was not dropped")
	}

	// With the cluster gone, a user's finalizer does not block its deletion.
	late := newUser(ns, "late", "app-password", ro)
	if _, err := users.Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUserReady(t, ns, "late", "True")
	if err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := users.Delete(ctx, "late", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "user deleted after its cluster", func(ctx context.Context) (bool, error) {
		_, err := users.Get(ctx, "late", metav1.GetOptions{})
		return gone(ctx, err)
	})
}

// Bad input at admission: the API refuses what the schema and CEL rules can judge.
func TestUserAndDatabaseValidation(t *testing.T) {
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	for name, mutate := range map[string]func(*v1alpha1.MySQLUser){
		"reserved user name": func(u *v1alpha1.MySQLUser) { u.Spec.User = "mysqlop" },
		"global ALL PRIVILEGES": func(u *v1alpha1.MySQLUser) {
			u.Spec.Grants[0].Database = "*"
			u.Spec.Grants[0].Privileges = []string{"all privileges"}
		},
		"global READ_ONLY ADMIN": func(u *v1alpha1.MySQLUser) {
			u.Spec.Grants[0].Database = "*"
			u.Spec.Grants[0].Privileges = []string{"READ_ONLY ADMIN"}
		},
		"global FILE": func(u *v1alpha1.MySQLUser) {
			u.Spec.Grants[0].Database = "*"
			u.Spec.Grants[0].Privileges = []string{"FILE"}
		},
		"global SHUTDOWN beside PROCESS": func(u *v1alpha1.MySQLUser) {
			u.Spec.Grants[0].Database = "*"
			u.Spec.Grants[0].Privileges = []string{"PROCESS", "shutdown"}
		},
		"global SELECT (reaches mysql.*)": func(u *v1alpha1.MySQLUser) { u.Spec.Grants[0].Database = "*" },
		"ALL on mysql": func(u *v1alpha1.MySQLUser) {
			u.Spec.Grants[0].Database = "MySQL"
			u.Spec.Grants[0].Privileges = []string{"ALL"}
		},
		"pattern %":           func(u *v1alpha1.MySQLUser) { u.Spec.Grants[0].Database = "%" },
		"SQL in a privilege":  func(u *v1alpha1.MySQLUser) { u.Spec.Grants[0].Privileges = []string{"SELECT ON *.* TO x;"} },
		"quote in a database": func(u *v1alpha1.MySQLUser) { u.Spec.Grants[0].Database = "a`b" },
		"unknown policy":      func(u *v1alpha1.MySQLUser) { u.Spec.DeletionPolicy = "Orphan" },
	} {
		u := newUser(ns, "u", "s", v1alpha1.Grant{Privileges: []string{"SELECT"}, Database: "app"})
		mutate(u)
		if _, err := mysql.MysqlopV1alpha1().MySQLUsers(ns).Create(ctx, u, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("%s: created or wrong error: %v", name, err)
		}
	}
	u, err := mysql.MysqlopV1alpha1().MySQLUsers(ns).Create(ctx, newUser(ns, "u", "s"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Spec.Host = "10.%"
	if _, err := mysql.MysqlopV1alpha1().MySQLUsers(ns).Update(ctx, u, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "host is immutable") {
		t.Errorf("host change: %v", err)
	}
	// A pattern that matches mysql but is not all wildcards passes admission; the controller
	// refuses it with a condition naming the schema, and grants nothing.
	startOperator(t, ns)
	if _, err := mysql.MysqlopV1alpha1().MySQLUsers(ns).Create(ctx, newUser(ns, "m", "s", v1alpha1.Grant{Privileges: []string{"SELECT"}, Database: "m%"}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("m%%: %v", err)
	}
	eventually(t, 30*time.Second, "m% refused by the controller", func(ctx context.Context) (bool, error) {
		got, err := mysql.MysqlopV1alpha1().MySQLUsers(ns).Get(ctx, "m", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "InvalidSpec" && strings.Contains(c.Message, "system schema mysql"), nil
	})
	d := &v1alpha1.MySQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: "mysql", Namespace: ns}, Spec: v1alpha1.MySQLDatabaseSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}, Name: "MySQL"}}
	if _, err := mysql.MysqlopV1alpha1().MySQLDatabases(ns).Create(ctx, d, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "system schemas") {
		t.Errorf("system schema: %v", err)
	}
}

// Two operators with disjoint --target-selector in one namespace each handle only the
// custom resources their selector matches; one matching neither is left alone.
func TestTargetSelectorsSplitTheWork(t *testing.T) {
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	for _, team := range []string{"a", "b"} {
		startOperator(t, ns, func(o *options.Options) {
			o.TargetSelector = "team=" + team
			o.OperatorVersion = "v0.0.1-team-" + team
		})
	}
	for _, team := range []string{"a", "b", "c"} {
		c := newCluster(ns, "db-"+team, 1, "10.11.6")
		c.Labels = map[string]string{"team": team}
		createCluster(t, c)
		u := newUser(ns, "u-"+team, "none")
		u.Labels = map[string]string{"team": team}
		u.Spec.ClusterRef.Name = "db-" + team
		if _, err := mysql.MysqlopV1alpha1().MySQLUsers(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, team := range []string{"a", "b"} {
		eventually(t, 30*time.Second, "cluster of team "+team+" handled by its operator", func(context.Context) (bool, error) {
			return getCluster(t, ns, "db-"+team).Status.OperatorVersion == "v0.0.1-team-"+team, nil
		})
		waitUserReady(t, ns, "u-"+team, v1alpha1.ReasonSecretNotFound)
	}
	// Both operators have had time to act on everything they see.
	time.Sleep(2 * time.Second)
	for _, team := range []string{"a", "b"} {
		if v := getCluster(t, ns, "db-"+team).Status.OperatorVersion; v != "v0.0.1-team-"+team {
			t.Errorf("cluster db-%s handled by %s", team, v)
		}
	}
	if c := getCluster(t, ns, "db-c"); c.Status.OperatorVersion != "" || c.Status.ObservedGeneration != 0 {
		t.Errorf("cluster db-c matches no selector but has status %+v", c.Status)
	}
	if r := userReady(t, ns, "u-c"); r != "stale" {
		t.Errorf("user u-c matches no selector but has Ready %q", r)
	}
	if _, err := cp.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db-c", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet of db-c: %v", err)
	}
}

// An operator watching two of three namespaces handles clusters and users in those two and
// leaves the third alone.
func TestOperatorWatchesAListOfNamespaces(t *testing.T) {
	nss := []string{cp.NewNamespace(t), cp.NewNamespace(t), cp.NewNamespace(t)}
	ctx := context.Background()
	startOperator(t, nss[0], func(o *options.Options) { o.Namespaces = nss[:2] })
	for _, ns := range nss {
		createCluster(t, newCluster(ns, "db", 1, "10.11.6"))
		if _, err := mysql.MysqlopV1alpha1().MySQLUsers(ns).Create(ctx, newUser(ns, "u", "none"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range nss[:2] {
		eventually(t, 30*time.Second, "StatefulSet in "+ns, func(ctx context.Context) (bool, error) {
			_, err := cp.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
			return err == nil, nil
		})
		waitUserReady(t, ns, "u", v1alpha1.ReasonSecretNotFound)
	}
	time.Sleep(2 * time.Second)
	if _, err := cp.Kube.AppsV1().StatefulSets(nss[2]).Get(ctx, "db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("StatefulSet in the unwatched namespace: %v", err)
	}
	if r := userReady(t, nss[2], "u"); r != "stale" {
		t.Errorf("user in the unwatched namespace has Ready %q", r)
	}
	// A Secret that appears turns the waiting users into a cluster wait: only Secrets users
	// reference are watched, and their changes reach the users through the index.
	putSecret(t, nss[0], "none", "x-Pa55")
	waitUserReady(t, nss[0], "u", v1alpha1.ReasonClusterNotReady)
}

// An account or a schema someone else made is left alone: a MySQLUser or MySQLDatabase naming
// it is refused (password, grants and data untouched), and deleting it under deletionPolicy
// Delete keeps it. With spec.adoptExisting the MySQLUser takes the account over; an adopted
// schema is still never dropped. Two MySQLDatabases for one schema: the younger is refused.
func TestExistingAccountsAndSchemasAreAdoptedOnlyWhenAsked(t *testing.T) {
	ns, servers := clusterOnServers(t, 1)
	ctx := context.Background()
	waitRoles(t, ns, "db-0")
	users := mysql.MysqlopV1alpha1().MySQLUsers(ns)
	admin := servers[0].Admin()
	f := mysqlsql.MariaDB
	dba := mysqlsql.Account{User: "dba", Host: "%"}
	if err := admin.Exec(ctx, f.CreateAccount(dba, "dba-Own-Pa55", mysqlsql.AccountOptions{}),
		mysqlsql.Statement{Query: "GRANT PROCESS ON *.* TO 'dba'@'%'"}); err != nil {
		t.Fatal(err)
	}
	putSecret(t, ns, "dba-password", "taken-Over-Pa55")
	if _, err := users.Create(ctx, newUser(ns, "dba", "dba-password", v1alpha1.Grant{Privileges: []string{"SELECT"}, Database: "app"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUserReady(t, ns, "dba", "AccountExists")
	if err := logsIn(servers[0], "dba", "dba-Own-Pa55"); err != nil {
		t.Errorf("the existing account's password changed: %v", err)
	}
	if got, want := accountOn(t, servers[0], "dba").Grants, grantsOf(t, v1alpha1.Grant{Privileges: []string{"PROCESS"}, Database: "*"}); !reflect.DeepEqual(got, want) {
		t.Errorf("the existing account's grants changed: %+v", got)
	}
	if err := users.Delete(ctx, "dba", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "refused user deleted", func(ctx context.Context) (bool, error) {
		_, err := users.Get(ctx, "dba", metav1.GetOptions{})
		return gone(ctx, err)
	})
	if accountOn(t, servers[0], "dba") == nil {
		t.Fatal("deleting a MySQLUser dropped an account it did not create")
	}

	// Adopting keeps grants the spec cannot express, so an account holding one (a role here)
	// is not adopted until it is revoked.
	if err := admin.ExecSQL(ctx, "CREATE ROLE dba_role", "GRANT dba_role TO 'dba'@'%'"); err != nil {
		t.Fatal(err)
	}
	u := newUser(ns, "dba", "dba-password", v1alpha1.Grant{Privileges: []string{"SELECT"}, Database: "app"})
	u.Spec.AdoptExisting = true
	if _, err := users.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "adoption refused while the account holds a role", func(ctx context.Context) (bool, error) {
		got, err := users.Get(ctx, "dba", metav1.GetOptions{})
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		return err == nil && c != nil && c.Reason == "AccountExists" && strings.Contains(c.Message, "role"), nil
	})
	if err := logsIn(servers[0], "dba", "dba-Own-Pa55"); err != nil {
		t.Errorf("a refused adoption changed the password: %v", err)
	}
	if err := admin.ExecSQL(ctx, "REVOKE dba_role FROM 'dba'@'%'"); err != nil {
		t.Fatal(err)
	}
	editUser(t, ns, "dba", func(u *v1alpha1.MySQLUser) { u.Spec.MaxUserConnections = 9 }) // a reconcile now
	waitUserReady(t, ns, "dba", "True")
	if err := logsIn(servers[0], "dba", "taken-Over-Pa55"); err != nil {
		t.Errorf("adopted account with the Secret's password: %v", err)
	}
	if got, want := accountOn(t, servers[0], "dba").Grants, grantsOf(t, v1alpha1.Grant{Privileges: []string{"SELECT"}, Database: "app"}); !reflect.DeepEqual(got, want) {
		t.Errorf("adopted account's grants %+v, want %+v", got, want)
	}
	if got, _ := users.Get(ctx, "dba", metav1.GetOptions{}); got.Status.Account != "'dba'@'%'" {
		t.Errorf("status.account = %q", got.Status.Account)
	}

	// A schema someone else made: refused, never dropped (even adopted, even under Delete);
	// a second MySQLDatabase naming a schema another manages is a conflict.
	dbs := mysql.MysqlopV1alpha1().MySQLDatabases(ns)
	if err := admin.ExecSQL(ctx, "CREATE DATABASE theirs", "CREATE TABLE theirs.t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	newDB := func(name, schema string, adopt bool) *v1alpha1.MySQLDatabase {
		return &v1alpha1.MySQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.MySQLDatabaseSpec{
			ClusterRef: v1alpha1.ClusterReference{Name: "db"}, Name: schema, DeletionPolicy: v1alpha1.DeletionDelete, AdoptExisting: adopt}}
	}
	dbReady := func(name, want string) {
		t.Helper()
		eventually(t, 30*time.Second, "database "+name+" Ready="+want, func(ctx context.Context) (bool, error) {
			d, err := dbs.Get(ctx, name, metav1.GetOptions{})
			return err == nil && d.Status.ObservedGeneration == d.Generation && readyReason(d.Status.Conditions) == want, nil
		})
	}
	schemaThere := func(name string) bool {
		t.Helper()
		sc, err := admin.Schema(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return sc != nil
	}
	deleteDB := func(name string) {
		t.Helper()
		if err := dbs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "database "+name+" deleted", func(ctx context.Context) (bool, error) {
			_, err := dbs.Get(ctx, name, metav1.GetOptions{})
			return gone(ctx, err)
		})
	}
	for _, adopt := range []bool{false, true} {
		if _, err := dbs.Create(ctx, newDB("theirs", "theirs", adopt), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if adopt {
			dbReady("theirs", "True")
		} else {
			dbReady("theirs", "SchemaExists")
		}
		deleteDB("theirs")
		if !schemaThere("theirs") {
			t.Fatalf("deleting a MySQLDatabase (adoptExisting %v, deletionPolicy Delete) dropped a schema it did not create", adopt)
		}
	}
	if _, err := dbs.Create(ctx, newDB("ours", "ours", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dbReady("ours", "True")
	// Created later (or in the same second and after it by name): "ours" stays the owner.
	if _, err := dbs.Create(ctx, newDB("ours-too", "ours", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dbReady("ours-too", "Conflict")
	deleteDB("ours-too")
	if !schemaThere("ours") {
		t.Fatal("a MySQLDatabase in conflict dropped the schema another manages")
	}
	deleteDB("ours")
	if schemaThere("ours") {
		t.Error("deletionPolicy Delete kept the schema the MySQLDatabase created")
	}
}
