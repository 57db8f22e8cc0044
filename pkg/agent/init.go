// Package agent is the per-pod side of the operator. Init prepares a member before its server
// starts: it renders the member's configuration, and fills an empty data directory either with
// a copy of a peer (seed.go) or with the flavor's own tool and the internal accounts, whose
// passwords are read from the mounted credentials Secret. Passwords reach the server only
// over its local socket as statement arguments: never in an environment variable, a command
// line or a log line.
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// Credential file names in the credentials directory (keys of the credentials Secret).
const (
	FileRootPassword        = "root-password"
	FileReplicationPassword = "replication-password"
	FileOperatorPassword    = "operator-password"
	FileAgentToken          = "agent-token"
)

// InitOptions configure Init.
type InitOptions struct {
	Flavor mysql.Flavor
	// PodName is the StatefulSet pod name; its ordinal gives the server_id.
	PodName      string
	BaseServerID int64
	// ConfigTemplate is the operator's my.cnf (the ConfigMap); ConfDir receives my.cnf and
	// conf.d/server.cnf with the per-member settings.
	ConfigTemplate string
	ConfDir        string
	DataDir        string
	CredentialsDir string
	// User, when set, is passed to the server tools as --user (only needed when running as root).
	User string
	// Timeout bounds the temporary server used to create the accounts.
	Timeout time.Duration
	// Peers are the agent addresses (host:port) of the other members: an empty datadir is
	// seeded from one of them when they hold data (seed.go; MariaDB only).
	Peers []string
	// ClusterHoldsData is true once the operator recorded that the cluster holds data: then a
	// peer that does not answer may hold it, and the member waits for a donor rather than
	// starting empty.
	ClusterHoldsData bool
	// AgentTLS is the TLS configuration for the peers' agents (ClientTLS); nil for plain HTTP.
	AgentTLS *tls.Config
}

// Init prepares the member. It is idempotent: the configuration is rendered every time, a
// committed physical restore is put in place of the datadir (restore.go), a datadir marked
// for re-seeding is set aside (reseed.go), an initialised data directory is otherwise left
// alone, and an empty one is seeded from a peer when the cluster holds data (seed.go) or
// initialised empty.
func Init(ctx context.Context, o InitOptions) error {
	logger := klog.FromContext(ctx)
	ord, err := agentapi.Ordinal(o.PodName)
	if err != nil {
		return err
	}
	serverID := o.BaseServerID + int64(ord)
	cnf, err := renderConfig(o, serverID)
	if err != nil {
		return err
	}
	if err := ApplyStagedRestore(ctx, o, cnf); err != nil {
		return err
	}
	reseed, err := readReseedMarker(o.DataDir)
	if err != nil {
		return err
	}
	if reseed != nil {
		// The operator found this member diverged (reseed.go): its data is never served again.
		logger.Info("Re-seeding: the datadir is set aside and replaced with a copy of a peer", "reason", reseed.Reason, "requested", reseed.Requested)
		if err := setDivergedAside(o.DataDir); err != nil {
			return err
		}
	}
	if initialised(o.DataDir) {
		logger.Info("Data directory already initialised", "datadir", o.DataDir, "serverID", serverID)
		return nil
	}
	seeded, err := seedFromPeers(ctx, o, cnf)
	switch {
	case err != nil:
		return err
	case reseed != nil && !seeded:
		// Never an empty datadir in place of a member that held data: retried by the pod.
		return errors.New("re-seeding needs a peer that holds data, and none does")
	case reseed != nil:
		return finishReseed(o.DataDir)
	case seeded:
		return nil
	}
	creds, err := readCredentials(o.CredentialsDir)
	if err != nil {
		return err
	}
	logger.Info("Initialising the data directory", "datadir", o.DataDir, "flavor", o.Flavor, "serverID", serverID)
	if err := os.MkdirAll(o.DataDir, 0o750); err != nil {
		return fmt.Errorf("create datadir: %w", err)
	}
	err = installDataDir(ctx, o, cnf)
	if err == nil {
		err = createAccounts(ctx, o, cnf, creds)
	}
	if err != nil {
		// A half-initialised datadir would be taken as done next time: remove it.
		_ = os.RemoveAll(o.DataDir)
		return err
	}
	logger.Info("Data directory initialised", "datadir", o.DataDir)
	return nil
}

func renderConfig(o InitOptions, serverID int64) (string, error) {
	tpl, err := os.ReadFile(o.ConfigTemplate)
	if err != nil {
		return "", fmt.Errorf("read config template: %w", err)
	}
	confd := filepath.Join(o.ConfDir, "conf.d")
	if err := os.MkdirAll(confd, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", confd, err)
	}
	cnf := filepath.Join(o.ConfDir, "my.cnf")
	if err := os.WriteFile(cnf, tpl, 0o644); err != nil {
		return "", fmt.Errorf("write my.cnf: %w", err)
	}
	server := fmt.Sprintf("# Written by mysql-agent init for %s.\n[mysqld]\nserver_id = %d\nreport_host = %s\n", o.PodName, serverID, o.PodName)
	if err := os.WriteFile(filepath.Join(confd, "server.cnf"), []byte(server), 0o644); err != nil {
		return "", fmt.Errorf("write server.cnf: %w", err)
	}
	return cnf, nil
}

// initialised: both flavors create the mysql system schema directory.
func initialised(dataDir string) bool {
	st, err := os.Stat(filepath.Join(dataDir, "mysql"))
	return err == nil && st.IsDir()
}

type credentials struct{ root, replication, operator string }

// ReadCredential reads one file of the mounted credentials Secret, without a trailing newline.
// Errors name the file, never its content.
func ReadCredential(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", fmt.Errorf("read credential %s: %w", name, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", fmt.Errorf("credential %s is empty", name)
	}
	return v, nil
}

func readCredentials(dir string) (credentials, error) {
	read := func(name string) (string, error) { return ReadCredential(dir, name) }
	var c credentials
	var err error
	if c.root, err = read(FileRootPassword); err != nil {
		return c, err
	}
	if c.replication, err = read(FileReplicationPassword); err != nil {
		return c, err
	}
	c.operator, err = read(FileOperatorPassword)
	return c, err
}

func (o InitOptions) userArgs() []string {
	if o.User == "" {
		return nil
	}
	return []string{"--user=" + o.User}
}

// installDataDir runs the flavor's initialiser: it creates the system schema with a root
// account that has no password and exists only on the local socket.
func installDataDir(ctx context.Context, o InitOptions, cnf string) error {
	var cmd *exec.Cmd
	if o.Flavor == mysql.MariaDB {
		cmd = exec.CommandContext(ctx, "mariadb-install-db", append([]string{"--defaults-file=" + cnf, "--datadir=" + o.DataDir,
			"--skip-test-db", "--auth-root-authentication-method=normal"}, o.userArgs()...)...)
	} else {
		cmd = exec.CommandContext(ctx, "mysqld", append([]string{"--defaults-file=" + cnf, "--datadir=" + o.DataDir,
			"--initialize-insecure"}, o.userArgs()...)...)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initialise datadir with %s: %w: %s", cmd.Args[0], err, tail(out, 2000))
	}
	return nil
}

// createAccounts starts the server without networking, sets the root password, creates the
// operator and replication accounts and drops the installer's other accounts (root on hosts
// other than localhost, without a password), with binary logging off for the session (so that
// these are not transactions replicas replay), then shuts the server down.
func createAccounts(ctx context.Context, o InitOptions, cnf string, c credentials) error {
	return withTempServer(ctx, o, cnf, o.DataDir, nil, func(srv *tempServer) error {
		err := srv.in.Exec(srv.ctx, append([]mysql.Statement{{Query: "SET SESSION sql_log_bin = 0"}}, accountStatements(c)...)...)
		if err != nil {
			return fmt.Errorf("create internal accounts: %w", err)
		}
		_, err = srv.in.DropInstallerAccounts(srv.ctx)
		return err
	})
}

// withTempServer runs fn on a temporary server on dataDir (startTempServer, with args) and
// shuts the server down cleanly; when fn fails, the server is killed and fn's error returned.
func withTempServer(ctx context.Context, o InitOptions, cnf, dataDir string, args []string, fn func(*tempServer) error) error {
	srv, err := startTempServer(ctx, o, cnf, dataDir, args...)
	if err != nil {
		return err
	}
	if err := fn(srv); err != nil {
		srv.kill()
		return err
	}
	return srv.shutdown()
}

// accountStatements create the internal accounts, or set their passwords and grants where
// they exist (a restored datadir holds the accounts of the cluster it was taken from).
func accountStatements(c credentials) []mysql.Statement {
	return []mysql.Statement{
		mysql.CreateUser(mysql.OperatorUser, "%", c.operator),
		mysql.AlterUserPassword(mysql.OperatorUser, "%", c.operator),
		{Query: "GRANT ALL PRIVILEGES ON *.* TO ?@? WITH GRANT OPTION", Args: []any{mysql.OperatorUser, "%"}},
		mysql.CreateUser(mysql.ReplicationUser, "%", c.replication),
		mysql.AlterUserPassword(mysql.ReplicationUser, "%", c.replication),
		{Query: "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO ?@?", Args: []any{mysql.ReplicationUser, "%"}},
		mysql.CreateUser("root", "localhost", c.root),
		mysql.AlterUserPassword("root", "localhost", c.root),
	}
}

// tempServer is a server started by init on a datadir, reachable only on a socket inside it.
type tempServer struct {
	in      *mysql.Instance
	ctx     context.Context
	cancel  context.CancelFunc
	proc    *exec.Cmd
	exited  chan error
	logPath string
}

// startTempServer starts the server on dataDir without networking and connects as root over
// its socket. One connection serves everything: after root's password is set, a new
// connection as root without it would be refused. args are added to the server's command line
// (--skip-grant-tables for a restored datadir).
func startTempServer(ctx context.Context, o InitOptions, cnf, dataDir string, args ...string) (*tempServer, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	sock := filepath.Join(dataDir, "init.sock")
	bin := "mysqld"
	extra := []string{"--super-read-only=OFF"} // else not even root may create accounts
	if o.Flavor == mysql.MariaDB {
		bin, extra = "mariadbd", nil
	}
	cmdArgs := append([]string{"--defaults-file=" + cnf, "--datadir=" + dataDir,
		"--skip-networking", "--socket=" + sock, "--skip-slave-start"}, extra...)
	cmdArgs = append(cmdArgs, tempServerCaches...)
	cmdArgs = append(append(cmdArgs, args...), o.userArgs()...)
	srv := &tempServer{ctx: ctx, cancel: cancel, proc: exec.Command(bin, cmdArgs...), exited: make(chan error, 1),
		logPath: filepath.Join(dataDir, "init-server.log")}
	logf, err := os.Create(srv.logPath)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("create %s: %w", srv.logPath, err)
	}
	defer logf.Close()
	srv.proc.Stdout, srv.proc.Stderr = logf, logf
	if err := srv.proc.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start %s for init: %w", bin, err)
	}
	go func() { srv.exited <- srv.proc.Wait() }()
	db, err := mysql.Open(mysql.ConnConfig{Addr: sock, Socket: true, User: "root", Timeout: 5 * time.Second})
	if err != nil {
		srv.kill()
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	srv.in = &mysql.Instance{DB: db, Flavor: o.Flavor}
	for {
		if err := db.PingContext(ctx); err == nil {
			return srv, nil
		}
		select {
		case err := <-srv.exited:
			srv.exited <- err
			b, _ := os.ReadFile(srv.logPath)
			srv.kill()
			return nil, fmt.Errorf("init server exited: %v: %s", err, tail(b, 2000))
		case <-ctx.Done():
			srv.kill()
			return nil, fmt.Errorf("init server not up: %w", ctx.Err())
		case <-time.After(tempServerPoll):
		}
	}
}

// tempServerPoll is how often startTempServer tries the socket: a restore's downtime waits
// for it, and the server is up within some 300 ms.
const tempServerPoll = 10 * time.Millisecond

// tempServerCaches override my.cnf for the temporary server, which only runs a few
// statements. The MyISAM key cache and Aria's page cache are set up during start-up (some
// 90 ms here for both at their 128 MiB defaults). Loading the buffer pool's dump (which a
// restored datadir may bring from its source) would compete for the disk for nothing, and
// dumping it at shutdown would overwrite that file with this server's few pages, which the
// real server then loads instead. loose_: MySQL has no Aria.
var tempServerCaches = []string{"--key-buffer-size=1M", "--loose-aria-pagecache-buffer-size=1M",
	"--innodb-buffer-pool-load-at-startup=OFF", "--innodb-buffer-pool-dump-at-shutdown=OFF"}

// kill stops the server at once (after a failure).
func (s *tempServer) kill() {
	_ = s.proc.Process.Kill()
	<-s.exited
	s.in.DB.Close()
	s.cancel()
}

// shutdown stops the server cleanly and removes its log. SIGTERM is the server's clean
// shutdown, as the SHUTDOWN statement is, and MariaDB 10.11 exits some 120 ms sooner on it.
// A server that exits with an error or on a signal did not shut down cleanly: its log stays.
func (s *tempServer) shutdown() error {
	defer s.cancel()
	s.in.DB.Close()
	if err := s.proc.Process.Signal(syscall.SIGTERM); err != nil {
		_ = s.proc.Process.Kill()
	}
	select {
	case err := <-s.exited:
		if err != nil {
			b, _ := os.ReadFile(s.logPath)
			return fmt.Errorf("stop init server: %w: %s", err, tail(b, 2000))
		}
	case <-time.After(60 * time.Second):
		_ = s.proc.Process.Kill()
		return errors.New("init server did not shut down")
	}
	_ = os.Remove(s.logPath)
	return nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
