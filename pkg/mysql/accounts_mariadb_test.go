package mysql_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	driver "github.com/go-sql-driver/mysql"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
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
