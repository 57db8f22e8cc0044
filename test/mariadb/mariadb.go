// Package mariadb runs real, independent MariaDB servers for tests: each has its own datadir,
// socket and loopback port, is initialised with mariadb-install-db, and gets the users the
// operator's agent creates (an admin user and a replication user, with passwords). Servers
// are stopped when the test ends, and killed by the kernel if the test binary dies.
//
// With MYSQLD naming a MySQL 8.x server binary (make test-mysql), the same helper runs MySQL
// servers instead (initialised with mysqld --initialize-insecure) and Flavor reports MySQL, so
// that the suites written against Flavor() run on MySQL. That path follows MySQL 8.4's
// documentation and has not run on this project's machines, which have no MySQL server.
//
// Without mariadbd on the machine the tests skip, except under CI (CI=true), where a missing
// server is a failure: .ci/run installs MariaDB from Debian's packages.
package mariadb

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/proc"
)

// Users the servers are initialised with.
const (
	AdminUser     = "mysqlop"
	AdminPassword = "admin-Pa55"
	ReplUser      = "repl"
	ReplPassword  = "repl-Pa55"
	BaseServerID  = 100
	defaultMyCnf  = "[mysqld]\nlog_bin = binlog\nlog_slave_updates = ON\ngtid_strict_mode = ON\nbinlog_format = ROW\nskip_name_resolve = ON\nskip_slave_start = ON\nread_only = ON\n"
	// defaultMySQLCnf is the MySQL counterpart: GTIDs and the semi-sync plugins, as the
	// operator's rendered my.cnf has them (super_read_only is left to the tests: it would
	// refuse the helper's own CREATE USER).
	defaultMySQLCnf = "[mysqld]\nlog_bin = binlog\nlog_replica_updates = ON\ngtid_mode = ON\nenforce_gtid_consistency = ON\nbinlog_format = ROW\n" +
		"skip_name_resolve = ON\nskip_replica_start = ON\nread_only = ON\nplugin_load_add = semisync_source.so;semisync_replica.so\n"
	startupDeadline = 30 * time.Second
)

// T is the part of testing.TB the helper uses, so that benchmarks outside `go test` can run
// servers too.
type T interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	TempDir() string
	Cleanup(func())
}

// Server is one running (or stopped) mariadbd.
type Server struct {
	// Index is the server's ordinal; its server_id is BaseServerID + Index.
	Index  int
	Dir    string
	Port   int
	Socket string
	// MyCnf is the configuration file the server reads first.
	MyCnf string
	// TLS is what the server serves (nil: no TLS).
	TLS *TLSFiles

	t    T
	cmd  *exec.Cmd
	done chan struct{}
	db   *sql.DB
}

// Options configure Start.
type Options struct {
	// MyCnf is the content of the configuration file; empty means a minimal GTID setup. The
	// helper's command line sets datadir, socket, port, bind address and server_id, which
	// take precedence over the file.
	MyCnf string
	// DataDir, when set, is copied as the datadir of every server instead of initialising an
	// empty one (for example a prepared physical backup).
	DataDir string
	// TLS, when set, makes the servers serve these files; Conn, Admin, Operator and
	// StartWriter then connect (and replicate) over TLS that verifies them.
	TLS *TLSFiles
}

// Flavor is the flavor of the servers the helper runs: MySQL when MYSQLD names a server
// binary, else MariaDB.
func Flavor() mysql.Flavor {
	if os.Getenv("MYSQLD") != "" {
		return mysql.MySQL
	}
	return mysql.MariaDB
}

// RequireMariaDB skips a test of MariaDB-only behaviour when the helper runs MySQL.
func RequireMariaDB(t T) {
	t.Helper()
	if Flavor() != mysql.MariaDB {
		t.Skipf("MariaDB-only behaviour; MYSQLD runs MySQL")
	}
}

// Binary is the server binary the helper runs: MYSQLD when set, else mariadbd.
func Binary() (string, error) {
	if p := os.Getenv("MYSQLD"); p != "" {
		if !fileExists(p) {
			return "", fmt.Errorf("MYSQLD=%s: no such file", p)
		}
		return p, nil
	}
	for _, name := range []string{"mariadbd", "mysqld"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		if p := "/usr/sbin/" + name; fileExists(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("mariadbd not found (apt-get install mariadb-server)")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Start initialises and starts n servers.
func Start(t T, n int, o Options) []*Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: CI must install MariaDB", err)
		}
		t.Skipf("%v", err)
	}
	cnf := o.MyCnf
	if cnf == "" {
		cnf = map[mysql.Flavor]string{mysql.MariaDB: defaultMyCnf, mysql.MySQL: defaultMySQLCnf}[Flavor()]
	}
	if o.TLS != nil {
		cnf += o.TLS.MyCnf()
	}
	servers := make([]*Server, n)
	for i := range n {
		dir := t.TempDir()
		port, err := proc.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{Index: i, Dir: dir, Port: port, Socket: filepath.Join(dir, "mysqld.sock"), MyCnf: filepath.Join(dir, "my.cnf"), TLS: o.TLS, t: t}
		confd := filepath.Join(dir, "conf.d")
		if err := os.MkdirAll(confd, 0o755); err != nil {
			t.Fatal(err)
		}
		// Rendered configurations include a per-pod directory; point it into the temp dir.
		body := rewriteIncludeDir(cnf, confd)
		if err := os.WriteFile(s.MyCnf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		// Each server has its own tmpdir: concurrent bootstraps in one /tmp collide on the
		// names of their temporary tables.
		if err := os.MkdirAll(s.tmpDir(), 0o755); err != nil {
			t.Fatal(err)
		}
		install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+s.dataDir(), "--tmpdir="+s.tmpDir(),
			"--user=root", "--auth-root-authentication-method=normal", "--skip-test-db")
		if Flavor() == mysql.MySQL {
			// root@localhost without a password, as mariadb-install-db's over the socket.
			install = exec.Command(bin, "--no-defaults", "--initialize-insecure", "--datadir="+s.dataDir(), "--tmpdir="+s.tmpDir(), "--user=root")
		}
		if o.DataDir != "" {
			install = exec.Command("cp", "-a", o.DataDir, s.dataDir())
		}
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", install.Args[0], err, out)
		}
		s.start(bin, true)
		t.Cleanup(s.Stop)
		if err := s.createUsers(); err != nil {
			t.Fatalf("server %d: create users: %v", i, err)
		}
		servers[i] = s
	}
	return servers
}

func rewriteIncludeDir(cnf, dir string) string {
	var out []string
	for _, l := range strings.Split(cnf, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "!includedir") {
			l = "!includedir " + dir
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func (s *Server) dataDir() string { return filepath.Join(s.Dir, "data") }

func (s *Server) tmpDir() string { return filepath.Join(s.Dir, "tmp") }

// ServerID is the server's server_id.
func (s *Server) ServerID() int { return BaseServerID + s.Index }

// Addr is the server's TCP address.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.Port) }

// start runs mariadbd and waits until it answers on its socket. A port picked as free can be
// taken before the server binds it (by another test's server, or as a client's ephemeral
// port); mariadbd then exits at once, and a first start retries on a new port. A restart
// keeps its port, since replicas are pointed at it, and retries the same port.
func (s *Server) start(bin string, newPortOnCollision bool) {
	s.t.Helper()
	for attempt := 1; ; attempt++ {
		err := s.startOnce(bin)
		if err == nil {
			return
		}
		if !errors.Is(err, errPortTaken) || attempt == 5 {
			s.t.Fatalf("%v", err)
		}
		if newPortOnCollision {
			port, perr := proc.FreePort()
			if perr != nil {
				s.t.Fatal(perr)
			}
			s.Port = port
		} else {
			time.Sleep(time.Second)
		}
	}
}

var errPortTaken = errors.New("port taken")

func (s *Server) startOnce(bin string) error {
	logPath := filepath.Join(s.Dir, "error.log")
	_ = os.Remove(s.Socket)
	_ = os.Remove(logPath)
	logf, err := os.OpenFile(filepath.Join(s.Dir, "mariadbd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "--defaults-file="+s.MyCnf, "--datadir="+s.dataDir(), "--tmpdir="+s.tmpDir(), "--socket="+s.Socket,
		fmt.Sprintf("--port=%d", s.Port), "--bind-address=127.0.0.1", fmt.Sprintf("--server-id=%d", s.ServerID()),
		"--report-host=127.0.0.1", fmt.Sprintf("--report-port=%d", s.Port),
		"--pid-file="+filepath.Join(s.Dir, "mariadbd.pid"), "--user=root", "--log-error="+logPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := proc.Start(cmd); err != nil {
		logf.Close()
		return fmt.Errorf("start mariadbd: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	s.cmd, s.done = cmd, done
	// Readiness is a query over this server's own socket, never a TCP dial: a dial to the port
	// succeeds when some other process holds it.
	deadline := time.Now().Add(startupDeadline)
	for !s.answers() {
		select {
		case <-done:
			s.cmd = nil
			log := s.ErrorLog()
			if strings.Contains(log, "Address already in use") {
				return fmt.Errorf("mariadbd %d: port %d: %w", s.Index, s.Port, errPortTaken)
			}
			return fmt.Errorf("mariadbd %d exited during start-up:\n%s", s.Index, log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mariadbd %d not up after %v:\n%s", s.Index, startupDeadline, s.ErrorLog())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// answers reports whether the server answers over its socket as root (passwordless over the
// socket only). A refusal is an answer too: a datadir restored by the agent's init step has
// the root password of its credentials.
func (s *Server) answers() bool {
	if !fileExists(s.Socket) {
		return false
	}
	db, err := mysql.Open(mysql.ConnConfig{Addr: s.Socket, Socket: true, User: "root", Timeout: time.Second})
	if err != nil {
		return false
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = db.PingContext(ctx)
	var refused *gomysql.MySQLError
	return err == nil || errors.As(err, &refused)
}

// createUsers creates the admin and replication users over the socket (root has no password
// and only exists for localhost).
func (s *Server) createUsers() error {
	db, err := mysql.Open(mysql.ConnConfig{Addr: s.Socket, Socket: true, User: "root"})
	if err != nil {
		return err
	}
	defer db.Close()
	in := &mysql.Instance{DB: db, Flavor: Flavor()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Users are created with binary logging off, so they are not transactions replicas would
	// have to replay (the agent does the same in its init step). On MySQL, super_read_only
	// (the operator's my.cnf sets it) is lifted meanwhile, as the agent's init does.
	if Flavor() == mysql.MySQL {
		var on bool
		if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.super_read_only").Scan(&on); err != nil {
			return err
		}
		if on {
			if _, err := db.ExecContext(ctx, "SET GLOBAL super_read_only = OFF"); err != nil {
				return err
			}
			defer db.ExecContext(context.Background(), "SET GLOBAL super_read_only = ON")
		}
	}
	return in.Exec(ctx,
		mysql.Statement{Query: "SET SESSION sql_log_bin = 0"},
		mysql.CreateUser(AdminUser, "%", AdminPassword),
		mysql.Statement{Query: "GRANT ALL PRIVILEGES ON *.* TO ?@? WITH GRANT OPTION", Args: []any{AdminUser, "%"}},
		mysql.CreateUser(ReplUser, "%", ReplPassword),
		mysql.Statement{Query: "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO ?@?", Args: []any{ReplUser, "%"}},
		mysql.Statement{Query: "SET SESSION sql_log_bin = 1"},
	)
}

// Conn returns a connection pool for user and password over TCP, closed when the test ends.
func (s *Server) Conn(user, password string) *sql.DB {
	s.t.Helper()
	db, err := mysql.Open(mysql.ConnConfig{Addr: s.Addr(), User: user, Password: password, Timeout: 3 * time.Second, TLS: s.clientTLS()})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { db.Close() })
	return db
}

// clientTLS is the TLS configuration of the server's clients; nil without TLS.
func (s *Server) clientTLS() *tls.Config {
	if s.TLS == nil {
		return nil
	}
	return s.TLS.Client()
}

// Admin returns the server as a mysql.Instance connected as the admin user.
func (s *Server) Admin() *mysql.Instance {
	if s.db == nil {
		s.db = s.Conn(AdminUser, AdminPassword)
	}
	return &mysql.Instance{DB: s.db, Flavor: Flavor()}
}

// Kill sends SIGKILL and waits for the process to end: a crash, no clean shutdown.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// Stop shuts the server down cleanly (SIGTERM), killing it after 30 s.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	proc.Terminate(s.cmd.Process, s.done, 30*time.Second)
	s.cmd = nil
}

// Restart starts a stopped or killed server again on its datadir.
func (s *Server) Restart() {
	s.t.Helper()
	bin, err := Binary()
	if err != nil {
		s.t.Fatal(err)
	}
	s.start(bin, false)
}

// TryRestart starts a stopped or killed server again on its datadir and returns why it did
// not come up, for tests of a server that cannot start (its error log says more: ErrorLog).
func (s *Server) TryRestart() error {
	bin, err := Binary()
	if err != nil {
		return err
	}
	return s.startOnce(bin)
}

// DataDir is the server's datadir.
func (s *Server) DataDir() string { return s.dataDir() }

// RestartOnRestore does what a member's pod restart does after a physical restore was
// committed beside the server's datadir: it stops the server, runs the agent's init step that
// puts the restore in place (the internal accounts get the helper's passwords, root gets
// rootPassword; timeout bounds the step's temporary server) and starts the server again.
func (s *Server) RestartOnRestore(ctx context.Context, rootPassword string, timeout time.Duration) error {
	creds := s.t.TempDir()
	for name, v := range map[string]string{agent.FileRootPassword: rootPassword, agent.FileReplicationPassword: ReplPassword,
		agent.FileOperatorPassword: AdminPassword} {
		if err := os.WriteFile(filepath.Join(creds, name), []byte(v), 0o600); err != nil {
			return err
		}
	}
	o := agent.InitOptions{Flavor: Flavor(), DataDir: s.dataDir(), CredentialsDir: creds, Timeout: timeout}
	if os.Geteuid() == 0 {
		o.User = "root"
	}
	s.Stop()
	if err := agent.ApplyStagedRestore(ctx, o, s.MyCnf); err != nil {
		return fmt.Errorf("apply the restore on server %d: %w", s.Index, err)
	}
	s.Restart()
	return nil
}

// Running reports whether the process is alive.
func (s *Server) Running() bool { return s.cmd != nil }

// ErrorLog returns the server's error log.
func (s *Server) ErrorLog() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "error.log"))
	return string(b)
}
