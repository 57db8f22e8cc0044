package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
)

// Re-seeding replaces a diverged member's data with a copy of a healthy peer. The operator
// asks the member's agent (POST /api/v1/reseed), which writes a marker on the data volume,
// then deletes the pod. Init, before the server starts again, sets the old datadir aside,
// seeds the member from a peer exactly as a new member (seed.go), and only once the copy is in
// place removes the old datadir and then the marker. So from the moment the marker exists
// the old data is never served again, and a copy that fails is retried by the next init with
// the old datadir still aside.

// reseedMarker is the marker's content.
type reseedMarker struct {
	Reason    string    `json:"reason"`
	Requested time.Time `json:"requested"`
}

func reseedMarkerPath(dataDir string) string {
	return filepath.Join(filepath.Dir(dataDir), "reseed.json")
}

// divergedPath is where init sets a datadir marked for re-seeding aside until the copy is in.
func divergedPath(dataDir string) string { return filepath.Join(filepath.Dir(dataDir), "diverged") }

func (s *Server) postReseed(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	var req agentapi.ReseedRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		http.Error(w, "invalid request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := MarkForReseed(s.backups.cfg.DataDir, req.Reason); err != nil {
		klog.ErrorS(err, "Marking the datadir for re-seeding")
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	klog.InfoS("The datadir is marked for re-seeding at the next start", "reason", req.Reason)
	w.WriteHeader(http.StatusNoContent)
}

// MarkForReseed writes the marker that makes the next init re-seed dataDir. It is durable
// (written to a temporary file, synced, renamed, directory synced) and idempotent.
func MarkForReseed(dataDir, reason string) error {
	b, err := json.Marshal(reseedMarker{Reason: reason, Requested: time.Now().UTC()})
	if err != nil {
		return err
	}
	path := reseedMarkerPath(dataDir)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// readReseedMarker returns nil, nil when no re-seed was asked for.
func readReseedMarker(dataDir string) (*reseedMarker, error) {
	b, err := os.ReadFile(reseedMarkerPath(dataDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the re-seed marker: %w", err)
	}
	var m reseedMarker
	if err := json.Unmarshal(b, &m); err != nil {
		// A marker cut short still asks for a re-seed.
		m.Reason = "unreadable marker"
	}
	return &m, nil
}

// setDivergedAside moves a datadir marked for re-seeding out of the way (keeping what an
// earlier, failed attempt set aside: that is the diverged data, a datadir seen now is a copy
// cut short).
func setDivergedAside(dataDir string) error {
	if _, err := os.Stat(dataDir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	aside := divergedPath(dataDir)
	if _, err := os.Stat(aside); err == nil {
		if err := os.RemoveAll(dataDir); err != nil {
			return fmt.Errorf("remove a partial copy: %w", err)
		}
		return syncDir(filepath.Dir(dataDir))
	}
	if err := os.Rename(dataDir, aside); err != nil {
		return fmt.Errorf("set the diverged datadir aside: %w", err)
	}
	return syncDir(filepath.Dir(dataDir))
}

// finishReseed removes the diverged datadir, then the marker: once the copy is in place.
func finishReseed(dataDir string) error {
	if err := os.RemoveAll(divergedPath(dataDir)); err != nil {
		return fmt.Errorf("remove the diverged datadir: %w", err)
	}
	if err := os.Remove(reseedMarkerPath(dataDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the re-seed marker: %w", err)
	}
	return syncDir(filepath.Dir(dataDir))
}
