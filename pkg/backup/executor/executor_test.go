package executor_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/backup/executor"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/toolbox"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

func seed(t *testing.T, s *mariadb.Server) string {
	t.Helper()
	ctx := context.Background()
	in := s.Admin()
	if err := in.ExecSQL(ctx, mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE shop",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, note VARCHAR(64))",
		"INSERT INTO shop.orders VALUES (1, 'first'), (2, 'second # with \\' quote')"); err != nil {
		t.Fatal(err)
	}
	var pos string
	if err := in.DB.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return pos
}

func request(s *mariadb.Server, method string, t *testing.T) executor.Request {
	return executor.Request{Flavor: mysql.MariaDB, Method: method, Socket: s.Socket, DataDir: filepath.Join(s.Dir, "data"),
		User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir()}
}

func run(t *testing.T, req executor.Request) (executor.Result, []byte) {
	t.Helper()
	var compressed bytes.Buffer
	res, err := executor.Run(context.Background(), req, func(r io.Reader) error { _, err := io.Copy(&compressed, r); return err })
	if err != nil {
		t.Fatal(err)
	}
	if res.Size != int64(compressed.Len()) || len(res.SHA256) != 64 {
		t.Fatalf("result %+v for %d compressed bytes", res, compressed.Len())
	}
	d, err := executor.Decompress(&compressed)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	raw, err := io.ReadAll(d)
	if err != nil {
		t.Fatal(err)
	}
	return res, raw
}

// A logical backup is consistent at a GTID position and restores into another server.
func TestLogicalBackupRestoresOnMariaDB(t *testing.T) {
	servers := mariadb.Start(t, 2, mariadb.Options{})
	pos := seed(t, servers[0])
	res, dump := run(t, request(servers[0], executor.Logical, t))
	if res.GTID != pos {
		t.Errorf("GTID %q, want the server's %q; dump ends:\n%s", res.GTID, pos, dump[max(0, len(dump)-1500):])
	}
	if bytes.Contains(dump, []byte(mariadb.AdminPassword)) {
		t.Error("the dump holds the server password")
	}
	// Restore into the second server with the client, and read the rows back.
	cmd := exec.Command("mariadb", "--no-defaults", "--socket="+servers[1].Socket, "--user=root")
	cmd.Stdin = bytes.NewReader(dump)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	var note string
	if err := servers[1].Admin().DB.QueryRow("SELECT note FROM shop.orders WHERE id = 2").Scan(&note); err != nil || note != "second # with ' quote" {
		t.Fatalf("restored row: %q %v", note, err)
	}
}

// A physical backup is extracted and prepared by Extract and Prepare, records the GTID
// position and server version it was taken at, and a server started on the prepared
// directory has the same table checksum. Every tool runs through a toolbox server, as in a
// pod.
func TestPhysicalBackupRoundTripOnMariaDB(t *testing.T) {
	s := mariadb.Start(t, 1, mariadb.Options{})[0]
	pos := seed(t, s)
	want := tableChecksum(t, s)
	ctx := context.Background()
	tools := mariadb.Toolbox(t)
	req := request(s, executor.Physical, t)
	req.Tools = tools
	var compressed bytes.Buffer
	res, err := executor.Run(ctx, req, func(r io.Reader) error { _, err := io.Copy(&compressed, r); return err })
	if err != nil || res.GTID != pos {
		t.Fatalf("physical backup: GTID %q (want the server's %q), %v", res.GTID, pos, err)
	}
	n := int64(compressed.Len())
	dir := t.TempDir()
	got, err := executor.Extract(ctx, tools, mysql.MariaDB, &compressed, dir)
	if err != nil || got.Size != n {
		t.Fatalf("Extract = %+v, %v (want %d bytes read)", got, err, n)
	}
	if _, err := executor.Prepare(ctx, tools, mysql.MariaDB, dir, 64); err != nil {
		t.Fatal(err)
	}
	info, err := executor.ReadBackupInfo(dir)
	var version string
	_ = s.Admin().DB.QueryRow("SELECT VERSION()").Scan(&version)
	if err != nil || info.GTID != pos || !executor.SameSeries(info.ServerVersion, version) {
		t.Fatalf("backup info %+v, %v; want GTID %s and the series of %s", info, err, pos, version)
	}
	if _, err := os.Stat(filepath.Join(dir, "shop", "orders.ibd")); err != nil {
		t.Fatalf("prepared backup lacks the table: %v", err)
	}
	restored := mariadb.Start(t, 1, mariadb.Options{DataDir: dir})[0]
	if got := tableChecksum(t, restored); got != want {
		t.Fatalf("checksum after the physical round trip %d, before %d", got, want)
	}

	// A stream that is not an xbstream fails extraction with the tool's reason.
	var junk bytes.Buffer
	if _, err := executor.Run(ctx, request(s, executor.Logical, t), func(r io.Reader) error { _, err := io.Copy(&junk, r); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := executor.Extract(ctx, tools, mysql.MariaDB, &junk, t.TempDir()); err == nil || !strings.Contains(err.Error(), "mbstream") {
		t.Errorf("extracting a logical dump: %v", err)
	}
}

func TestReadBackupInfo(t *testing.T) {
	for _, tc := range []struct{ name, binlog, info, gtid, version string }{
		{"mariadb", "binlog.000001\t1149\t0-100-5\n", "tool_name = mariadb-backup\nserver_version = 10.11.19-MariaDB-0+deb12u1-log\n", "0-100-5", "10.11.19-MariaDB-0+deb12u1-log"},
		{"mariadb domains", "binlog.000003\t77\t0-100-5,1-101-9\n", "server_version = 11.4.2-MariaDB\n", "0-100-5,1-101-9", "11.4.2-MariaDB"},
		{"mysql set over lines", "binlog.000003\t1234\t3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5,\n4D22FB58-71CA-11E1-9E33-C80AA9429562:1-3\n", "server_version = 8.4.3\n",
			"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5,4D22FB58-71CA-11E1-9E33-C80AA9429562:1-3", "8.4.3"},
		{"no gtid", "binlog.000001\t4\n", "server_version = 8.0.36\n", "", "8.0.36"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_ = os.WriteFile(filepath.Join(dir, "xtrabackup_binlog_info"), []byte(tc.binlog), 0o600)
			_ = os.WriteFile(filepath.Join(dir, "xtrabackup_info"), []byte(tc.info), 0o600)
			info, err := executor.ReadBackupInfo(dir)
			if err != nil || info.GTID != tc.gtid || info.ServerVersion != tc.version {
				t.Fatalf("ReadBackupInfo = %+v, %v", info, err)
			}
		})
	}
	if _, err := executor.ReadBackupInfo(t.TempDir()); err == nil {
		t.Error("a directory that is no backup has info")
	}
}

func TestSameSeries(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"10.11.19-MariaDB-0+deb12u1-log", "10.11.6-MariaDB", true},
		{"10.11.6-MariaDB", "11.4.2-MariaDB", false},
		{"10.6.1", "10.11.1", false},
		{"8.4.3", "8.4.0", true},
		{"8.0.36", "8.4.3", false},
		{"", "8.4.3", false},
	} {
		if got := executor.SameSeries(tc.a, tc.b); got != tc.want {
			t.Errorf("SameSeries(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

func tableChecksum(t *testing.T, s *mariadb.Server) int64 {
	t.Helper()
	var name string
	var sum int64
	if err := s.Admin().DB.QueryRow("CHECKSUM TABLE shop.orders").Scan(&name, &sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

// A failing tool is an error that names the tool and never the password, whether it ran here
// or in a toolbox.
func TestFailedBackupSaysWhy(t *testing.T) {
	s := mariadb.Start(t, 1, mariadb.Options{})[0]
	for name, tools := range map[string]toolbox.Runner{"local": nil, "toolbox": mariadb.Toolbox(t)} {
		req := request(s, executor.Logical, t)
		req.Password = "wrong-Pa55-secret"
		req.Tools = tools
		_, err := executor.Run(context.Background(), req, func(r io.Reader) error { _, err := io.Copy(io.Discard, r); return err })
		if err == nil || !strings.Contains(err.Error(), "mariadb-dump failed") || !strings.Contains(err.Error(), "Access denied") ||
			strings.Contains(err.Error(), "wrong-Pa55-secret") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

// Restore loads a compressed logical backup through the client (run in a toolbox); the mysql
// schema is not in the dump, so the target keeps its own accounts.
func TestRestoreOnMariaDB(t *testing.T) {
	servers := mariadb.Start(t, 2, mariadb.Options{})
	seed(t, servers[0])
	ctx := context.Background()
	if err := servers[0].Admin().ExecSQL(ctx, "CREATE USER 'only-on-source'@'%'"); err != nil {
		t.Fatal(err)
	}
	var compressed bytes.Buffer
	if _, err := executor.Run(ctx, request(servers[0], executor.Logical, t), func(r io.Reader) error { _, err := io.Copy(&compressed, r); return err }); err != nil {
		t.Fatal(err)
	}
	n := int64(compressed.Len())
	req := request(servers[1], executor.Logical, t)
	req.Tools = mariadb.Toolbox(t)
	got, err := executor.Restore(ctx, req, &compressed)
	if err != nil || got.Size != n || got.ToolMaxRSS == 0 {
		t.Fatalf("Restore = %+v, %v (want %d bytes read)", got, err, n)
	}
	if got, want := tableChecksum(t, servers[1]), tableChecksum(t, servers[0]); got != want {
		t.Fatalf("checksum after the logical round trip %d, before %d", got, want)
	}
	if st, err := servers[1].Admin().Account(ctx, mysql.Account{User: "only-on-source", Host: "%"}); err != nil || st != nil {
		t.Fatalf("the source's accounts came along: %+v %v", st, err)
	}
	if _, err := executor.Restore(ctx, request(servers[1], executor.Physical, t), strings.NewReader("")); err == nil {
		t.Error("a physical restore was attempted")
	}
}
