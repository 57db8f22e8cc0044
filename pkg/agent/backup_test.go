package agent_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/backup/executor"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
	"github.com/mysqlop/mysql-operator/test/s3"
)

// The backup API on a real server and a real S3 server: a logical backup lands in the
// bucket with its size, checksum and GTID; the same ID is idempotent; a bad token is refused;
// a failed backup leaves no object and says why.
func TestBackupAPIOnMariaDB(t *testing.T) {
	s := mariadb.Start(t, 1, mariadb.Options{})[0]
	gw := s3.Start(t)
	ctx := context.Background()
	if err := s.Admin().ExecSQL(ctx, mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY)", "INSERT INTO shop.t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	srv := agent.NewServer(s.Admin(), "agent-token")
	srv.EnableBackups(ctx, agent.BackupConfig{Flavor: mysql.MariaDB, Socket: s.Socket, DataDir: filepath.Join(s.Dir, "data"),
		User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir(), Tools: mariadb.Toolbox(t)})
	api := httptest.NewServer(srv.Handler())
	defer api.Close()
	cfg := gw.Config("db")
	req := agentapi.BackupRequest{ID: "uid-1", Method: executor.Logical, Object: "ns/b1/dump.sql.zst", Storage: gw.AgentConfig("db")}

	if _, err := (&agentapi.Client{BaseURL: api.URL, Token: "wrong"}).StartBackup(ctx, req); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
	c := &agentapi.Client{BaseURL: api.URL, Token: "agent-token"}
	st, err := c.StartBackup(ctx, req)
	if err != nil || st.Phase != agentapi.BackupRunning || st.Location != "s3://backups/db/ns/b1/dump.sql.zst" {
		t.Fatalf("start: %+v %v", st, err)
	}
	st = waitBackup(t, c, "uid-1")
	if st.Phase != agentapi.BackupComplete || st.Size == 0 || len(st.SHA256) != 64 || st.GTID == "" || st.CompletionTime == nil {
		t.Fatalf("finished backup %+v", st)
	}
	again, err := c.StartBackup(ctx, req)
	if err != nil || again.Phase != agentapi.BackupComplete {
		t.Fatalf("same ID again: %+v %v", again, err)
	}
	store, _ := storage.New(cfg)
	r, err := store.Get(ctx, "ns/b1/dump.sql.zst")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := executor.Decompress(r)
	dump, _ := io.ReadAll(d)
	r.Close()
	if !strings.Contains(string(dump), "INSERT INTO `t` VALUES") {
		t.Fatal("the stored dump lacks the table's rows")
	}

	// Wrong storage credentials: Failed, with the reason, and no object.
	bad := req
	bad.ID, bad.Object = "uid-2", "ns/b2/dump.sql.zst"
	bad.Storage.SecretAccessKey = "not-the-secret"
	if _, err := c.StartBackup(ctx, bad); err != nil {
		t.Fatal(err)
	}
	st = waitBackup(t, c, "uid-2")
	if st.Phase != agentapi.BackupFailed || st.Error == "" || strings.Contains(st.Error, "not-the-secret") {
		t.Fatalf("failed backup %+v", st)
	}
	if ok, _ := store.Exists(ctx, "ns/b2/dump.sql.zst"); ok {
		t.Error("a failed backup left an object")
	}
	if _, err := c.Backup(ctx, "unknown"); !errors.Is(err, agentapi.ErrBackupNotFound) {
		t.Errorf("unknown backup: %v", err)
	}
}

func waitBackup(t *testing.T, c *agentapi.Client, id string) *agentapi.BackupState {
	t.Helper()
	return waitJob(t, id, c.Backup)
}

// waitJob asks get about job id until it no longer runs (2 minutes at most).
func waitJob(t *testing.T, id string, get func(context.Context, string) (*agentapi.BackupState, error)) *agentapi.BackupState {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Phase != agentapi.BackupRunning {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still running after 2 minutes", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
