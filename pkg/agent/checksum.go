package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
)

// postChecksum starts a job that checksums the server's tables (a verification restore
// compares two scratch servers by them). It runs as a job, like a backup, because it reads
// every row.
func (s *Server) postChecksum(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	var req agentapi.ChecksumRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.ID == "" {
		http.Error(w, "a request body with an id is required", http.StatusBadRequest)
		return
	}
	st, code, err := s.backups.start(req.ID, "", req.TimeoutSeconds, s.backups.checksum)
	if err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	writeJSON(w, code, st)
}

// checksum is the work of a checksum job.
func (b *backups) checksum(ctx context.Context, st *agentapi.BackupState) error {
	if b.in == nil {
		return errors.New("the agent has no connection to the server")
	}
	sums, err := b.in.Checksums(ctx)
	st.Checksums = sums
	return err
}
