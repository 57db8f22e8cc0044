package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"path"
	"regexp"
	"sync"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/backup/executor"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/toolbox"
)

// BackupConfig says how the agent reaches its server's files for backups.
type BackupConfig struct {
	Flavor  mysql.Flavor
	Socket  string
	DataDir string
	// User and Password are the account the backup tools connect as.
	User     string
	Password string
	// TmpDir holds scratch files; it must be private to the pod.
	TmpDir string
	// Tools runs the backup tools: in a pod, the toolbox container's client (the tools ship in
	// the server image); nil runs them as children of the agent.
	Tools toolbox.Runner
	// Timeout bounds one backup.
	Timeout time.Duration
}

var objectPattern = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,512}$`)

// backups runs one job (a backup or a restore) at a time and remembers the last few.
type backups struct {
	cfg BackupConfig
	ctx context.Context
	// in is the local server, for its version and read-only state (nil in some tests).
	in   *mysql.Instance
	mu   sync.Mutex
	jobs map[string]*agentapi.BackupState
	// order keeps the IDs oldest first, to forget old jobs.
	order   []string
	running string
	// cancel stops the running job.
	cancel context.CancelFunc
}

// EnableBackups serves the backup and restore API for the server's files; jobs stop when ctx
// ends.
func (s *Server) EnableBackups(ctx context.Context, cfg BackupConfig) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 6 * time.Hour
	}
	s.backups = &backups{cfg: cfg, ctx: ctx, in: s.in, jobs: map[string]*agentapi.BackupState{}}
}

// start runs work as job id unless a job of that ID exists (its state is returned) or
// another job runs (409). It returns a copy of the state: the job's goroutine writes the
// original under b.mu once it ends, which may be before the answer is written.
func (b *backups) start(id, location string, timeoutSeconds int64, work func(ctx context.Context, st *agentapi.BackupState) error) (agentapi.BackupState, int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st, ok := b.jobs[id]; ok {
		return *st, http.StatusOK, nil
	}
	if err := b.busy(); err != nil {
		return agentapi.BackupState{}, http.StatusConflict, err
	}
	st := &agentapi.BackupState{ID: id, Phase: agentapi.BackupRunning, Location: location, StartTime: time.Now().UTC()}
	b.jobs[id] = st
	b.order = append(b.order, id)
	if len(b.order) > 16 {
		delete(b.jobs, b.order[0])
		b.order = b.order[1:]
	}
	b.running = id
	limit := b.cfg.Timeout
	if t := time.Duration(timeoutSeconds) * time.Second; t > 0 && t < limit {
		limit = t
	}
	ctx, cancel := context.WithTimeout(b.ctx, limit)
	b.cancel = cancel
	go func() {
		defer cancel()
		result := *st
		err := work(ctx, &result)
		b.mu.Lock()
		defer b.mu.Unlock()
		now := time.Now().UTC()
		result.CompletionTime = &now
		result.Phase = agentapi.BackupComplete
		if err != nil {
			result.Phase, result.Error = agentapi.BackupFailed, err.Error()
		}
		*st = result
		b.running, b.cancel = "", nil
	}()
	return *st, http.StatusAccepted, nil
}

// busy says which job holds the agent's one job slot, nil when it is free. b.mu is held.
func (b *backups) busy() error {
	if b.running != "" {
		return fmt.Errorf("job %s is running", b.running)
	}
	return nil
}

// backup streams a backup of the server into object of store.
func (b *backups) backup(req agentapi.BackupRequest, store *storage.Store) func(context.Context, *agentapi.BackupState) error {
	return func(ctx context.Context, st *agentapi.BackupState) error {
		res, err := executor.Run(ctx, executor.Request{
			Flavor: b.cfg.Flavor, Method: req.Method, Socket: b.cfg.Socket, DataDir: b.cfg.DataDir,
			User: b.cfg.User, Password: b.cfg.Password, TmpDir: b.cfg.TmpDir, Tools: b.cfg.Tools,
		}, func(r io.Reader) error { _, err := store.Put(ctx, req.Object, r); return err })
		if err != nil {
			// Leave no partial object behind: a failed multipart upload is aborted by the
			// client, and a finished upload of a failed tool run is removed here.
			delCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = store.Delete(delCtx, req.Object)
			return err
		}
		st.Size, st.SHA256, st.GTID = res.Size, res.SHA256, res.GTID
		return nil
	}
}

// restore loads a logical backup from object of store into the server.
func (b *backups) restore(req agentapi.BackupRequest, store *storage.Store) func(context.Context, *agentapi.BackupState) error {
	return func(ctx context.Context, st *agentapi.BackupState) error {
		if req.SHA256 != "" {
			if err := verify(ctx, store, req.Object, req.SHA256); err != nil {
				return err
			}
		}
		r, err := store.Get(ctx, req.Object)
		if err != nil {
			return err
		}
		defer r.Close()
		undo, err := b.allowOperatorWrites(ctx)
		if err != nil {
			return err
		}
		defer undo()
		res, err := executor.Restore(ctx, executor.Request{
			Flavor: b.cfg.Flavor, Method: req.Method, Socket: b.cfg.Socket,
			User: b.cfg.User, Password: b.cfg.Password, TmpDir: b.cfg.TmpDir, Tools: b.cfg.Tools,
		}, r)
		st.Size = res.Size
		return err
	}
}

// allowOperatorWrites lets the operator's account write to a fenced MySQL primary for a
// restore: super_read_only binds every account, so it is lifted while read_only, which binds
// the applications, stays on. MariaDB's read_only does not bind the operator's account.
func (b *backups) allowOperatorWrites(ctx context.Context) (undo func(), err error) {
	if b.cfg.Flavor != mysql.MySQL || b.in == nil {
		return func() {}, nil
	}
	var on bool
	if err := b.in.DB.QueryRowContext(ctx, "SELECT @@GLOBAL.super_read_only").Scan(&on); err != nil || !on {
		return func() {}, err
	}
	if err := b.in.ExecSQL(ctx, "SET GLOBAL super_read_only = OFF"); err != nil {
		return nil, fmt.Errorf("allow the restore to write: %w", err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = b.in.ExecSQL(ctx, "SET GLOBAL super_read_only = ON")
	}, nil
}

// verify reads object and compares its SHA-256 with want.
func verify(ctx context.Context, store *storage.Store, object, want string) error {
	r, err := store.Get(ctx, object)
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	return drainAndCheck(h, r, store.Location(object), want)
}

// drainAndCheck reads the rest of r into h, which has hashed what was read before, and
// compares the object's SHA-256 with want.
func drainAndCheck(h hash.Hash, r io.Reader, location, want string) error {
	if _, err := io.Copy(h, r); err != nil {
		return fmt.Errorf("read %s to verify it: %w", location, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%s is corrupted: its SHA-256 is %s, the backup recorded %s; nothing was loaded", location, got, want)
	}
	return nil
}

func (b *backups) get(id string) (agentapi.BackupState, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, ok := b.jobs[id]
	if !ok {
		return agentapi.BackupState{}, false
	}
	return *st, true
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if !s.checkToken(r) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return false
	}
	if s.backups == nil {
		http.Error(w, "backups are not enabled on this agent", http.StatusNotImplemented)
		return false
	}
	return true
}

func (s *Server) postBackup(w http.ResponseWriter, r *http.Request) {
	if req, store, ok := s.jobRequest(w, r); ok {
		s.startJob(w, req, store, s.backups.backup(req, store))
	}
}

// postRestore starts a restore. A logical backup is loaded into the server (the operator
// sends it to the primary only, so that the restored data replicates to every replica); a
// physical one is staged beside the datadir (the operator sends it to every member).
func (s *Server) postRestore(w http.ResponseWriter, r *http.Request) {
	req, store, ok := s.jobRequest(w, r)
	if !ok {
		return
	}
	switch req.Method {
	case executor.Physical:
		s.startJob(w, req, store, s.backups.stage(req, store))
		return
	case agentapi.MethodReplay:
		s.startJob(w, req, store, s.backups.replay(req, store))
		return
	}
	s.startJob(w, req, store, s.backups.restore(req, store))
}

// jobRequest authenticates and reads a backup or restore request; on a false return the
// answer was written.
func (s *Server) jobRequest(w http.ResponseWriter, r *http.Request) (agentapi.BackupRequest, *storage.Store, bool) {
	var req agentapi.BackupRequest
	if !s.authorized(w, r) {
		return req, nil, false
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, "bad request body", http.StatusBadRequest)
		return req, nil, false
	}
	if req.ID == "" || !validJob(req) {
		http.Error(w, "id, method (logical or physical) and object, or method replay and its objects, are required", http.StatusBadRequest)
		return req, nil, false
	}
	store, err := storage.New(req.Storage.Config())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return req, nil, false
	}
	return req, store, true
}

// validJob checks a request's method and object names.
func validJob(req agentapi.BackupRequest) bool {
	switch req.Method {
	case executor.Logical, executor.Physical:
		return objectPattern.MatchString(req.Object)
	case agentapi.MethodReplay:
		if req.Replay == nil || len(req.Replay.Objects) == 0 {
			return false
		}
		for _, o := range req.Replay.Objects {
			if !objectPattern.MatchString(o) {
				return false
			}
		}
		return true
	}
	return false
}

func (s *Server) startJob(w http.ResponseWriter, req agentapi.BackupRequest, store *storage.Store, work func(context.Context, *agentapi.BackupState) error) {
	object := req.Object
	if req.Replay != nil {
		object = path.Dir(req.Replay.Objects[0])
	}
	st, code, err := s.backups.start(req.ID, store.Location(object), req.TimeoutSeconds, work)
	if err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	writeJSON(w, code, st)
}

func (s *Server) getBackup(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	st, ok := s.backups.get(r.PathValue("id"))
	if !ok {
		http.Error(w, "no such backup: the agent restarted or forgot it", http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
