package mysql

import (
	"reflect"
	"strings"
	"testing"
)

func grants(t *testing.T, specs ...any) Grants {
	t.Helper()
	g := Grants{}
	for i := 0; i < len(specs); i += 3 {
		if err := g.Add(specs[i].(Scope), specs[i+1].([]string), specs[i+2].(bool)); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

var (
	app    = Scope{Database: "app", Table: "*"}
	global = Scope{Database: "*", Table: "*"}
	orders = Scope{Database: "app", Table: "orders"}
)

func TestParseShowGrants(t *testing.T) {
	got, err := ParseShowGrants([]string{
		"GRANT USAGE ON *.* TO `u`@`%` IDENTIFIED BY PASSWORD '*94BDCEBE19083CE2A1F959FD02F964C7AF4CFC29' WITH MAX_USER_CONNECTIONS 5",
		"GRANT SELECT, INSERT ON `app`.* TO `u`@`%` WITH GRANT OPTION",
		"GRANT ALL PRIVILEGES ON `app`.`orders` TO `u`@`%`",
		"GRANT PROCESS,REPLICATION CLIENT ON *.* TO `u`@`%`",
		"GRANT SELECT (`id`) ON `app`.`t` TO `u`@`%`",
		"GRANT EXECUTE ON PROCEDURE `app`.`p` TO `u`@`%`",
		"GRANT `role1` TO `u`@`%`",
		"GRANT SELECT ON `we``ird`.* TO `u`@`%`",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Grants{
		global:                           {Privileges: []string{"PROCESS", "REPLICATION CLIENT"}},
		app:                              {Privileges: []string{"INSERT", "SELECT"}, GrantOption: true},
		orders:                           {Privileges: []string{AllPrivileges}},
		{Database: "we`ird", Table: "*"}: {Privileges: []string{"SELECT"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := ParseShowGrants([]string{"GRANT SELECT ON `app TO x"}); err == nil {
		t.Error("want an error for an unterminated identifier")
	}
}

func TestUnmanagedGrantsNamesWhatParseShowGrantsSkips(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"GRANT SELECT ON `app`.* TO `u`@`%`", nil},
		{"GRANT `role1` TO `u`@`%`", []string{"role"}},
		{"GRANT PROXY ON ''@'%' TO 'u'@'%'", []string{"proxy"}},
		{"GRANT EXECUTE ON PROCEDURE `app`.`p` TO `u`@`%`", []string{"routine"}},
		{"GRANT SELECT (`id`) ON `app`.`t` TO `u`@`%`", []string{"column"}},
	} {
		if got := UnmanagedGrants([]string{"GRANT USAGE ON *.* TO `u`@`%`", tc.line}); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.line, got, tc.want)
		}
	}
}

func TestGrantsAddRejectsInjection(t *testing.T) {
	for _, bad := range [][]string{{"SELECT ON *.* TO x; DROP"}, {"SELECT; DROP TABLE x"}, {"ALL PRIVILEGES", "1"}} {
		if err := (Grants{}).Add(app, bad, false); err == nil {
			t.Errorf("privileges %q: want an error", bad)
		}
	}
}

// Privileges are normalised and identifiers quoted, since neither can be an argument.
func TestGrantStatementQuotes(t *testing.T) {
	g := Grants{}
	if err := g.Add(Scope{Database: "app`db", Table: "*"}, []string{"select", "insert", "show  view"}, true); err != nil {
		t.Fatal(err)
	}
	s := DiffGrants(Account{User: "u", Host: "%"}, Grants{}, g)
	if len(s) != 1 || s[0].Query != "GRANT INSERT, SELECT, SHOW VIEW ON `app``db`.* TO ?@? WITH GRANT OPTION" {
		t.Errorf("statements %+v", s)
	}
}

func TestDiffGrants(t *testing.T) {
	a := Account{User: "u", Host: "%"}
	for _, tc := range []struct {
		name             string
		current, desired Grants
		want             []string
	}{
		{"equal", grants(t, app, []string{"SELECT"}, false), grants(t, app, []string{"select"}, false), nil},
		{"new account", Grants{}, grants(t, app, []string{"SELECT", "INSERT"}, false),
			[]string{"GRANT INSERT, SELECT ON `app`.* TO ?@?"}},
		{"add and remove", grants(t, app, []string{"SELECT", "DELETE"}, false), grants(t, app, []string{"SELECT", "INSERT"}, false),
			[]string{"REVOKE DELETE ON `app`.* FROM ?@?", "GRANT INSERT ON `app`.* TO ?@?"}},
		{"scope dropped", grants(t, app, []string{"SELECT"}, true, orders, []string{"SELECT"}, false), grants(t, orders, []string{"SELECT"}, false),
			[]string{"REVOKE SELECT ON `app`.* FROM ?@?", "REVOKE GRANT OPTION ON `app`.* FROM ?@?"}},
		{"ALL to a subset", grants(t, app, []string{"ALL"}, false), grants(t, app, []string{"SELECT"}, false),
			[]string{"REVOKE ALL PRIVILEGES ON `app`.* FROM ?@?", "GRANT SELECT ON `app`.* TO ?@?"}},
		{"subset to ALL", grants(t, app, []string{"SELECT"}, false), grants(t, app, []string{"ALL PRIVILEGES", "SELECT"}, false),
			[]string{"GRANT ALL PRIVILEGES ON `app`.* TO ?@?"}},
		{"grant option only", grants(t, app, []string{"SELECT"}, false), grants(t, app, []string{"SELECT"}, true),
			[]string{"GRANT USAGE ON `app`.* TO ?@? WITH GRANT OPTION"}},
		{"global", Grants{}, grants(t, global, []string{"process"}, false),
			[]string{"GRANT PROCESS ON *.* TO ?@?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range DiffGrants(a, tc.current, tc.desired) {
				got = append(got, s.Query)
				if !reflect.DeepEqual(s.Args, []any{"u", "%"}) {
					t.Errorf("%s: args %v", s.Query, s.Args)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestPasswordStatementsKeepThePasswordOutOfTheText(t *testing.T) {
	a := Account{User: "u", Host: "%"}
	for _, s := range []Statement{
		MariaDB.CreateAccount(a, "s3cret", AccountOptions{}), MariaDB.SetPassword(a, "s3cret"),
		MySQL.CreateAccount(a, "s3cret", AccountOptions{}), MySQL.SetPassword(a, "s3cret"),
	} {
		if strings.Contains(s.Query, "s3cret") || !s.Sensitive {
			t.Errorf("%q: password in the text or not marked sensitive", s.Query)
		}
	}
	// MariaDB gets the hash, never the password, so that binlogs do not carry it.
	if got := MariaDB.SetPassword(a, "s3cret").Args[2]; got != NativePasswordHash("s3cret") {
		t.Errorf("MariaDB password argument %v", got)
	}
	// The well-known hash of "password".
	if h := NativePasswordHash("password"); h != "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19" {
		t.Errorf("NativePasswordHash = %s", h)
	}
}

func TestSchemaStatements(t *testing.T) {
	s, err := CreateSchema("shop", Schema{CharacterSet: "utf8mb4", Collation: "utf8mb4_bin"})
	if err != nil || s.Query != "CREATE DATABASE IF NOT EXISTS `shop` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin" {
		t.Errorf("%q %v", s.Query, err)
	}
	if _, err := CreateSchema("shop", Schema{CharacterSet: "utf8; DROP"}); err == nil {
		t.Error("a character set with SQL in it was accepted")
	}
	if s := DropSchema("a`b"); s.Query != "DROP DATABASE IF EXISTS `a``b`" {
		t.Errorf("%q", s.Query)
	}
}
