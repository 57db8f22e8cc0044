package agent_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

// The checksum job on a real server: it answers the server's table checksums, the same ID
// is idempotent, a bad token and a missing ID are refused, an unknown job is not found.
func TestChecksumAPIOnMariaDB(t *testing.T) {
	s := mariadb.Start(t, 1, mariadb.Options{})[0]
	ctx := context.Background()
	if err := s.Admin().ExecSQL(ctx, mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v TEXT)",
		"INSERT INTO shop.t VALUES (1, 'a'), (2, 'b')", "CREATE TABLE shop.empty (id INT)"); err != nil {
		t.Fatal(err)
	}
	srv := agent.NewServer(s.Admin(), "agent-token")
	srv.EnableBackups(ctx, agent.BackupConfig{Flavor: mysql.MariaDB, Socket: s.Socket, DataDir: filepath.Join(s.Dir, "data"),
		User: mariadb.AdminUser, Password: mariadb.AdminPassword, TmpDir: t.TempDir(), Tools: mariadb.Toolbox(t)})
	api := httptest.NewServer(srv.Handler())
	defer api.Close()
	req := agentapi.ChecksumRequest{ID: "uid-verify"}
	if _, err := (&agentapi.Client{BaseURL: api.URL, Token: "wrong"}).StartChecksum(ctx, req); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
	c := &agentapi.Client{BaseURL: api.URL, Token: "agent-token"}
	if _, err := c.StartChecksum(ctx, agentapi.ChecksumRequest{}); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("no id: %v", err)
	}
	if _, err := c.Checksum(ctx, "unknown"); !errors.Is(err, agentapi.ErrBackupNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
	if _, err := c.StartChecksum(ctx, req); err != nil {
		t.Fatal(err)
	}
	st := waitJob(t, req.ID, c.Checksum)
	want, err := s.Admin().Checksums(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != agentapi.BackupComplete || len(st.Checksums) != 2 || !slices.Equal(st.Checksums, want) {
		t.Fatalf("checksum job %+v, want checksums %+v", st, want)
	}
	again, err := c.StartChecksum(ctx, req)
	if err != nil || again.Phase != agentapi.BackupComplete || !slices.Equal(again.Checksums, want) {
		t.Fatalf("same ID again: %+v %v", again, err)
	}
}
