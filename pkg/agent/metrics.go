package agent

import (
	"context"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// The server's own figures, read at scrape time: the core of what mysqld_exporter gives,
// named after Prometheus' conventions (base units, _total for counters) under mysqlop_mysql_.
// The member is the scrape target (its pod), so the series carry no labels of their own
// besides the ones that split a family.

// statusMetric is one series taken from SHOW GLOBAL STATUS: the first of keys the server
// has (names differ between MariaDB and MySQL 8.4), multiplied by scale (0 means 1).
type statusMetric struct {
	desc   *prometheus.Desc
	typ    prometheus.ValueType
	keys   []string
	labels []string
	scale  float64
}

// desc describes mysqlop_mysql_<name>.
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("mysqlop_mysql_"+name, help, labels, nil)
}

var (
	descCommands = desc("commands_total", "Statements executed, by command (Com_*).", "command")
	descRowOps   = desc("row_operations_total", "Rows read, inserted, updated and deleted: InnoDB's counters where the server has them (MySQL), else the handler's (MariaDB 10.11 has no InnoDB row counters; these include temporary tables).", "operation")
	descPoolData = desc("innodb_buffer_pool_bytes", "InnoDB buffer pool bytes holding data, and of those the dirty ones.", "state")
	descSemiEn   = desc("semi_sync_source_enabled", "1 when semi-sync is switched on for the server as a primary (rpl_semi_sync_*_enabled).")
	descSemiOn   = desc("semi_sync_source_active", "1 while the primary waits for semi-sync acknowledgements (0 when it fell back to asynchronous).")
	descSemiRepl = desc("semi_sync_replica_active", "1 while the replica acknowledges semi-sync transactions.")

	descMaxConns = desc("max_connections", "The server's max_connections.")
	descPoolSize = desc("innodb_buffer_pool_size_bytes", "The server's innodb_buffer_pool_size.")
	descBinlogs  = desc("binlog_files", "Binary log files on the server.")
	descBinSize  = desc("binlog_size_bytes", "Total size of the server's binary log files.")
	descGTID     = desc("gtid_sequence", "Highest executed GTID sequence number, per MariaDB domain or MySQL source UUID.", "domain")
)

var statusMetrics = func() []statusMetric {
	c, g := prometheus.CounterValue, prometheus.GaugeValue
	one := func(name, help string, typ prometheus.ValueType, keys ...string) statusMetric {
		return statusMetric{desc: desc(name, help), typ: typ, keys: keys}
	}
	out := []statusMetric{
		one("uptime_seconds", "Seconds since mysqld started.", g, "Uptime"),
		one("connections_total", "Connection attempts, successful or not.", c, "Connections"),
		one("aborted_connects_total", "Failed connection attempts.", c, "Aborted_connects"),
		one("aborted_clients_total", "Connections dropped without a proper close.", c, "Aborted_clients"),
		one("threads_connected", "Open client connections.", g, "Threads_connected"),
		one("threads_running", "Threads not sleeping.", g, "Threads_running"),
		one("max_used_connections", "Most connections open at once since start.", g, "Max_used_connections"),
		one("queries_total", "Statements executed, including those in stored programs.", c, "Queries"),
		one("questions_total", "Statements sent by clients.", c, "Questions"),
		one("slow_queries_total", "Statements slower than long_query_time.", c, "Slow_queries"),
		one("received_bytes_total", "Bytes received from clients.", c, "Bytes_received"),
		one("sent_bytes_total", "Bytes sent to clients.", c, "Bytes_sent"),
		one("innodb_buffer_pool_read_requests_total", "Logical reads from the InnoDB buffer pool.", c, "Innodb_buffer_pool_read_requests"),
		one("innodb_buffer_pool_reads_total", "Logical reads the buffer pool missed and read from disk.", c, "Innodb_buffer_pool_reads"),
		one("innodb_row_lock_waits_total", "Times a row lock had to be waited for.", c, "Innodb_row_lock_waits"),
		one("innodb_data_read_bytes_total", "Bytes InnoDB read from its files.", c, "Innodb_data_read"),
		one("innodb_data_written_bytes_total", "Bytes InnoDB wrote to its files.", c, "Innodb_data_written"),
		one("semi_sync_source_clients", "Replicas connected with semi-sync.", g, "Rpl_semi_sync_source_clients", "Rpl_semi_sync_master_clients"),
		one("semi_sync_source_acknowledged_transactions_total", "Commits a replica acknowledged.", c, "Rpl_semi_sync_source_yes_tx", "Rpl_semi_sync_master_yes_tx"),
		one("semi_sync_source_unacknowledged_transactions_total", "Commits no replica acknowledged in time (asynchronous).", c, "Rpl_semi_sync_source_no_tx", "Rpl_semi_sync_master_no_tx"),
		one("semi_sync_source_waits_total", "Commits that waited for an acknowledgement.", c, "Rpl_semi_sync_source_tx_waits", "Rpl_semi_sync_master_tx_waits"),
		{desc: desc("semi_sync_source_wait_seconds_total", "Time commits spent waiting for acknowledgements."), typ: c,
			keys: []string{"Rpl_semi_sync_source_tx_wait_time", "Rpl_semi_sync_master_tx_wait_time"}, scale: 1e-6},
	}
	for _, cmd := range []string{"select", "insert", "update", "delete", "replace", "commit", "rollback", "begin"} {
		out = append(out, statusMetric{desc: descCommands, typ: c, keys: []string{"Com_" + cmd}, labels: []string{cmd}})
	}
	for op, handler := range map[string]string{"read": "Rows_read", "inserted": "Handler_write", "updated": "Handler_update", "deleted": "Handler_delete"} {
		out = append(out, statusMetric{desc: descRowOps, typ: c, keys: []string{"Innodb_rows_" + op, handler}, labels: []string{op}})
	}
	for _, st := range []string{"data", "dirty"} {
		out = append(out, statusMetric{desc: descPoolData, typ: g, keys: []string{"Innodb_buffer_pool_bytes_" + st}, labels: []string{st}})
	}
	return out
}()

// fromStatus turns SHOW GLOBAL STATUS into metrics; a figure the server lacks is left out.
func fromStatus(status map[string]string) []prometheus.Metric {
	var out []prometheus.Metric
	for _, m := range statusMetrics {
		for _, k := range m.keys {
			s, ok := status[k]
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				break
			}
			if m.scale != 0 {
				v *= m.scale
			}
			out = append(out, prometheus.MustNewConstMetric(m.desc, m.typ, v, m.labels...))
			break
		}
	}
	on := func(keys ...string) (float64, bool) {
		for _, k := range keys {
			if s, ok := status[k]; ok {
				return b(s == "ON"), true
			}
		}
		return 0, false
	}
	if v, ok := on("Rpl_semi_sync_source_status", "Rpl_semi_sync_master_status"); ok {
		out = append(out, prometheus.MustNewConstMetric(descSemiOn, prometheus.GaugeValue, v))
	}
	if v, ok := on("Rpl_semi_sync_replica_status", "Rpl_semi_sync_slave_status"); ok {
		out = append(out, prometheus.MustNewConstMetric(descSemiRepl, prometheus.GaugeValue, v))
	}
	return out
}

// gtidSequences is the highest sequence number per domain (MariaDB) or source UUID (MySQL)
// of an executed GTID set.
func gtidSequences(executed mysql.GTIDSet) map[string]float64 {
	out := map[string]float64{}
	switch s := executed.(type) {
	case mysql.MariaDBPosition:
		for d, g := range s {
			out[strconv.FormatUint(uint64(d), 10)] = float64(g.Seq)
		}
	case mysql.MySQLGTIDSet:
		for uuid, ivs := range s {
			if len(ivs) > 0 {
				out[strings.ToLower(uuid)] = float64(ivs[len(ivs)-1].End)
			}
		}
	}
	return out
}

// serverMetrics reads the server's status, limits and binary logs for one scrape. What
// cannot be read is left out (up already says whether mysqld answers).
func (s *Server) serverMetrics(ctx context.Context, st *mysql.Status) []prometheus.Metric {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var out []prometheus.Metric
	if status, err := s.in.GlobalStatus(ctx); err == nil {
		out = fromStatus(status)
	}
	if l, err := s.in.Limits(ctx); err == nil {
		out = append(out,
			prometheus.MustNewConstMetric(descMaxConns, prometheus.GaugeValue, float64(l.MaxConnections)),
			prometheus.MustNewConstMetric(descPoolSize, prometheus.GaugeValue, float64(l.BufferPoolBytes)))
	}
	if logs, err := s.in.BinaryLogs(ctx); err == nil {
		var size int64
		for _, l := range logs {
			size += l.Size
		}
		out = append(out,
			prometheus.MustNewConstMetric(descBinlogs, prometheus.GaugeValue, float64(len(logs))),
			prometheus.MustNewConstMetric(descBinSize, prometheus.GaugeValue, float64(size)))
	}
	out = append(out, prometheus.MustNewConstMetric(descSemiEn, prometheus.GaugeValue, b(st.SemiSyncSource)))
	for domain, seq := range gtidSequences(st.Executed) {
		out = append(out, prometheus.MustNewConstMetric(descGTID, prometheus.GaugeValue, seq, domain))
	}
	return out
}

// serverDescs are the descriptions serverMetrics' metrics use, for Describe.
func serverDescs() []*prometheus.Desc {
	seen := map[*prometheus.Desc]bool{}
	out := []*prometheus.Desc{descSemiEn, descSemiOn, descSemiRepl, descMaxConns, descPoolSize, descBinlogs, descBinSize, descGTID}
	for _, m := range statusMetrics {
		if !seen[m.desc] {
			seen[m.desc] = true
			out = append(out, m.desc)
		}
	}
	return out
}

func b(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// MetricNames lists the name of every metric the agent may serve, so that dashboards and
// alert rules can be checked against it.
func MetricNames() []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		(&collector{}).Describe(ch)
		close(ch)
	}()
	var out []string
	for d := range ch {
		out = append(out, DescName(d))
	}
	return out
}

// DescName is the metric name a Desc describes (client_golang does not export it).
func DescName(d *prometheus.Desc) string {
	s := d.String()
	_, s, _ = strings.Cut(s, `fqName: "`)
	s, _, _ = strings.Cut(s, `"`)
	return s
}
