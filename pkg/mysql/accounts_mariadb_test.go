package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	driver "github.com/go-sql-driver/mysql"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

// Accounts end to end on a real server: create with options, log in, converge grants both
// ways, rotate the password, drop; and a server error on a password statement names no secret.
func TestAccountsOnMariaDB(t *testing.T) {
	s := mariadb.Start(t, 1, mariadb.Options{})[0]
	ctx := context.Background()
	admin := s.Admin()
	f := mysql.MariaDB
	if err := admin.ExecSQL(ctx, f.SetReadOnly(false), "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if w, err := admin.Writable(ctx); err != nil || !w {
		t.Fatalf("Writable = %v, %v", w, err)
	}
	a := mysql.Account{User: "app", Host: "%"}
	if st, err := admin.Account(ctx, a); err != nil || st != nil {
		t.Fatalf("absent account: %+v, %v", st, err)
	}
	if err := admin.Exec(ctx, f.CreateAccount(a, "first-Pa55", mysql.AccountOptions{MaxUserConnections: 7})); err != nil {
		t.Fatal(err)
	}
	desired := mysql.Grants{}
	app := mysql.Scope{Database: "app", Table: "*"}
	if err := desired.Add(app, []string{"SELECT", "INSERT"}, false); err != nil {
		t.Fatal(err)
	}
	converge := func() {
		t.Helper()
		st, err := admin.Account(ctx, a)
		if err != nil || st == nil {
			t.Fatalf("account: %+v, %v", st, err)
		}
		if err := admin.Exec(ctx, mysql.DiffGrants(a, st.Grants, desired)...); err != nil {
			t.Fatal(err)
		}
		st, err = admin.Account(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(st.Grants, desired) {
			t.Fatalf("after converging: grants %+v, want %+v", st.Grants, desired)
		}
		if left := mysql.DiffGrants(a, st.Grants, desired); len(left) != 0 {
			t.Fatalf("converged grants still differ: %v", left)
		}
	}
	converge()
	st, _ := admin.Account(ctx, a)
	if st.Options.MaxUserConnections != 7 || st.Options.RequireTLS {
		t.Errorf("options %+v", st.Options)
	}

	user := s.Conn("app", "first-Pa55")
	if _, err := user.ExecContext(ctx, "INSERT INTO app.t VALUES (1)"); err != nil {
		t.Fatalf("granted INSERT: %v", err)
	}
	if _, err := user.ExecContext(ctx, "DELETE FROM app.t"); err == nil {
		t.Fatal("DELETE was not granted but worked")
	}

	// Revoke INSERT, add DELETE and ALL on one table, grant option on the database.
	desired = mysql.Grants{}
	_ = desired.Add(app, []string{"SELECT", "DELETE"}, true)
	_ = desired.Add(mysql.Scope{Database: "app", Table: "t"}, []string{"ALL"}, false)
	converge()
	desired = mysql.Grants{}
	_ = desired.Add(app, []string{"SELECT"}, false)
	converge()

	if err := admin.Exec(ctx, f.SetPassword(a, "second-Pa55"), mysql.AlterAccountOptions(a, mysql.AccountOptions{RequireTLS: true})); err != nil {
		t.Fatal(err)
	}
	if st, _ := admin.Account(ctx, a); !st.Options.RequireTLS || st.Options.MaxUserConnections != 0 {
		t.Errorf("options after alter %+v", st.Options)
	}
	subject := mysql.AccountOptions{RequireSubject: "/CN=app/O=it's"}
	if err := admin.Exec(ctx, mysql.AlterAccountOptions(a, subject)); err != nil {
		t.Fatal(err)
	}
	if st, _ := admin.Account(ctx, a); st.Options != subject {
		t.Errorf("options after requiring a subject %+v, want %+v", st.Options, subject)
	}
	if err := admin.Exec(ctx, mysql.AlterAccountOptions(a, mysql.AccountOptions{})); err != nil {
		t.Fatal(err)
	}
	if err := s.Conn("app", "second-Pa55").PingContext(ctx); err != nil {
		t.Fatalf("login with the new password: %v", err)
	}
	if err := s.Conn("app", "first-Pa55").PingContext(ctx); err == nil {
		t.Fatal("the old password still logs in")
	}

	// A failing password statement: the server's error number stays, the secret does not.
	err := admin.Exec(ctx, f.CreateAccount(a, "third-Pa55", mysql.AccountOptions{}))
	var me *driver.MySQLError
	if !errors.As(err, &me) || me.Number != 1396 || strings.Contains(err.Error(), mysql.NativePasswordHash("third-Pa55")) {
		t.Fatalf("create of an existing account: %v", err)
	}

	if err := admin.Exec(ctx, mysql.DropAccount(a), mysql.DropAccount(a)); err != nil {
		t.Fatal(err)
	}
	if st, err := admin.Account(ctx, a); err != nil || st != nil {
		t.Fatalf("dropped account: %+v, %v", st, err)
	}
}

func TestSchemasOnMariaDB(t *testing.T) {
	s := mariadb.Start(t, 1, mariadb.Options{})[0]
	ctx := context.Background()
	admin := s.Admin()
	if err := admin.ExecSQL(ctx, mysql.MariaDB.SetReadOnly(false)); err != nil {
		t.Fatal(err)
	}
	create, _ := mysql.CreateSchema("shop", mysql.Schema{CharacterSet: "latin1"})
	alter, _ := mysql.AlterSchema("shop", mysql.Schema{CharacterSet: "utf8mb4", Collation: "utf8mb4_bin"})
	if err := admin.Exec(ctx, create, create); err != nil {
		t.Fatal(err)
	}
	if sc, err := admin.Schema(ctx, "shop"); err != nil || sc == nil || sc.CharacterSet != "latin1" {
		t.Fatalf("created: %+v %v", sc, err)
	}
	if err := admin.Exec(ctx, alter); err != nil {
		t.Fatal(err)
	}
	if sc, err := admin.Schema(ctx, "shop"); err != nil || *sc != (mysql.Schema{CharacterSet: "utf8mb4", Collation: "utf8mb4_bin"}) {
		t.Fatalf("altered: %+v %v", sc, err)
	}
	if err := admin.Exec(ctx, mysql.DropSchema("shop"), mysql.DropSchema("shop")); err != nil {
		t.Fatal(err)
	}
	if sc, err := admin.Schema(ctx, "shop"); err != nil || sc != nil {
		t.Fatalf("dropped: %+v %v", sc, err)
	}
}

// The widest account a MySQLUser may get (every privilege admission accepts on *.*, ALL with
// GRANT OPTION on its own database, SELECT on performance_schema and sys), on a
// server with the operator's my.cnf, can write nothing once read_only is on, and reaches
// neither files, the accounts, the server's configuration nor other sessions. Fencing relies
// on the first; the rest are the ways such an account became superuser before.
func TestWidestMySQLUserCannotEscapeOnMariaDB(t *testing.T) {
	// Without TLS: these servers have no certificate (TestTLSOnMariaDB serves one).
	cnf := configmap.Render(testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Flavor = v1alpha1.FlavorMariaDB; c.Spec.TLS.Disabled = true }))
	s := mariadb.Start(t, 1, mariadb.Options{MyCnf: cnf})[0]
	ctx := context.Background()
	admin := s.Admin()
	f := mysql.MariaDB
	if err := admin.ExecSQL(ctx, f.SetReadOnly(false), "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	u := &v1alpha1.MySQLUser{Spec: v1alpha1.MySQLUserSpec{
		ClusterRef: v1alpha1.ClusterReference{Name: "db"}, PasswordSecretRef: v1alpha1.SecretKeyRef{Name: "pw"},
		Grants: []v1alpha1.Grant{
			{Database: "*", Privileges: v1alpha1.GlobalPrivileges},
			{Database: "app", Privileges: []string{"ALL PRIVILEGES"}, GrantOption: true},
			{Database: "performance_schema", Privileges: []string{"SELECT"}},
			{Database: "sys", Privileges: []string{"SELECT"}},
		},
	}}
	u.Name = "wide"
	v1alpha1.SetUserDefaults(u)
	if errs := v1alpha1.ValidateUser(u); len(errs) > 0 {
		t.Fatalf("the widest user is not valid: %v", errs)
	}
	a := mysql.Account{User: "wide", Host: "%"}
	want := mysql.Grants{}
	for _, g := range u.Spec.Grants {
		if err := want.Add(mysql.Scope{Database: g.Database, Table: g.Table}, g.Privileges, g.GrantOption); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Exec(ctx, append([]mysql.Statement{f.CreateAccount(a, "wide-Pa55", mysql.AccountOptions{})}, mysql.DiffGrants(a, mysql.Grants{}, want)...)...); err != nil {
		t.Fatal(err)
	}
	// The server reports it with every grant as desired (under its own names): nothing to
	// change at the next reconcile.
	if st, err := admin.Account(ctx, a); err != nil || st == nil {
		t.Fatalf("account: %v", err)
	} else if left := mysql.DiffGrants(a, st.Grants, f.ReportedGrants(want)); len(left) != 0 {
		t.Errorf("granted as desired, yet a reconcile would run %v", left)
	}
	wide := s.Conn("wide", "wide-Pa55")
	wide.SetMaxOpenConns(1)
	mustExec(t, wide, "INSERT INTO app.t VALUES (1)") // writable: it writes its own database
	if err := admin.ExecSQL(ctx, f.SetReadOnly(true)); err != nil {
		t.Fatal(err)
	}
	var adminID int64
	if err := s.Conn(mariadb.AdminUser, mariadb.AdminPassword).QueryRow("SELECT CONNECTION_ID()").Scan(&adminID); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"INSERT INTO app.t VALUES (2)",
		"CREATE TABLE app.u (id INT)",
		"SET GLOBAL read_only = OFF",
		"SELECT 1 INTO OUTFILE '/tmp/mysqlop-wide-test'",
		"SHUTDOWN",
		"CREATE USER intruder@'%' IDENTIFIED BY 'x-Pa55'",
		"GRANT SELECT ON app.* TO intruder@'%' IDENTIFIED BY 'x-Pa55'",
		"SELECT COUNT(*) FROM mysql.global_priv",
		"SET GLOBAL init_file = '/tmp/x.sql'",
		"FLUSH PRIVILEGES",
		"KILL " + strconv.FormatInt(adminID, 10),
		"UPDATE performance_schema.setup_instruments SET ENABLED = 'NO'",
	} {
		if _, err := wide.Exec(q); err == nil {
			t.Errorf("%s: succeeded for the widest MySQLUser", q)
		}
	}
	var n int
	if err := s.Conn(mariadb.AdminUser, mariadb.AdminPassword).QueryRow("SELECT COUNT(*) FROM app.t").Scan(&n); err != nil || n != 1 {
		t.Errorf("app.t has %d rows (%v), want the one written before read_only", n, err)
	}
	// Even an account with FILE (the operator's) writes only into the server's own tmpdir.
	adminDB := s.Conn(mariadb.AdminUser, mariadb.AdminPassword)
	if _, err := adminDB.Exec("SELECT 1 INTO OUTFILE '/var/tmp/mysqlop-secure-file-priv-test'"); err == nil || !strings.Contains(err.Error(), "1290") {
		t.Errorf("OUTFILE outside secure_file_priv as the admin: %v", err)
	}
	// LOAD_FILE without FILE reads nothing: NULL, not an error.
	var file sql.NullString
	if err := wide.QueryRow("SELECT LOAD_FILE(?)", s.MyCnf).Scan(&file); err != nil || file.Valid {
		t.Errorf("LOAD_FILE of my.cnf: %v (valid %v)", err, file.Valid)
	}
	// It reads what monitoring needs.
	var threads string
	if err := wide.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST").Scan(&threads); err != nil {
		t.Errorf("PROCESSLIST: %v", err)
	}
	if _, err := wide.Exec("SHOW BINARY LOGS"); err != nil {
		t.Errorf("SHOW BINARY LOGS: %v", err)
	}
}
