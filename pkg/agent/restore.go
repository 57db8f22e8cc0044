package agent

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/backup/executor"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// A physical restore replaces a member's datadir, which cannot happen under a running server.
// It is staged on the data volume beside the datadir, so that putting it in place is a rename
// on one filesystem:
//
//	<volume>/restore/data           the prepared datadir, unpacked from the backup
//	<volume>/restore/restore.json   the restore's ID, its GTID position, whether it is committed
//	<volume>/restore-applied.json   written by init once it put a committed restore in place
//	<volume>/restore-replaced       the datadir a restore replaced, removed by the agent
//	                                 once the server runs (RemoveReplacedDatadir)
//
// The agent stages while the server runs (POST /api/v1/restores, method physical); once every
// member staged, the operator commits each (POST /api/v1/restores/{id}/commit) and deletes the
// pods; init, before the server starts, swaps the committed datadir in, resets replication and
// the GTID state to the backup's position and sets the internal accounts from the mounted
// credentials. Staging that was never committed is thrown away by init or by the next staging,
// so a pod that restarts during a restore keeps its data.
const (
	stagingName   = "restore"
	stagedRecord  = "restore.json"
	appliedRecord = "restore-applied.json"
	replacedName  = "restore-replaced"
)

// restoreRecord is the content of restore.json and restore-applied.json.
type restoreRecord struct {
	ID        string     `json:"id"`
	GTID      string     `json:"gtid"`
	Committed bool       `json:"committed,omitempty"`
	Applied   *time.Time `json:"applied,omitempty"`
}

func stagingDir(dataDir string) string { return filepath.Join(filepath.Dir(dataDir), stagingName) }

func stagedPath(dataDir string) string { return filepath.Join(stagingDir(dataDir), stagedRecord) }

func appliedPath(dataDir string) string { return filepath.Join(filepath.Dir(dataDir), appliedRecord) }

func replacedDir(dataDir string) string { return filepath.Join(filepath.Dir(dataDir), replacedName) }

// RemoveReplacedDatadir removes the datadir a physical restore replaced, if one is left. The
// agent runs it as it starts, beside the server: init only moves the old datadir aside,
// because deleting it (2.4 s for about 2 GiB in the backup benchmark, far longer for large
// datadirs) would keep the restored server from starting. Until then the old files take the space they took
// before the restore, no more.
func RemoveReplacedDatadir(ctx context.Context, dataDir string) error {
	dir := replacedDir(dataDir)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	start := time.Now()
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the datadir a restore replaced: %w", err)
	}
	klog.FromContext(ctx).Info("Removed the datadir a restore replaced", "dir", dir, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// readRecord returns nil, nil when path does not exist.
func readRecord(path string) (*restoreRecord, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var r restoreRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &r, nil
}

// writeRecord replaces path atomically and durably: after a crash it holds the old record or
// the new one.
func writeRecord(path string, r restoreRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// stage unpacks and prepares a physical backup beside the datadir: the server keeps running
// on its own data until the operator commits the restore and the pod restarts. A failure
// removes what was unpacked.
func (b *backups) stage(req agentapi.BackupRequest, store *storage.Store) func(context.Context, *agentapi.BackupState) error {
	return func(ctx context.Context, st *agentapi.BackupState) error {
		rec, err := readRecord(stagedPath(b.cfg.DataDir))
		if err != nil {
			return err
		}
		switch {
		case rec != nil && rec.ID == req.ID:
			// Staged already (asked again after the agent restarted): keep it, committed or not.
			st.GTID = rec.GTID
			return nil
		case rec != nil && rec.Committed:
			return fmt.Errorf("restore %s is committed and waits for the pod to restart", rec.ID)
		}
		// Whatever is staged is an earlier restore that was never committed.
		root := stagingDir(b.cfg.DataDir)
		if err := os.RemoveAll(root); err != nil {
			return fmt.Errorf("remove an earlier staging: %w", err)
		}
		if err := b.unpack(ctx, req, store, root, st); err != nil {
			_ = os.RemoveAll(root)
			return err
		}
		return nil
	}
}

func (b *backups) unpack(ctx context.Context, req agentapi.BackupRequest, store *storage.Store, root string, st *agentapi.BackupState) error {
	data := filepath.Join(root, "data")
	if err := os.MkdirAll(data, 0o750); err != nil {
		return fmt.Errorf("create the staging directory: %w", err)
	}
	r, err := store.Get(ctx, req.Object)
	if err != nil {
		return err
	}
	defer r.Close()
	// Verified while it is unpacked, not in a read of its own before: what is unpacked goes
	// beside the datadir, never into the server, and is removed when the sums differ.
	var src io.Reader = r
	h := sha256.New()
	if req.SHA256 != "" {
		src = io.TeeReader(r, h)
	}
	res, err := executor.Extract(ctx, b.cfg.Tools, b.cfg.Flavor, src, data)
	st.Size = res.Size
	if req.SHA256 != "" {
		// The rest of the object too (after the compressed stream's end, or a failure): a
		// corrupted object is the error that counts.
		if verr := drainAndCheck(h, r, store.Location(req.Object), req.SHA256); verr != nil {
			return verr
		}
	}
	if err != nil {
		return err
	}
	info, err := executor.ReadBackupInfo(data)
	if err != nil {
		return err
	}
	if b.in != nil {
		running, err := b.in.Status(ctx)
		if err != nil {
			return fmt.Errorf("read the server's version: %w", err)
		}
		if !executor.SameSeries(info.ServerVersion, running.Version) {
			return fmt.Errorf("the backup was taken on server version %s and this member runs %s: a physical backup restores only into the same major and minor version",
				info.ServerVersion, running.Version)
		}
	}
	if _, err := executor.Prepare(ctx, b.cfg.Tools, b.cfg.Flavor, data, 0); err != nil {
		return err
	}
	st.GTID = info.GTID
	return writeRecord(filepath.Join(root, stagedRecord), restoreRecord{ID: req.ID, GTID: info.GTID})
}

// restoreOnDisk is what the data volume says about restore id: staged, committed or applied
// (nil when it knows nothing of it).
func (b *backups) restoreOnDisk(id string) (*agentapi.BackupState, error) {
	applied, err := readRecord(appliedPath(b.cfg.DataDir))
	if err != nil {
		return nil, err
	}
	if applied != nil && applied.ID == id {
		return &agentapi.BackupState{ID: id, Phase: agentapi.RestoreApplied, GTID: applied.GTID, CompletionTime: applied.Applied}, nil
	}
	staged, err := readRecord(stagedPath(b.cfg.DataDir))
	if err != nil || staged == nil || staged.ID != id {
		return nil, err
	}
	phase := agentapi.RestoreStaged
	if staged.Committed {
		phase = agentapi.RestoreCommitted
	}
	return &agentapi.BackupState{ID: id, Phase: phase, GTID: staged.GTID}, nil
}

// getRestore answers GET /api/v1/restores/{id}: the job while it runs or when it failed,
// otherwise what the data volume says (so that the answer survives the agent's restart), or
// the finished job (a logical restore).
func (s *Server) getRestore(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	id := r.PathValue("id")
	st, ok := s.backups.get(id)
	if ok && st.Phase != agentapi.BackupComplete {
		writeJSON(w, http.StatusOK, st)
		return
	}
	disk, err := s.backups.restoreOnDisk(id)
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	case disk != nil && ok:
		st.Phase, st.GTID = disk.Phase, disk.GTID
		writeJSON(w, http.StatusOK, st)
	case disk != nil:
		writeJSON(w, http.StatusOK, disk)
	case ok:
		writeJSON(w, http.StatusOK, st)
	default:
		http.Error(w, "no such restore: the agent restarted or forgot it", http.StatusNotFound)
	}
}

// commitRestore answers POST /api/v1/restores/{id}/commit: the staged restore is put in place
// at the pod's next start. Committing twice, or after it was applied, is not an error.
func (s *Server) commitRestore(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	id := r.PathValue("id")
	b := s.backups
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running == id {
		http.Error(w, "restore "+id+" is still being staged", http.StatusConflict)
		return
	}
	st, err := b.restoreOnDisk(id)
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	case st == nil:
		http.Error(w, "restore "+id+" is not staged on this member", http.StatusNotFound)
		return
	case st.Phase == agentapi.RestoreStaged:
		if err := writeRecord(stagedPath(b.cfg.DataDir), restoreRecord{ID: id, GTID: st.GTID, Committed: true}); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		st.Phase = agentapi.RestoreCommitted
	}
	writeJSON(w, http.StatusOK, st)
}

// discardRestore answers DELETE /api/v1/restores/{id}: staging of restore id stops and what
// it unpacked is removed; the member keeps its own data.
func (s *Server) discardRestore(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	id := r.PathValue("id")
	b := s.backups
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running == id && b.cancel != nil {
		b.cancel() // the job removes its staging as it fails
	}
	delete(b.jobs, id)
	rec, err := readRecord(stagedPath(b.cfg.DataDir))
	if err == nil && rec != nil && rec.ID == id {
		err = os.RemoveAll(stagingDir(b.cfg.DataDir))
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ApplyStagedRestore runs before the server starts (Init calls it first; tests that run
// servers themselves call it between a stop and a start): it puts a committed physical
// restore in place of o.DataDir and removes staging that was never committed. cnf is the
// server's configuration file. Every step can be repeated, so a pod that dies half way
// finishes the job at its next start.
func ApplyStagedRestore(ctx context.Context, o InitOptions, cnf string) error {
	logger := klog.FromContext(ctx)
	root := stagingDir(o.DataDir)
	rec, err := readRecord(stagedPath(o.DataDir))
	if err != nil {
		return err
	}
	if rec == nil || !rec.Committed {
		if _, err := os.Stat(root); err == nil {
			logger.Info("Discarding a restore that was staged but never committed", "dir", root)
			if err := os.RemoveAll(root); err != nil {
				return fmt.Errorf("discard uncommitted restore: %w", err)
			}
		}
		return nil
	}
	staged := filepath.Join(root, "data")
	// How long the reset on a temporary server and the swap took (0 when a previous start
	// did them), for the log.
	var resetTook time.Duration
	if _, err := os.Stat(staged); err == nil {
		creds, err := readCredentials(o.CredentialsDir)
		if err != nil {
			return err
		}
		// The live datadir stays untouched until the restored one is ready to start.
		resetStart := time.Now()
		if err := resetRestored(ctx, o, cnf, staged, rec.GTID, creds); err != nil {
			return fmt.Errorf("prepare restore %s: %w", rec.ID, err)
		}
		// Moved aside, not deleted: the agent deletes it once the server runs.
		replaced := replacedDir(o.DataDir)
		if _, err := os.Stat(o.DataDir); err == nil {
			// An earlier restore's old datadir the agent has not removed yet goes first.
			if err := os.RemoveAll(replaced); err != nil {
				return fmt.Errorf("restore %s: %w", rec.ID, err)
			}
			if err := os.Rename(o.DataDir, replaced); err != nil {
				return fmt.Errorf("restore %s: move the old datadir aside: %w", rec.ID, err)
			}
		}
		if err := os.Rename(staged, o.DataDir); err != nil {
			return fmt.Errorf("restore %s: move the restored datadir in place: %w", rec.ID, err)
		}
		if err := syncDir(filepath.Dir(o.DataDir)); err != nil {
			return err
		}
		resetTook = time.Since(resetStart)
	}
	now := time.Now().UTC()
	if err := writeRecord(appliedPath(o.DataDir), restoreRecord{ID: rec.ID, GTID: rec.GTID, Committed: true, Applied: &now}); err != nil {
		return err
	}
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("restore %s: remove the staging directory: %w", rec.ID, err)
	}
	logger.Info("Restored the datadir from a physical backup", "restore", rec.ID, "gtid", rec.GTID, "reset", resetTook.Round(time.Millisecond))
	return nil
}

// resetRestored prepares a restored datadir to run as this member: the grant tables are
// bypassed (the root password in them is the source cluster's) and reloaded, the internal
// accounts get this cluster's passwords, the installer's leftover accounts are dropped,
// replication from the source is forgotten and the binary logs and GTID state start at the
// backup's position. Nothing is binary-logged.
func resetRestored(ctx context.Context, o InitOptions, cnf, dataDir, gtid string, c credentials) error {
	return withTempServer(ctx, o, cnf, dataDir, []string{"--skip-grant-tables"}, func(srv *tempServer) error {
		var version string
		if err := srv.in.DB.QueryRowContext(srv.ctx, "SELECT VERSION()").Scan(&version); err != nil {
			return fmt.Errorf("read the server's version: %w", err)
		}
		f := o.Flavor
		stmts := []mysql.Statement{{Query: "FLUSH PRIVILEGES"}, {Query: "SET SESSION sql_log_bin = 0"}}
		stmts = append(stmts, accountStatements(c)...)
		stmts = append(stmts, mysql.Statement{Query: f.StopReplica()}, mysql.Statement{Query: f.ResetReplicaAll()})
		stmts = append(stmts, f.ResetToGTID(version, gtid)...)
		if err := srv.in.Exec(srv.ctx, stmts...); err != nil {
			return fmt.Errorf("reset the restored server: %w", err)
		}
		// A datadir initialised before init dropped them still holds the installer's
		// passwordless root accounts: they must not come along.
		_, err := srv.in.DropInstallerAccounts(srv.ctx)
		return err
	})
}
