package agent

// Binary log archiving (PUT, GET, DELETE /api/v1/archive): the operator configures every
// member; the archiver (pkg/archive) uploads only while the server is writable, so the primary
// archives and the others wait, and a promoted replica takes over without being told.

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/archive"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
)

// archiving holds the archiver the operator configured, if any.
type archiving struct {
	mu     sync.Mutex
	state  agentapi.ArchiveState
	cancel context.CancelFunc
}

// roundPeriod is how often the archiver looks: a quarter of the interval, within [1 s, 15 s].
func roundPeriod(interval time.Duration) time.Duration {
	return min(max(interval/4, time.Second), 15*time.Second)
}

func (s *Server) putArchive(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	if s.backups == nil {
		http.Error(w, "backups are not enabled on this agent", http.StatusServiceUnavailable)
		return
	}
	var req agentapi.ArchiveRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, "invalid request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.IntervalSeconds <= 0 || !objectPattern.MatchString(req.Prefix) {
		http.Error(w, "intervalSeconds and prefix are required", http.StatusBadRequest)
		return
	}
	store, err := storage.New(req.Storage.Config())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	config := req.ID()

	a := &s.archiving
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state.Config != config {
		if a.cancel != nil {
			a.cancel()
		}
		ctx, cancel := context.WithCancel(s.backups.ctx)
		a.cancel = cancel
		a.state = agentapi.ArchiveState{Config: config}
		arch := &archive.Archiver{In: s.in, Dir: filepath.Clean(s.backups.cfg.DataDir), Store: store, Prefix: req.Prefix,
			Interval: time.Duration(req.IntervalSeconds) * time.Second, RetainFrom: req.RetainFrom}
		go a.run(ctx, arch, config)
		klog.InfoS("Binary log archiving configured", "prefix", req.Prefix, "interval", arch.Interval)
	}
	writeJSON(w, http.StatusOK, a.state)
}

// run archives every roundPeriod until ctx ends, recording each round in the state.
func (a *archiving) run(ctx context.Context, arch *archive.Archiver, config string) {
	t := time.NewTicker(roundPeriod(arch.Interval))
	defer t.Stop()
	for {
		rep, err := arch.Round(ctx)
		a.mu.Lock()
		if ctx.Err() == nil && a.state.Config == config {
			st := &a.state
			st.Idle, st.Gap, st.Error, st.RoundTime = rep.Idle, st.Gap || rep.Gap, "", time.Now().UTC()
			if rep.End != "" {
				st.End = rep.End
			}
			if !rep.Until.IsZero() {
				from, until := rep.From, rep.Until
				st.From, st.Until, st.Start = &from, &until, rep.Start
			}
			st.LagSeconds, st.LagBytes = rep.LagSeconds, rep.LagBytes
			if len(rep.Pruned) > 0 {
				klog.InfoS("Deleted archived binary logs older than the oldest backup", "objects", len(rep.Pruned), "retainFrom", arch.RetainFrom)
			}
			if n := len(rep.Archived); n > 0 {
				now := st.RoundTime
				st.LastArchived, st.LastArchiveTime = rep.Archived[n-1], &now
			}
			if err != nil {
				st.Error = err.Error()
				klog.ErrorS(err, "Binary log archiving round failed")
			}
		}
		a.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) getArchive(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.archiving.mu.Lock()
	defer s.archiving.mu.Unlock()
	writeJSON(w, http.StatusOK, s.archiving.state)
}

func (s *Server) deleteArchive(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	a := &s.archiving
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
		klog.InfoS("Binary log archiving stopped")
	}
	a.state = agentapi.ArchiveState{}
	w.WriteHeader(http.StatusNoContent)
}
