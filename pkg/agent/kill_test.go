package agent_test

import (
	"context"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// The agent kills its pod's server on request, found through the server's pid file, and
// refuses a pid file naming any other process.
func TestKillServerOnMariaDB(t *testing.T) {
	cr := maps.Clone(creds)
	cr[agent.FileAgentToken] = "token"
	m := newMember(t, cr)
	if err := agent.Init(context.Background(), m.opts); err != nil {
		t.Fatal(err)
	}
	m.start(t)
	pidFile := filepath.Join(filepath.Dir(m.sock), "mysqld.pid")
	db := m.conn(t, mysql.OperatorUser, cr[agent.FileOperatorPassword])
	srv := agent.NewServer(&mysql.Instance{DB: db, Flavor: mysql.MariaDB}, "token")
	api := httptest.NewServer(srv.Handler())
	defer api.Close()
	client := &agentapi.Client{BaseURL: api.URL, Token: "token"}
	ctx := context.Background()

	if err := client.KillServer(ctx); err == nil || !strings.Contains(err.Error(), "no server pid file") {
		t.Fatalf("kill without a pid file: %v", err)
	}
	// A pid file naming another process (this test) is refused.
	other := filepath.Join(t.TempDir(), "other.pid")
	if err := os.WriteFile(other, []byte(fmt.Sprint(os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.PIDFile = other
	if err := client.KillServer(ctx); err == nil || !strings.Contains(err.Error(), "not the server") {
		t.Fatalf("kill of another process: %v", err)
	}
	if err := (&agentapi.Client{BaseURL: api.URL, Token: "wrong"}).KillServer(ctx); err == nil {
		t.Fatal("a wrong token was accepted")
	}

	srv.PIDFile = pidFile
	if err := client.KillServer(ctx); err != nil {
		t.Fatalf("kill: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); db.PingContext(ctx) == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server still answers after the kill")
		}
		db.SetMaxIdleConns(0)
	}
}
