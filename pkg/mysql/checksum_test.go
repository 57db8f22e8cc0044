package mysql_test

import (
	"context"
	"slices"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

func TestCompareChecksums(t *testing.T) {
	sums := func(kv ...string) []mysql.TableChecksum {
		var out []mysql.TableChecksum
		for i := 0; i < len(kv); i += 2 {
			out = append(out, mysql.TableChecksum{Table: kv[i], Checksum: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		a, b       []mysql.TableChecksum
		tables     int
		wantDiffer []string
	}{
		{"both empty", nil, nil, 0, nil},
		{"equal", sums("app.a", "1", "app.b", "2"), sums("app.b", "2", "app.a", "1"), 2, nil},
		{"one differs", sums("app.a", "1", "app.b", "2"), sums("app.a", "1", "app.b", "3"), 2, []string{"app.b"}},
		{"only on one side", sums("app.a", "1", "app.z", "0"), sums("app.a", "1", "app.c", "0"), 3, []string{"app.c", "app.z"}},
		{"one side empty", sums("app.a", "1"), nil, 1, []string{"app.a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tables, differ := mysql.CompareChecksums(tc.a, tc.b)
			if tables != tc.tables || !slices.Equal(differ, tc.wantDiffer) {
				t.Fatalf("CompareChecksums = %d, %v; want %d, %v", tables, differ, tc.tables, tc.wantDiffer)
			}
		})
	}
}

// Two real servers given the same rows by different statements in a different order agree;
// one changed row, or an extra table, is found; the server's own schemas are left out.
func TestChecksumsOnMariaDB(t *testing.T) {
	servers := mariadb.Start(t, 2, mariadb.Options{})
	ctx := context.Background()
	a, b := servers[0].Admin(), servers[1].Admin()
	for _, in := range []*mysql.Instance{a, b} {
		if err := in.ExecSQL(ctx, "SET GLOBAL read_only = OFF", "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20), d DATETIME(6))",
			"CREATE TABLE `app`.`odd``name` (k INT)", "CREATE VIEW app.v AS SELECT id FROM app.t"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.ExecSQL(ctx, "INSERT INTO app.t VALUES (1, 'one', '2026-12-05 01:02:03.5'), (2, 'two', NULL), (3, 'three', NOW())",
		"UPDATE app.t SET d = '2026-12-05 04:05:06' WHERE id = 3", "INSERT INTO `app`.`odd``name` VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	if err := b.ExecSQL(ctx, "INSERT INTO `app`.`odd``name` VALUES (7)", "INSERT INTO app.t VALUES (3, 'three', '2026-12-05 04:05:06')",
		"INSERT INTO app.t VALUES (2, 'two', NULL)", "INSERT INTO app.t VALUES (1, 'one', '2026-12-05 01:02:03.5')",
		"CREATE USER only_here IDENTIFIED BY 'x'"); err != nil {
		t.Fatal(err)
	}
	sums := func(in *mysql.Instance) []mysql.TableChecksum {
		t.Helper()
		s, err := in.Checksums(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sa := sums(a)
	if len(sa) != 2 || sa[0].Table != "app.odd`name" || sa[1].Table != "app.t" || sa[1].Checksum == "" || sa[1].Checksum == "0" {
		t.Fatalf("checksums %+v: want the two base tables of app, sorted, with checksums", sa)
	}
	if n, differ := mysql.CompareChecksums(sa, sums(b)); n != 2 || differ != nil {
		t.Fatalf("same rows: %d tables, differing %v", n, differ)
	}
	if err := b.ExecSQL(ctx, "UPDATE app.t SET v = 'Two' WHERE id = 2", "CREATE TABLE app.extra (x INT)"); err != nil {
		t.Fatal(err)
	}
	if n, differ := mysql.CompareChecksums(sa, sums(b)); n != 3 || !slices.Equal(differ, []string{"app.extra", "app.t"}) {
		t.Fatalf("one row changed, one table added: %d tables, differing %v", n, differ)
	}
}
