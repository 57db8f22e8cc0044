package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/test/framework"
)

// prometheusConfig scrapes what the chart's PodMonitor and ServiceMonitor select, discovered
// the same way (Kubernetes pod discovery through the API server): every member's agent on its
// port "metrics" with the label cluster from the pod's mysqlop.io/cluster, and the operator,
// whose per-cluster series keep their own namespace label (honor_labels). It loads the
// chart's alert rules.
const prometheusConfig = `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
- job_name: members
  kubernetes_sd_configs:
  - role: pod
    kubeconfig_file: %q
    namespaces: {names: [%q]}
  relabel_configs:
  - {source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_name, __meta_kubernetes_pod_container_port_name], regex: mysql;metrics, action: keep}
  - {source_labels: [__meta_kubernetes_pod_label_mysqlop_io_cluster], target_label: cluster}
  - {source_labels: [__meta_kubernetes_namespace], target_label: namespace}
  - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
- job_name: operator
  honor_labels: true
  kubernetes_sd_configs:
  - role: pod
    kubeconfig_file: %q
    namespaces: {names: [%q]}
  relabel_configs:
  - {source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_name, __meta_kubernetes_pod_container_port_name], regex: mysql-operator;metrics, action: keep}
`

// promClient queries a Prometheus server's HTTP API.
type promClient struct{ base string }

// query evaluates expr now and returns the vector's samples as labels -> value.
func (p promClient) query(ctx context.Context, expr string) ([]promSample, error) {
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := p.get(ctx, "/api/v1/query?query="+url.QueryEscape(expr), &out); err != nil {
		return nil, err
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", expr, out.Error)
	}
	var samples []promSample
	for _, r := range out.Data.Result {
		var v float64
		s, _ := r.Value[1].(string)
		fmt.Sscan(s, &v)
		samples = append(samples, promSample{r.Metric, v})
	}
	return samples, nil
}

type promSample struct {
	labels map[string]string
	value  float64
}

func (p promClient) get(ctx context.Context, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(into)
}

// startPrometheus runs the Prometheus server of make tools with prometheusConfig and returns
// its client; it stops with the test.
func startPrometheus(t *testing.T) promClient {
	t.Helper()
	bin := filepath.Join(framework.RepoRoot(), "_output", "bin", "prometheus")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no Prometheus server at %s: hack/build-tools.sh prometheus builds it (make test-integration does)", bin)
	}
	dir := t.TempDir()
	rules := filepath.Join(framework.RepoRoot(), "contrib", "charts", "mysql-operator", "files", "alerts.yaml")
	cfg := fmt.Sprintf(prometheusConfig, rules, lc.CP.Kubeconfig, ns, lc.CP.Kubeconfig, operatorNamespace)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("prometheus log:\n%s", b[max(0, len(b)-4000):])
		}
	})
	return promClient{base: "http://" + addr}
}

// prometheusJourney: a real Prometheus server scrapes the members' agents and the operator as the
// chart's monitors do; the per-member and per-cluster series describe the cluster as its
// status does; the chart's alert rules load and none fires on a healthy cluster; and every
// query of the chart's dashboard evaluates.
func prometheusJourney(t *testing.T, primary string) {
	prom := startPrometheus(t)
	sel := fmt.Sprintf(`namespace=%q, cluster=%q`, ns, name)
	one := func(ctx context.Context, expr string) (float64, bool) {
		s, err := prom.query(ctx, expr)
		if err != nil || len(s) != 1 {
			return 0, false
		}
		return s[0].value, true
	}
	started := time.Now()
	eventually(t, time.Minute, "every member's agent and the operator scraped", func(ctx context.Context) (bool, error) {
		members, ok := one(ctx, fmt.Sprintf(`count(mysqlop_agent_mysql_up{%s} == 1)`, sel))
		healthy, ok2 := one(ctx, fmt.Sprintf(`mysqlop_cluster_phase{%s, phase="Healthy"}`, sel))
		return ok && ok2 && members == 3 && healthy == 1, nil
	})
	t.Logf("prometheus: members and operator scraped %v after start", time.Since(started).Round(time.Millisecond))
	ctx := context.Background()
	for _, c := range []struct {
		expr string
		want float64
	}{
		{fmt.Sprintf(`mysqlop_cluster_ready_members{%s}`, sel), 3},
		{fmt.Sprintf(`mysqlop_cluster_writable_primary{%s}`, sel), 1},
		// The primary is the one writable member, and the one waiting for acknowledgements.
		{fmt.Sprintf(`count(mysqlop_agent_mysql_read_only{%s, pod=%q} == 0)`, sel, primary), 1},
		{fmt.Sprintf(`count(mysqlop_agent_mysql_read_only{%s} == 1)`, sel), 2},
		{fmt.Sprintf(`mysqlop_mysql_semi_sync_source_active{%s, pod=%q}`, sel, primary), 1},
		{fmt.Sprintf(`count(mysqlop_agent_replica_io_running{%s} == 1)`, sel), 2},
		{fmt.Sprintf(`count(mysqlop_mysql_uptime_seconds{%s} > 0)`, sel), 3},
		{fmt.Sprintf(`count(mysqlop_cluster_tls_certificate_expiry_timestamp_seconds{%s} > time())`, sel), 1},
		// The failover journey's failover, counted by the operator that made it.
		{fmt.Sprintf(`count(mysqlop_cluster_primary_changes_total{%s, kind="failover"} >= 1)`, sel), 1},
	} {
		if v, ok := one(ctx, c.expr); !ok || v != c.want {
			all, err := prom.query(ctx, c.expr)
			t.Errorf("%s = %v (%v), want %v", c.expr, all, err, c.want)
		}
	}
	// Every member has executed the same transactions (no writer runs now).
	if s, err := prom.query(ctx, fmt.Sprintf(`max(mysqlop_mysql_gtid_sequence{%s}) - min(mysqlop_mysql_gtid_sequence{%s})`, sel, sel)); err != nil || len(s) != 1 || s[0].value != 0 {
		t.Errorf("members' GTID sequences differ: %v %v", s, err)
	}

	// The chart's rules are loaded and evaluate without error; on a healthy cluster none fires
	// (MySQLClusterFailedOver is info and needs two samples around the failover, which
	// happened before this server started).
	var rules struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	time.Sleep(3 * time.Second) // a few rule evaluations
	if err := prom.get(ctx, "/api/v1/rules", &rules); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range rules.Data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				t.Errorf("rule %s: health %q: %s", r.Name, r.Health, r.LastError)
			}
		}
	}
	if n != 13 {
		t.Errorf("%d rules loaded, want the chart's 13", n)
	}
	if firing, err := prom.query(ctx, `ALERTS{alertstate="firing"}`); err != nil || len(firing) > 0 {
		t.Errorf("alerts firing on a healthy cluster: %v %v", firing, err)
	}

	// Every dashboard query evaluates; those about state every healthy cluster has return data.
	b, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "contrib", "charts", "mysql-operator", "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	// Empty here: no backup was taken yet, nothing is archived, no reconcile failed (or one
	// did, but its increase over a minute window can be zero).
	mayBeEmpty := map[string]bool{"Last successful backup age": true, "Last backup size and duration": true, "Binlog archive lag": true,
		"Reconcile errors": true, "Primary changes": true, "Semi-sync wait per commit": true, "Buffer pool hit ratio": true}
	r := strings.NewReplacer("$namespace", ns, "$cluster", name, "$__rate_interval", "1m")
	var empty []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			s, err := prom.query(ctx, r.Replace(tg.Expr))
			switch {
			case err != nil:
				t.Errorf("dashboard panel %q: %v", p.Title, err)
			case len(s) == 0 && !mayBeEmpty[p.Title]:
				t.Errorf("dashboard panel %q: no data for %s", p.Title, r.Replace(tg.Expr))
			case len(s) == 0:
				empty = append(empty, p.Title)
			}
		}
	}
	t.Logf("prometheus: %d dashboard panels evaluated (empty, as expected here: %v)", len(dash.Panels), empty)
}
