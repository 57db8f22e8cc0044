// Package alerts holds the promtool cases of the chart's alert rules (alerts_test.yaml, run
// by `make test-alerts`) and checks that the rules and the dashboard name only metrics the
// operator and the agent serve.
package alerts

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/metrics"
)

func served() []string {
	names := agent.MetricNames()
	ch := make(chan *prometheus.Desc)
	go func() {
		metrics.Registry.Describe(ch)
		close(ch)
	}()
	for d := range ch {
		names = append(names, agent.DescName(d))
	}
	return names
}

func TestRulesAndDashboardNameServedMetrics(t *testing.T) {
	names := served()
	if !slices.Contains(names, "mysqlop_cluster_phase") || !slices.Contains(names, "mysqlop_mysql_uptime_seconds") {
		t.Fatalf("the served names lack known metrics: %v", names)
	}
	metric := regexp.MustCompile(`mysqlop_[a-z_]+`)
	for _, f := range []string{"../../contrib/charts/mysql-operator/files/alerts.yaml", "../../contrib/charts/mysql-operator/files/dashboard.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		used := metric.FindAllString(string(b), -1)
		if len(used) < 10 {
			t.Fatalf("%s: found only %v", f, used)
		}
		for _, m := range used {
			if !slices.Contains(names, m) {
				t.Errorf("%s uses %s, which nothing serves", f, m)
			}
		}
	}
}
