package agent

import (
	"maps"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// values flattens metrics to "name{label=value,...}" -> value.
func values(t *testing.T, ms []prometheus.Metric) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range ms {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		name := m.Desc().String()
		name = name[strings.Index(name, `"`)+1:]
		name = name[:strings.Index(name, `"`)]
		for _, l := range pb.GetLabel() {
			name += "{" + l.GetName() + "=" + l.GetValue() + "}"
		}
		v := pb.GetGauge().GetValue() + pb.GetCounter().GetValue()
		out[name] = v
	}
	return out
}

func TestFromStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status map[string]string
		want   map[string]float64
	}{
		{"MariaDB names: master/slave semi-sync, handler row counters, wait time in microseconds",
			map[string]string{"Uptime": "42", "Rpl_semi_sync_master_status": "ON", "Rpl_semi_sync_slave_status": "OFF",
				"Rpl_semi_sync_master_tx_wait_time": "2500000", "Handler_write": "7", "Com_commit": "3"},
			map[string]float64{"mysqlop_mysql_uptime_seconds": 42, "mysqlop_mysql_semi_sync_source_active": 1, "mysqlop_mysql_semi_sync_replica_active": 0,
				"mysqlop_mysql_semi_sync_source_wait_seconds_total": 2.5, "mysqlop_mysql_row_operations_total{operation=inserted}": 7,
				"mysqlop_mysql_commands_total{command=commit}": 3}},
		{"MySQL 8.4 names: source/replica semi-sync, InnoDB row counters win over the handler's",
			map[string]string{"Rpl_semi_sync_source_status": "OFF", "Rpl_semi_sync_source_clients": "2", "Innodb_rows_inserted": "5", "Handler_write": "9"},
			map[string]float64{"mysqlop_mysql_semi_sync_source_active": 0, "mysqlop_mysql_semi_sync_source_clients": 2,
				"mysqlop_mysql_row_operations_total{operation=inserted}": 5}},
		{"a value that is not a number is left out", map[string]string{"Uptime": "soon"}, map[string]float64{}},
	} {
		if got := values(t, fromStatus(tc.status)); !maps.Equal(got, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, got, tc.want)
		}
	}
}

func TestGTIDSequences(t *testing.T) {
	maria, _ := mysql.ParseMariaDBPosition("0-1-100,2-3-7")
	my, _ := mysql.ParseMySQLGTIDSet("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:11-18")
	for _, tc := range []struct {
		set  mysql.GTIDSet
		want map[string]float64
	}{
		{maria, map[string]float64{"0": 100, "2": 7}},
		{my, map[string]float64{"3e11fa47-71ca-11e1-9e33-c80aa9429562": 18}},
	} {
		if got := gtidSequences(tc.set); !maps.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.set, got, tc.want)
		}
	}
}
