// Command mysql-agent runs in every MySQL pod. Subcommands:
//
//	install   copy this binary into a shared volume (first init container, agent image)
//	init      render the member's my.cnf, put a committed physical restore in place, and fill
//	          an empty datadir: a copy of a peer when the cluster holds data (MariaDB), else
//	          the flavor's own tool and the internal accounts (second init container, server
//	          image)
//	serve     probes, the operator's status API and metrics, beside the server
//	toolbox   run backup tools for serve on a unix socket (in the server image, whose tools
//	          match the server's version)
//	version   print the version
//
// Credentials are read from files of the mounted Secret, never from flags or the environment.
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/httpserver"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/toolbox"
	"github.com/mysqlop/mysql-operator/pkg/version"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "version", "--version":
		fmt.Println("mysql-agent", version.String())
		return
	case "install":
		err = install(os.Args[2:])
	case "init":
		err = initCmd(ctx, os.Args[2:])
	case "serve":
		err = serve(ctx, os.Args[2:])
	case "toolbox":
		err = toolboxCmd(ctx, os.Args[2:])
	default:
		usage()
		os.Exit(2)
	}
	klog.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mysql-agent:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: mysql-agent install|init|serve|toolbox|version [flags]")
}

func flagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ExitOnError)
	klogFlags := goflag.NewFlagSet("klog", goflag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	return fs
}

func install(args []string) error {
	fs := flagSet("install")
	dest := fs.String("dest", "/opt/mysqlop/bin", "directory to copy mysql-agent into")
	_ = fs.Parse(args)
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	in, err := os.Open(self)
	if err != nil {
		return fmt.Errorf("open own binary: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(*dest, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", *dest, err)
	}
	target := filepath.Join(*dest, "mysql-agent")
	tmp := target + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy to %s: %w", tmp, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	return os.Rename(tmp, target)
}

func initCmd(ctx context.Context, args []string) error {
	fs := flagSet("init")
	o := agent.InitOptions{PodName: os.Getenv("POD_NAME")}
	flavor := fs.String("flavor", "mysql", "server flavor: mysql or mariadb")
	fs.Int64Var(&o.BaseServerID, "base-server-id", 100, "server_id of ordinal 0")
	fs.StringVar(&o.ConfigTemplate, "config-template", "/etc/mysqlop/config/my.cnf", "the operator's my.cnf")
	fs.StringVar(&o.ConfDir, "conf-dir", "/etc/mysqlop/conf", "where my.cnf and conf.d/server.cnf are written")
	fs.StringVar(&o.DataDir, "datadir", "/var/lib/mysql/data", "data directory")
	fs.StringVar(&o.CredentialsDir, "credentials-dir", "/etc/mysqlop/credentials", "mounted credentials Secret")
	fs.StringVar(&o.PodName, "pod-name", o.PodName, "pod name (default $POD_NAME, from the downward API)")
	fs.StringVar(&o.User, "user", "", "--user for the server tools (only when running as root)")
	fs.DurationVar(&o.Timeout, "timeout", 2*time.Minute, "limit for creating the internal accounts")
	peerService := fs.String("peer-service", "", "headless service naming the members: an empty datadir is seeded from a peer's agent when the cluster holds data")
	agentPort := fs.Int("agent-port", 9080, "port of the peers' agents")
	agentCert := fs.String("agent-tls-cert-file", "", "the agents' certificate (PEM): peers are called over TLS and must present it; empty calls them over plain HTTP")
	agentCA := fs.String("agent-ca-file", "", "the cluster's CA bundle (PEM), with TLS on: peers are called over TLS and must present a certificate for their DNS name under it (instead of --agent-tls-cert-file)")
	holdsDataFile := fs.String("holds-data-file", "", "file that exists once the operator recorded that the cluster holds data (default: "+agentapi.FileHoldsData+" beside --config-template)")
	_ = fs.Parse(args)
	if *holdsDataFile == "" {
		// Beside the template, from the same ConfigMap: no new argument in the pod template,
		// whose change would restart every member.
		*holdsDataFile = filepath.Join(filepath.Dir(o.ConfigTemplate), agentapi.FileHoldsData)
	}
	holds, err := agent.ClusterHoldsData(*holdsDataFile)
	if err != nil {
		return err
	}
	o.ClusterHoldsData = holds
	switch mysql.Flavor(*flavor) {
	case mysql.MySQL, mysql.MariaDB:
		o.Flavor = mysql.Flavor(*flavor)
	default:
		return fmt.Errorf("unknown --flavor %q", *flavor)
	}
	if *peerService != "" {
		peers, err := agent.PeerAddresses(ctx, o.PodName, *peerService, *agentPort)
		if err != nil {
			return err
		}
		o.Peers = peers
	}
	switch {
	case *agentCA != "":
		ca, err := os.ReadFile(*agentCA)
		if err != nil {
			return fmt.Errorf("read the CA bundle: %w", err)
		}
		if o.AgentTLS, err = agentapi.ClientTLSFromCA(ca, ""); err != nil {
			return err
		}
	case *agentCert != "":
		tlsConfig, err := agentapi.ClientTLSFromFile(*agentCert)
		if err != nil {
			return err
		}
		o.AgentTLS = tlsConfig
	}
	return agent.Init(ctx, o)
}

func serve(ctx context.Context, args []string) error {
	fs := flagSet("serve")
	flavor := fs.String("flavor", "mysql", "server flavor: mysql or mariadb")
	listen := fs.String("listen", ":9080", "address of the probes and the API")
	metricsListen := fs.String("metrics-listen", ":9104", "address of /metrics")
	socket := fs.String("socket", "/run/mysqld/mysqld.sock", "the server's socket")
	pidFile := fs.String("server-pid-file", "/run/mysqld/mysqld.pid", "the server's pid file (the operator may have the agent kill the server)")
	credDir := fs.String("credentials-dir", "/etc/mysqlop/credentials", "mounted credentials Secret")
	dataDir := fs.String("datadir", "/var/lib/mysql/data", "the server's data directory (physical backups read it)")
	tmpDir := fs.String("tmpdir", os.TempDir(), "scratch directory for backups (the toolbox container must mount it too)")
	toolboxSocket := fs.String("toolbox-socket", "", "socket of the toolbox container that runs the backup tools; empty runs them here")
	certFile := fs.String("tls-cert-file", "", "serving certificate of the API (PEM); empty serves plain HTTP")
	keyFile := fs.String("tls-key-file", "", "private key of the serving certificate (PEM)")
	serverTLSDir := fs.String("server-tls-dir", "", "the server's mounted TLS Secret (tls.crt, tls.key, ca.crt): the server reads them again when they change; empty: the server has no TLS")
	_ = fs.Parse(args)
	f := mysql.Flavor(*flavor)
	if f != mysql.MySQL && f != mysql.MariaDB {
		return fmt.Errorf("unknown --flavor %q", *flavor)
	}
	password, err := agent.ReadCredential(*credDir, agent.FileOperatorPassword)
	if err != nil {
		return err
	}
	token, err := agent.ReadCredential(*credDir, agent.FileAgentToken)
	if err != nil {
		return err
	}
	db, err := mysql.Open(mysql.ConnConfig{Addr: *socket, Socket: true, User: mysql.OperatorUser, Password: password})
	if err != nil {
		return err
	}
	defer db.Close()
	in := &mysql.Instance{DB: db, Flavor: f}
	go agent.DropInstallerAccounts(ctx, in, 2*time.Second)
	go func() {
		if err := agent.RemoveReplacedDatadir(ctx, *dataDir); err != nil {
			klog.ErrorS(err, "Old datadir left on the volume; the agent's next start tries again")
		}
	}()
	if *serverTLSDir != "" {
		go (&agent.TLSReloader{Instance: in, Dir: *serverTLSDir}).Run(ctx, 5*time.Second)
	}
	srv := agent.NewServer(in, token)
	srv.PIDFile = *pidFile
	var tools toolbox.Runner
	if *toolboxSocket != "" {
		tools = toolbox.Client{Socket: *toolboxSocket}
	}
	srv.EnableBackups(ctx, agent.BackupConfig{Flavor: f, Socket: *socket, DataDir: *dataDir,
		User: mysql.OperatorUser, Password: password, TmpDir: *tmpDir, Tools: tools})
	api := httpserver.New(srv.Handler())
	if *certFile != "" {
		// The API carries storage credentials and datadir copies: over TLS, with the
		// cluster's certificate, which the operator and the peers pin.
		if api.TLSConfig, err = agentapi.ServerTLS(*certFile, *keyFile); err != nil {
			return err
		}
	}
	// Metrics carry no secret and are scraped without the cluster's certificate.
	metrics := httpserver.New(srv.MetricsHandler())
	apiLn, err := httpserver.Listen(*listen, httpserver.MaxConnections)
	if err != nil {
		return err
	}
	metricsLn, err := httpserver.Listen(*metricsListen, httpserver.MaxConnections)
	if err != nil {
		apiLn.Close()
		return err
	}
	servers := []*http.Server{api, metrics}
	errc := make(chan error, len(servers))
	go func() {
		if api.TLSConfig != nil {
			errc <- api.ServeTLS(apiLn, "", "")
		} else {
			errc <- api.Serve(apiLn)
		}
	}()
	go func() { errc <- metrics.Serve(metricsLn) }()
	klog.InfoS("Serving", "listen", *listen, "metrics", *metricsListen)
	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdown)
	}
	return nil
}

func toolboxCmd(ctx context.Context, args []string) error {
	fs := flagSet("toolbox")
	socket := fs.String("socket", "/run/mysqld/toolbox.sock", "unix socket to serve on")
	_ = fs.Parse(args)
	l, err := toolbox.Listen(*socket)
	if err != nil {
		return err
	}
	klog.InfoS("Serving backup tools", "socket", *socket, "tools", toolbox.Tools)
	return (&toolbox.Server{Allowed: toolbox.Tools}).Serve(ctx, l)
}
