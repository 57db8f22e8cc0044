package mysql_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

func status(t *testing.T, in *mysql.Instance) *mysql.Status {
	t.Helper()
	st, err := in.Status(context.Background())
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Replication, semi-sync, status, waiting and errant detection against real MariaDB servers
// (MySQL servers under make test-mysql).
func TestReplicationOnMariaDB(t *testing.T) {
	servers := mariadb.Start(t, 2, mariadb.Options{})
	ctx := context.Background()
	primary, replica := servers[0].Admin(), servers[1].Admin()
	f := mariadb.Flavor()

	st := status(t, primary)
	if !st.ReadOnly || st.Replica != nil || st.ServerID != uint32(servers[0].ServerID()) || strings.Contains(st.Version, "MariaDB") != (f == mysql.MariaDB) {
		t.Fatalf("fresh server status %+v", st)
	}

	// Bootstrap: semi-sync on, writable primary; replica follows with GTID and acknowledges.
	if err := primary.Exec(ctx, f.SemiSyncSource(true, 1), mysql.Statement{Query: f.SetReadOnly(false)}); err != nil {
		t.Fatal(err)
	}
	if err := replica.Exec(ctx,
		mysql.Statement{Query: f.SemiSyncReplica(true)},
		f.ChangeSource(mysql.Source{Host: "127.0.0.1", Port: servers[0].Port, User: mariadb.ReplUser, Password: mariadb.ReplPassword, ConnectRetry: 1}),
		mysql.Statement{Query: f.StartReplica()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "replica connected with semi-sync", func() bool {
		rs := status(t, replica).Replica
		return rs != nil && rs.IORunning && rs.SQLRunning && status(t, primary).SemiSyncSourceActive
	})

	app := servers[0].Conn(mariadb.AdminUser, mariadb.AdminPassword)
	mustExec(t, app, "CREATE DATABASE app")
	mustExec(t, app, "CREATE TABLE app.t (id INT PRIMARY KEY, v TEXT)")
	for i := range 20 {
		mustExec(t, app, "INSERT INTO app.t VALUES (?, 'x')", i)
	}
	pst := status(t, primary)
	if pst.ReadOnly || pst.Executed.IsEmpty() || !pst.SemiSyncSource || !pst.SemiSyncSourceActive {
		t.Fatalf("primary status %+v", pst)
	}
	if err := replica.WaitForGTID(ctx, pst.Executed, 10*time.Second); err != nil {
		t.Fatalf("wait for %s: %v", pst.Executed, err)
	}
	rst := status(t, replica)
	if !rst.Executed.Contains(pst.Executed) || !pst.Executed.Contains(rst.Executed) {
		t.Errorf("replica executed %s, primary %s", rst.Executed, pst.Executed)
	}
	if !rst.Replica.Retrieved.Contains(pst.Executed) || rst.Replica.SourcePort != servers[0].Port || !rst.SemiSyncReplica {
		t.Errorf("replica status %+v (retrieved %s)", rst.Replica, rst.Replica.Retrieved)
	}
	var n int
	if err := servers[1].Conn(mariadb.AdminUser, mariadb.AdminPassword).QueryRow("SELECT COUNT(*) FROM app.t").Scan(&n); err != nil || n != 20 {
		t.Errorf("replica has %d rows (%v)", n, err)
	}

	// Waiting for a position the replica will not reach times out cleanly.
	// A transaction of a source that never wrote one.
	ahead, _ := mysql.ParseGTIDSet(f, map[mysql.Flavor]string{mysql.MariaDB: "0-100-100000", mysql.MySQL: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1"}[f])
	if err := replica.WaitForGTID(ctx, ahead, 1*time.Second); !errors.Is(err, mysql.ErrWaitTimeout) {
		t.Errorf("wait for an unreachable position: %v", err)
	}

	// An errant transaction: written on the replica directly (on MariaDB in another domain;
	// on MySQL it carries the replica's own server UUID).
	if err := replica.Exec(ctx, mysql.Statement{Query: f.SetReadOnly(false)}); err != nil {
		t.Fatal(err)
	}
	rdb := servers[1].Conn(mariadb.AdminUser, mariadb.AdminPassword)
	rdb.SetMaxOpenConns(1) // the session variable must hold for the next statement
	if f == mysql.MariaDB {
		mustExec(t, rdb, "SET SESSION gtid_domain_id = 7")
	}
	mustExec(t, rdb, "CREATE DATABASE errant")
	errant := status(t, replica).Executed.Subtract(status(t, primary).Executed)
	if errant.IsEmpty() || f == mysql.MariaDB && !strings.HasPrefix(errant.String(), "7-") {
		t.Errorf("errant transactions %q, want the write on the replica", errant)
	}

	// Fencing: read-only again and client connections killed.
	if err := primary.Exec(ctx, mysql.Statement{Query: f.SetReadOnly(true)}); err != nil {
		t.Fatal(err)
	}
	client := servers[0].Conn(mariadb.AdminUser, mariadb.AdminPassword)
	client.SetMaxOpenConns(1)
	conn, err := client.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	killed, err := primary.KillClientConnections(ctx, "nobody")
	if err != nil || killed < 1 {
		t.Errorf("killed %d connections: %v", killed, err)
	}
	if _, err := conn.ExecContext(ctx, "SELECT 1"); err == nil {
		t.Error("a killed connection still answers")
	}
	if !status(t, primary).ReadOnly {
		t.Error("primary not read-only after fencing")
	}
}

func mustExec(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// Loss-less semi-sync on real servers: with no replica acknowledging, a commit does not return
// (the primary never silently falls back to async); once a replica connects and acknowledges,
// it returns, and the replica has it.
func TestSemiSyncAcknowledgementsOnMariaDB(t *testing.T) {
	servers := mariadb.Start(t, 2, mariadb.Options{})
	ctx := context.Background()
	primary, replica := servers[0].Admin(), servers[1].Admin()
	f := mariadb.Flavor()
	if err := primary.Exec(ctx, f.SemiSyncSource(true, 1), mysql.Statement{Query: f.SetReadOnly(false)}); err != nil {
		t.Fatal(err)
	}
	// A client that waits as long as it takes.
	app, err := mysql.Open(mysql.ConnConfig{Addr: servers[0].Addr(), User: mariadb.AdminUser, Password: mariadb.AdminPassword, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()

	done := make(chan error, 1)
	go func() {
		_, err := app.ExecContext(context.Background(), "CREATE DATABASE s")
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a commit returned without any replica acknowledging it (err %v): semi-sync fell back to async", err)
	case <-time.After(3 * time.Second):
	}
	if st := status(t, primary); !st.SemiSyncSource {
		t.Error("the primary switched semi-sync off while waiting")
	}

	// A replica connects and acknowledges: the commit returns.
	if err := replica.Exec(ctx,
		mysql.Statement{Query: f.SemiSyncReplica(true)},
		f.ChangeSource(mysql.Source{Host: "127.0.0.1", Port: servers[0].Port, User: mariadb.ReplUser, Password: mariadb.ReplPassword, ConnectRetry: 1}),
		mysql.Statement{Query: f.StartReplica()}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("commit after the acknowledgement: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the commit still waits after a replica connected")
	}
	var n int
	waitFor(t, "database on the replica", func() bool {
		err := servers[1].Conn(mariadb.AdminUser, mariadb.AdminPassword).QueryRow(
			"SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 's'").Scan(&n)
		return err == nil && n == 1
	})
}

// A fence does not end connections that are still logging in: they show no user yet, so the
// operator's own new connections are among them, and ending those ended the statement a fence
// was about to run (seen as "invalid connection" on busy cores). A logged-in client's
// connection is still ended.
func TestClientConnectionsLeaveLoginsAloneOnMariaDB(t *testing.T) {
	servers := mariadb.Start(t, 1, mariadb.Options{})
	ctx := context.Background()
	primary := servers[0].Admin()
	// A connection that reads the server's greeting and never answers it: logging in.
	raw, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(servers[0].Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	greeting := make([]byte, 256)
	n, err := raw.Read(greeting)
	// Header (4 bytes), protocol version, the server version up to its NUL, then the
	// connection's ID (little-endian uint32).
	end := 5 + bytes.IndexByte(greeting[5:n], 0)
	if err != nil || end < 5 || n < end+5 {
		t.Fatalf("greeting of %d bytes: %v", n, err)
	}
	loginID := uint64(binary.LittleEndian.Uint32(greeting[end+1 : end+5]))
	var user string
	if err := primary.DB.QueryRowContext(ctx, "SELECT USER FROM information_schema.PROCESSLIST WHERE ID = ?", loginID).Scan(&user); err != nil || user != "unauthenticated user" {
		t.Fatalf("the login's connection %d: user %q, %v", loginID, user, err)
	}
	client := servers[0].Conn(mariadb.AdminUser, mariadb.AdminPassword)
	conn, err := client.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var clientID uint64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&clientID); err != nil {
		t.Fatal(err)
	}
	s := mysql.ClientConnections("nobody")
	rows, err := primary.DB.QueryContext(ctx, s.Query, s.Args...)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[uint64]bool{}
	for rows.Next() {
		var id uint64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		listed[id] = true
	}
	rows.Close()
	if listed[loginID] || !listed[clientID] {
		t.Errorf("listed %v: the login %d should not be, the client %d should", listed, loginID, clientID)
	}
}
