package agent_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/archive"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
	"github.com/mysqlop/mysql-operator/test/s3"
)

// The archive API on a real server and a real S3 server: once configured, the agent archives
// every transaction within about the interval (it closes the current file itself), the same
// configuration again changes nothing, a read-only server idles, and DELETE stops it.
func TestArchiveAPIOnMariaDB(t *testing.T) {
	s := mariadb.Start(t, 1, mariadb.Options{})[0]
	gw := s3.Start(t)
	ctx := context.Background()
	if err := s.Admin().ExecSQL(ctx, mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	srv := agent.NewServer(s.Admin(), "agent-token")
	srv.EnableBackups(ctx, agent.BackupConfig{Flavor: mysql.MariaDB, Socket: s.Socket, DataDir: filepath.Join(s.Dir, "data"),
		User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir()})
	api := httptest.NewServer(srv.Handler())
	defer api.Close()
	cfg := gw.Config("")
	req := agentapi.ArchiveRequest{Prefix: "ns/db/binlog", IntervalSeconds: 1, Storage: gw.AgentConfig("")}
	c := &agentapi.Client{BaseURL: api.URL, Token: "agent-token"}
	if _, err := (&agentapi.Client{BaseURL: api.URL, Token: "wrong"}).ConfigureArchive(ctx, req); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
	st, err := c.ConfigureArchive(ctx, req)
	if err != nil || st.Config == "" {
		t.Fatalf("configure: %+v %v", st, err)
	}
	if again, err := c.ConfigureArchive(ctx, req); err != nil || again.Config != st.Config {
		t.Fatalf("configure again: %+v %v", again, err)
	}

	if err := s.Admin().ExecSQL(ctx, "INSERT INTO shop.t VALUES (1)", "INSERT INTO shop.t VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	var pos string
	if err := s.Admin().DB.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for st.End != pos {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("not archived within 20 s: state %+v, server at %s", st, pos)
		}
		time.Sleep(200 * time.Millisecond)
		if st, err = c.Archive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("archived in %v (interval 1 s)", time.Since(start).Round(100*time.Millisecond))
	metrics := httptest.NewServer(srv.MetricsHandler())
	defer metrics.Close()
	scrape := func() string {
		t.Helper()
		resp, err := http.Get(metrics.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	m := scrape()
	for _, want := range []string{"mysqlop_agent_binlog_archive_lag_seconds ", "mysqlop_agent_binlog_archive_lag_bytes ",
		"mysqlop_agent_binlog_archive_failing 0", "mysqlop_agent_binlog_archive_last_transaction_timestamp_seconds "} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q:\n%s", want, m)
		}
	}
	if st.LastArchived == "" || st.LastArchiveTime == nil || st.Error != "" || st.Idle {
		t.Errorf("state %+v", st)
	}
	store, err := storage.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := archive.LoadIndex(ctx, store, "ns/db/binlog", mysql.MariaDB)
	if err != nil || archive.Check(ctx, store, "ns/db/binlog", ix) != nil {
		t.Fatalf("index %+v: %v", ix, err)
	}

	if err := s.Admin().ExecSQL(ctx, mysql.MariaDB.SetReadOnly(true)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !st.Idle && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		st, _ = c.Archive(ctx)
	}
	if !st.Idle {
		t.Errorf("a read-only server does not idle: %+v", st)
	}
	if m := scrape(); strings.Contains(m, "mysqlop_agent_binlog_archive_") {
		t.Errorf("a server that does not archive exports archive metrics:\n%s", m)
	}
	if err := c.StopArchive(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Archive(ctx); err != nil || st.Config != "" {
		t.Errorf("after DELETE: %+v %v", st, err)
	}
}
