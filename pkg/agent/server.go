package agent

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// Server is the agent's HTTP side: probes and the operator's API on one listener, metrics on
// another.
//
//	GET /healthz        200 while the agent runs (the server's own liveness is a TCP probe)
//	GET /readyz         200 when mysqld answers and plays a role correctly: writable (a
//	                    primary), or read-only with both replication threads running (a replica)
//	GET /api/v1/status  the instance's state as JSON; needs "Authorization: Bearer <agent token>"
//	POST /api/v1/backups, GET /api/v1/backups/{id}
//	                    start a backup to S3 and read its state (same token; see EnableBackups)
//	POST /api/v1/restores, GET /api/v1/restores/{id}
//	                    load a logical backup from S3 into the server, or stage a physical
//	                    one beside the datadir (one job at a time)
//	POST /api/v1/restores/{id}/commit, DELETE /api/v1/restores/{id}
//	                    put a staged physical restore in place at the next pod start, or
//	                    discard it (restore.go)
//	GET /api/v1/seed    stream a physical copy of the server to a new member (seed.go)
//	POST /api/v1/reseed mark the datadir for re-seeding at the next start (reseed.go)
//	POST /api/v1/server/kill
//	                    SIGKILL the server (kill.go)
//	PUT, GET, DELETE /api/v1/archive
//	                    archive the binary logs while the server is writable (archive.go)
//	GET /metrics        (metrics listener) up, read_only, replication threads, lag
type Server struct {
	in      *mysql.Instance
	token   []byte
	timeout time.Duration
	reg     *prometheus.Registry
	backups *backups
	// archiving is the binary log archiver the operator configured (archive.go).
	archiving archiving
	// PIDFile is the server's pid file, for POST /api/v1/server/kill ("" refuses it).
	PIDFile string
}

// NewServer serves in; token is the agent token from the credentials Secret.
func NewServer(in *mysql.Instance, token string) *Server {
	s := &Server{in: in, token: []byte(token), timeout: 3 * time.Second, reg: prometheus.NewRegistry()}
	s.reg.MustRegister(&collector{s: s})
	return s
}

// Handler serves the probes and the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /api/v1/status", s.status)
	mux.HandleFunc("POST /api/v1/backups", s.postBackup)
	mux.HandleFunc("GET /api/v1/backups/{id}", s.getBackup)
	mux.HandleFunc("POST /api/v1/restores", s.postRestore)
	mux.HandleFunc("GET /api/v1/restores/{id}", s.getRestore)
	mux.HandleFunc("POST /api/v1/restores/{id}/commit", s.commitRestore)
	mux.HandleFunc("DELETE /api/v1/restores/{id}", s.discardRestore)
	mux.HandleFunc("POST /api/v1/checksums", s.postChecksum)
	mux.HandleFunc("GET /api/v1/checksums/{id}", s.getBackup)
	mux.HandleFunc("GET /api/v1/seed", s.seed)
	mux.HandleFunc("POST /api/v1/reseed", s.postReseed)
	mux.HandleFunc("POST /api/v1/server/kill", s.killServer)
	mux.HandleFunc("PUT /api/v1/archive", s.putArchive)
	mux.HandleFunc("GET /api/v1/archive", s.getArchive)
	mux.HandleFunc("DELETE /api/v1/archive", s.deleteArchive)
	return mux
}

// MetricsHandler serves the metrics.
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	return mux
}

func (s *Server) read(ctx context.Context) (*mysql.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.in.Status(ctx)
}

// Ready says whether an instance in state st plays a role correctly, and if not, why.
func Ready(st *mysql.Status) (bool, string) {
	if !st.ReadOnly {
		return true, "primary"
	}
	r := st.Replica
	switch {
	case r == nil:
		return false, "read-only and not replicating: waiting for the operator to configure it"
	case !r.IORunning || !r.SQLRunning:
		// Not the errors' text: /readyz answers without a token, and a replication error can
		// quote row values. They are in the authenticated status.
		return false, "replication threads are not running"
	}
	return true, "replica"
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	st, err := s.read(r.Context())
	if err != nil {
		http.Error(w, "mysqld does not answer", http.StatusServiceUnavailable)
		return
	}
	if ok, why := Ready(st); !ok {
		http.Error(w, why, http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

// checkToken reports whether r carries the agent token.
func (s *Server) checkToken(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && len(s.token) > 0 && subtle.ConstantTimeCompare([]byte(got), s.token) == 1
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	if !s.checkToken(r) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	st, err := s.read(r.Context())
	if err != nil {
		http.Error(w, "mysqld does not answer", http.StatusServiceUnavailable)
		return
	}
	ready, reason := Ready(st)
	out := agentapi.StatusJSON{
		ServerID: st.ServerID, Version: st.Version, ReadOnly: st.ReadOnly, SuperReadOnly: st.SuperReadOnly,
		Executed: st.Executed.String(), Purged: st.Purged.String(), SemiSyncSource: st.SemiSyncSource,
		SemiSyncReplica: st.SemiSyncReplica, SemiSyncSourceActive: st.SemiSyncSourceActive, Ready: ready, Reason: reason,
	}
	if rs := st.Replica; rs != nil {
		out.Replica = &agentapi.ReplicaJSON{SourceHost: rs.SourceHost, SourcePort: rs.SourcePort, IORunning: rs.IORunning, SQLRunning: rs.SQLRunning,
			LastIOError: rs.LastIOError, LastSQLError: rs.LastSQLError, Retrieved: rs.Retrieved.String(), LagSeconds: rs.LagSeconds}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// collector reads the instance at scrape time, so metrics are never stale.
type collector struct{ s *Server }

var (
	descUp       = prometheus.NewDesc("mysqlop_agent_mysql_up", "1 when mysqld answers.", nil, nil)
	descReadOnly = prometheus.NewDesc("mysqlop_agent_mysql_read_only", "1 when the instance is read-only.", nil, nil)
	descReady    = prometheus.NewDesc("mysqlop_agent_ready", "1 when the instance plays a role correctly.", nil, nil)
	descIO       = prometheus.NewDesc("mysqlop_agent_replica_io_running", "1 when the replication IO thread runs.", nil, nil)
	descSQL      = prometheus.NewDesc("mysqlop_agent_replica_sql_running", "1 when the replication SQL thread runs.", nil, nil)
	descLag      = prometheus.NewDesc("mysqlop_agent_replica_lag_seconds", "Seconds behind the source.", nil, nil)
	// The archive's metrics exist while archiving is configured and the server archives
	// (it is writable); a replica reports none.
	descArchiveLag = prometheus.NewDesc("mysqlop_agent_binlog_archive_lag_seconds",
		"Age of the oldest transaction not archived yet (0 when every transaction is).", nil, nil)
	descArchiveLagBytes = prometheus.NewDesc("mysqlop_agent_binlog_archive_lag_bytes",
		"Size of the binary logs that hold transactions not archived yet.", nil, nil)
	descArchiveLast = prometheus.NewDesc("mysqlop_agent_binlog_archive_last_transaction_timestamp_seconds",
		"Unix time of the newest archived transaction: the end of the recoverable window.", nil, nil)
	descArchiveFailing = prometheus.NewDesc("mysqlop_agent_binlog_archive_failing",
		"1 when the last archiving round failed or found a gap in the chain.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descReadOnly, descReady, descIO, descSQL, descLag,
		descArchiveLag, descArchiveLagBytes, descArchiveLast, descArchiveFailing} {
		ch <- d
	}
	for _, d := range serverDescs() {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.s.archiving.mu.Lock()
	a := c.s.archiving.state
	c.s.archiving.mu.Unlock()
	if a.Config != "" && !a.RoundTime.IsZero() && !a.Idle {
		ch <- prometheus.MustNewConstMetric(descArchiveLag, prometheus.GaugeValue, a.LagSeconds)
		ch <- prometheus.MustNewConstMetric(descArchiveLagBytes, prometheus.GaugeValue, float64(a.LagBytes))
		ch <- prometheus.MustNewConstMetric(descArchiveFailing, prometheus.GaugeValue, b(a.Error != "" || a.Gap))
		if a.Until != nil {
			ch <- prometheus.MustNewConstMetric(descArchiveLast, prometheus.GaugeValue, float64(a.Until.Unix()))
		}
	}
	st, err := c.s.read(context.Background())
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, b(err == nil))
	if err != nil {
		return
	}
	ready, _ := Ready(st)
	ch <- prometheus.MustNewConstMetric(descReadOnly, prometheus.GaugeValue, b(st.ReadOnly))
	ch <- prometheus.MustNewConstMetric(descReady, prometheus.GaugeValue, b(ready))
	if r := st.Replica; r != nil {
		ch <- prometheus.MustNewConstMetric(descIO, prometheus.GaugeValue, b(r.IORunning))
		ch <- prometheus.MustNewConstMetric(descSQL, prometheus.GaugeValue, b(r.SQLRunning))
		if r.LagSeconds != nil {
			ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(*r.LagSeconds))
		}
	}
	for _, m := range c.s.serverMetrics(context.Background(), st) {
		ch <- m
	}
}
