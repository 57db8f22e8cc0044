package agent_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
	"github.com/mysqlop/mysql-operator/test/mariadb"
	"github.com/mysqlop/mysql-operator/test/proc"
)

func TestOrdinal(t *testing.T) {
	for name, want := range map[string]int{"db-0": 0, "my-db-12": 12} {
		if got, err := agentapi.Ordinal(name); err != nil || got != want {
			t.Errorf("Ordinal(%q) = %d, %v", name, got, err)
		}
	}
	for _, bad := range []string{"db", "db-x", "db-", "db-1a"} {
		if _, err := agentapi.Ordinal(bad); err == nil {
			t.Errorf("Ordinal(%q): want an error", bad)
		}
	}
}

type member struct {
	opts agent.InitOptions
	sock string
	port int
}

// newMember lays out a pod's volumes in a temp dir, with the operator's rendered my.cnf as
// the template and the credentials as files, as the StatefulSet mounts them.
func newMember(t *testing.T, creds map[string]string) *member {
	if _, err := mariadb.Binary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	root := t.TempDir()
	// The pod's /tmp is its own; here the servers (which default to $TMPDIR) need one too.
	t.Setenv("TMPDIR", t.TempDir())
	m := &member{sock: filepath.Join(root, "run", "mysqld.sock")}
	for _, d := range []string{"config", "conf", "run", "credentials"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Without TLS: this member has no certificate (TestTLSReloaderOnMariaDB serves one).
	c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Flavor = v1alpha1.FlavorMariaDB; c.Spec.TLS.Disabled = true })
	cnf := configmap.Render(c)
	cnf = strings.NewReplacer(configmap.DataDir, filepath.Join(root, "data"), configmap.SocketPath, m.sock, configmap.PIDPath, filepath.Join(root, "run", "mysqld.pid"),
		configmap.ConfDDir, filepath.Join(root, "conf", "conf.d")).Replace(cnf)
	tpl := filepath.Join(root, "config", "my.cnf")
	if err := os.WriteFile(tpl, []byte(cnf), 0o644); err != nil {
		t.Fatal(err)
	}
	for k, v := range creds {
		if err := os.WriteFile(filepath.Join(root, "credentials", k), []byte(v+"\n"), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	port, err := proc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	m.port = port
	m.opts = agent.InitOptions{
		Flavor: mysql.MariaDB, PodName: "db-2", BaseServerID: 100, ConfigTemplate: tpl,
		ConfDir: filepath.Join(root, "conf"), DataDir: filepath.Join(root, "data"),
		CredentialsDir: filepath.Join(root, "credentials"), User: "root", Timeout: time.Minute,
	}
	return m
}

// start runs the server exactly as the pod's server container does (plus a loopback port).
// It is up once its own socket answers: a TCP dial could reach another test's server that
// took the port first (seen in CI as "Access denied" from the wrong server), so a server that
// exits because its port is taken is started again on another.
func (m *member) start(t *testing.T) func() {
	t.Helper()
	for attempt := 0; ; attempt++ {
		stop, err := m.startOnce(t)
		if err == nil {
			return stop
		}
		if !strings.Contains(err.Error(), "Address already in use") || attempt == 3 {
			t.Fatal(err)
		}
		port, perr := proc.FreePort()
		if perr != nil {
			t.Fatal(perr)
		}
		m.port = port
	}
}

func (m *member) startOnce(t *testing.T) (func(), error) {
	t.Helper()
	cmd := exec.Command("mariadbd", "--defaults-file="+filepath.Join(m.opts.ConfDir, "my.cnf"),
		fmt.Sprintf("--port=%d", m.port), "--bind-address=127.0.0.1", "--user=root")
	out, err := os.Create(filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop := func() { proc.Terminate(cmd.Process, done, 30*time.Second) }
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			stop()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("unix", m.sock); err == nil {
			c.Close()
			return stop, nil
		}
		select {
		case <-done:
			b, _ := os.ReadFile(out.Name())
			return nil, fmt.Errorf("server exited during start-up:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(out.Name())
			return nil, fmt.Errorf("server did not start:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (m *member) conn(t *testing.T, user, password string) *sql.DB {
	t.Helper()
	db, err := mysql.Open(mysql.ConnConfig{Addr: fmt.Sprintf("127.0.0.1:%d", m.port), User: user, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var creds = map[string]string{
	agent.FileRootPassword: "root-Secret-1", agent.FileReplicationPassword: "repl-Secret-2", agent.FileOperatorPassword: "op-Secret-3",
}

func TestInitOnMariaDB(t *testing.T) {
	m := newMember(t, creds)
	ctx := context.Background()
	if err := agent.Init(ctx, m.opts); err != nil {
		t.Fatalf("init: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(m.opts.ConfDir, "conf.d", "server.cnf"))
	if err != nil || !strings.Contains(string(b), "server_id = 102") {
		t.Fatalf("server.cnf: %s %v", b, err)
	}
	stop := m.start(t)

	op := m.conn(t, mysql.OperatorUser, creds[agent.FileOperatorPassword])
	var id int
	var pos string
	if err := op.QueryRow("SELECT @@server_id, @@gtid_binlog_pos").Scan(&id, &pos); err != nil || id != 102 {
		t.Fatalf("server_id %d: %v", id, err)
	}
	if pos != "" {
		t.Errorf("internal accounts were binary-logged (gtid_binlog_pos %q): replicas would replay them", pos)
	}
	// Only the accounts init creates on purpose, and the server's own locked definer account:
	// mariadb-install-db's passwordless root@127.0.0.1, root@::1 and root@<hostname> are gone.
	if got, want := accounts(t, op), "mariadb.sys@localhost mysqlop@% repl@% root@localhost"; got != want {
		t.Errorf("accounts after init: %s, want %s", got, want)
	}
	if g := grants(t, op, mysql.OperatorUser); !strings.Contains(g, "ALL PRIVILEGES ON *.*") {
		t.Errorf("operator grants: %s", g)
	}
	repl := m.conn(t, mysql.ReplicationUser, creds[agent.FileReplicationPassword])
	if g := grants(t, repl, mysql.ReplicationUser); !strings.Contains(g, "REPLICATION SLAVE") {
		t.Errorf("replication grants: %s", g)
	}
	if err := m.conn(t, mysql.OperatorUser, "wrong").Ping(); err == nil {
		t.Error("a wrong password was accepted")
	}
	rootNoPw, _ := mysql.Open(mysql.ConnConfig{Addr: m.sock, Socket: true, User: "root"})
	defer rootNoPw.Close()
	if err := rootNoPw.Ping(); err == nil {
		t.Error("root logs in without the password")
	}
	rootPw, _ := mysql.Open(mysql.ConnConfig{Addr: m.sock, Socket: true, User: "root", Password: creds[agent.FileRootPassword]})
	defer rootPw.Close()
	if err := rootPw.Ping(); err != nil {
		t.Errorf("root with its password: %v", err)
	}
	// The agent's serve connects over the socket as the operator account.
	opSock, _ := mysql.Open(mysql.ConnConfig{Addr: m.sock, Socket: true, User: mysql.OperatorUser, Password: creds[agent.FileOperatorPassword]})
	defer opSock.Close()
	var who string
	if err := opSock.QueryRow("SELECT CURRENT_USER()").Scan(&who); err != nil || !strings.HasPrefix(who, mysql.OperatorUser+"@") {
		t.Errorf("operator over the socket: %q %v", who, err)
	}
	if _, err := op.Exec("CREATE DATABASE keep"); err != nil {
		t.Fatal(err)
	}
	stop()

	// A restarted pod runs init again: the data stays.
	if err := agent.Init(ctx, m.opts); err != nil {
		t.Fatalf("second init: %v", err)
	}
	m.start(t)
	var n int
	if err := m.conn(t, mysql.OperatorUser, creds[agent.FileOperatorPassword]).QueryRow(
		"SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'keep'").Scan(&n); err != nil || n != 1 {
		t.Errorf("data lost across a second init: %d %v", n, err)
	}
}

func TestInitWithoutCredentialsLeavesNoDatadir(t *testing.T) {
	partial := map[string]string{agent.FileRootPassword: "only-root-Secret"}
	m := newMember(t, partial)
	err := agent.Init(context.Background(), m.opts)
	if err == nil || !strings.Contains(err.Error(), agent.FileReplicationPassword) {
		t.Fatalf("init without a replication password: %v", err)
	}
	if strings.Contains(err.Error(), partial[agent.FileRootPassword]) {
		t.Errorf("the error shows a credential: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m.opts.DataDir, "mysql")); err == nil {
		t.Error("a datadir was initialised without credentials")
	}
}

func grants(t *testing.T, db *sql.DB, user string) string {
	t.Helper()
	rows, err := db.Query("SHOW GRANTS")
	if err != nil {
		t.Fatalf("show grants for %s: %v", user, err)
	}
	defer rows.Close()
	var all []string
	for rows.Next() {
		var g string
		_ = rows.Scan(&g)
		all = append(all, g)
	}
	return strings.Join(all, "\n")
}

// accounts lists every account and role on the server (MariaDB's mysql.global_priv), sorted.
func accounts(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query("SELECT CONCAT(User, '@', Host) FROM mysql.global_priv ORDER BY 1")
	if err != nil {
		t.Fatalf("list accounts: %v", err)
	}
	defer rows.Close()
	var all []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		all = append(all, a)
	}
	return strings.Join(all, " ")
}

// plantInstallerAccount adds, without binary logging, the passwordless root@127.0.0.1 that
// mariadb-install-db creates and that datadirs initialised by earlier operator versions hold.
func plantInstallerAccount(t *testing.T, db *sql.DB) {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"SET SESSION sql_log_bin = 0", "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'", "GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
		"SET SESSION sql_log_bin = 1"} { // the connection goes back to the pool
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// A running server whose datadir still holds the installer's accounts loses them once the
// agent's DropInstallerAccounts runs (serve starts it); the accounts init made stay.
func TestDropInstallerAccountsOnMariaDB(t *testing.T) {
	m := newMember(t, creds)
	if err := agent.Init(context.Background(), m.opts); err != nil {
		t.Fatal(err)
	}
	m.start(t)
	op := m.conn(t, mysql.OperatorUser, creds[agent.FileOperatorPassword])
	op.SetMaxOpenConns(1) // one connection: what the drop sets on it, the next statement sees
	plantInstallerAccount(t, op)
	if err := m.conn(t, "root", "").Ping(); err == nil {
		t.Log("root@127.0.0.1 without a password logs in, as planted")
	} else {
		t.Fatalf("the planted account does not log in: %v", err)
	}
	var before string
	_ = op.QueryRow("SELECT @@gtid_binlog_pos").Scan(&before)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	agent.DropInstallerAccounts(ctx, &mysql.Instance{DB: op, Flavor: mysql.MariaDB}, 100*time.Millisecond)
	if got, want := accounts(t, op), "mariadb.sys@localhost mysqlop@% repl@% root@localhost"; got != want {
		t.Errorf("accounts: %s, want %s", got, want)
	}
	if err := m.conn(t, "root", "").Ping(); err == nil {
		t.Error("root without a password still logs in over TCP")
	}
	var after string
	_ = op.QueryRow("SELECT @@gtid_binlog_pos").Scan(&after)
	if after != before {
		t.Errorf("dropping was binary-logged (%q -> %q): replicas would hold a transaction of their own", before, after)
	}
	// The pool's one connection turned binary logging off for the drop: later writes on it are
	// logged again.
	if _, err := op.Exec("CREATE DATABASE logged"); err != nil {
		t.Fatal(err)
	}
	if _ = op.QueryRow("SELECT @@gtid_binlog_pos").Scan(&after); after == before {
		t.Error("a write after DropInstallerAccounts on the same pooled connection was not binary-logged")
	}
}
