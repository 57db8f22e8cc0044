package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeOnMariaDB(t *testing.T) {
	servers := mariadb.Start(t, 2, mariadb.Options{})
	primary, replica := servers[0], servers[1]
	const token = "agent-Token-9"
	api := httptest.NewServer(agent.NewServer(replica.Admin(), token).Handler())
	defer api.Close()
	metrics := httptest.NewServer(agent.NewServer(replica.Admin(), token).MetricsHandler())
	defer metrics.Close()

	if code, _ := get(t, api.URL+"/healthz", ""); code != 200 {
		t.Errorf("healthz %d", code)
	}
	// A fresh member is read-only and not replicating: not ready until the operator sets it up.
	if code, body := get(t, api.URL+"/readyz", ""); code != 503 || !strings.Contains(body, "not replicating") {
		t.Errorf("readyz of an unconfigured member: %d %q", code, body)
	}
	f := mariadb.Flavor()
	if err := replica.Admin().Exec(context.Background(),
		f.ChangeSource(mysql.Source{Host: "127.0.0.1", Port: primary.Port, User: mariadb.ReplUser, Password: mariadb.ReplPassword, ConnectRetry: 1}),
		mysql.Statement{Query: f.StartReplica()}); err != nil {
		t.Fatal(err)
	}
	deadline := 0
	for code, _ := get(t, api.URL+"/readyz", ""); code != 200; code, _ = get(t, api.URL+"/readyz", "") {
		if deadline++; deadline > 200 {
			t.Fatal("replica never became ready")
		}
		time.Sleep(50 * time.Millisecond)
	}

	if code, _ := get(t, api.URL+"/api/v1/status", ""); code != 401 {
		t.Errorf("status without a token: %d", code)
	}
	if code, _ := get(t, api.URL+"/api/v1/status", "wrong"); code != 401 {
		t.Errorf("status with a wrong token: %d", code)
	}
	code, body := get(t, api.URL+"/api/v1/status", token)
	var st agentapi.StatusJSON
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("status: %d %s", code, body)
	}
	if !st.ReadOnly || !st.Ready || st.Replica == nil || st.Replica.SourcePort != primary.Port || st.ServerID != uint32(replica.ServerID()) {
		t.Errorf("status %+v", st)
	}
	if strings.Contains(body, mariadb.ReplPassword) || strings.Contains(body, mariadb.AdminPassword) {
		t.Error("the status API shows a password")
	}

	// Something to count on the replica: a row replicated from the primary.
	if err := primary.Admin().ExecSQL(context.Background(), "CREATE DATABASE metrics_probe", "CREATE TABLE metrics_probe.t (id INT PRIMARY KEY)", "INSERT INTO metrics_probe.t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var m string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, m = get(t, metrics.URL+"/metrics", ""); metricValue(m, `mysqlop_mysql_row_operations_total{operation="inserted"}`) >= 1 {
			break
		}
	}
	for _, want := range []string{"mysqlop_agent_mysql_up 1", "mysqlop_agent_ready 1", "mysqlop_agent_replica_io_running 1", "mysqlop_agent_mysql_read_only 1",
		"mysqlop_mysql_semi_sync_replica_active 0", "mysqlop_mysql_semi_sync_source_active 0", "mysqlop_mysql_semi_sync_source_enabled 0"} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	// The server's own figures, read from this real server.
	if v := metricValue(m, "mysqlop_mysql_uptime_seconds"); v < 0 {
		t.Error("no mysqlop_mysql_uptime_seconds")
	}
	for _, series := range []string{"mysqlop_mysql_connections_total", "mysqlop_mysql_threads_connected",
		"mysqlop_mysql_queries_total", `mysqlop_mysql_commands_total{command="select"}`, `mysqlop_mysql_row_operations_total{operation="inserted"}`,
		`mysqlop_mysql_innodb_buffer_pool_bytes{state="data"}`, "mysqlop_mysql_innodb_buffer_pool_size_bytes", "mysqlop_mysql_max_connections",
		"mysqlop_mysql_binlog_files", "mysqlop_mysql_binlog_size_bytes", `mysqlop_mysql_gtid_sequence{domain="0"}`} {
		if v := metricValue(m, series); v <= 0 {
			t.Errorf("%s = %v, want > 0", series, v)
		}
	}
	if problems, err := promlint.New(strings.NewReader(m)).Lint(); err != nil || len(problems) > 0 {
		t.Errorf("metric names and help break Prometheus conventions: %v %+v", err, problems)
	}

	replica.Kill()
	if code, body := get(t, api.URL+"/readyz", ""); code != 503 || !strings.Contains(body, "does not answer") {
		t.Errorf("readyz with mysqld down: %d %q", code, body)
	}
	if code, _ := get(t, api.URL+"/healthz", ""); code != 200 {
		t.Errorf("healthz with mysqld down: %d (the agent itself is fine)", code)
	}
	if _, m := get(t, metrics.URL+"/metrics", ""); !strings.Contains(m, "mysqlop_agent_mysql_up 0") {
		t.Error("metrics do not show mysqld down")
	}
}

// /readyz answers without a token: its reason never quotes a replication error, which can
// hold row values.
func TestReadyKeepsReplicationErrorsOutOfItsReason(t *testing.T) {
	st := &mysql.Status{ReadOnly: true, Replica: &mysql.ReplicaStatus{IORunning: true,
		LastSQLError: "Could not execute Write_rows event on table app.cards; Duplicate entry '4111-1111-1111-1111' for key 'PRIMARY'"}}
	ready, why := agent.Ready(st)
	if ready || strings.Contains(why, "4111") || strings.Contains(why, "Duplicate") {
		t.Errorf("Ready = %v, %q", ready, why)
	}
}

// metricValue is the value of the series named exactly (name and labels) in a text
// exposition, or -1 when it is absent.
func metricValue(exposition, series string) float64 {
	for _, line := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}
