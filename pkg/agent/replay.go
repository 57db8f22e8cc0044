package agent

import (
	"context"
	"fmt"
	"io"
	"iter"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/backup/executor"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/binlog"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// replay applies the archived binary logs of req.Replay to the server, after the backup
// restored at req.Replay.Start, up to its stop: each object is streamed from the store, cut
// at the stop in Go (pkg/binlog: exact, and free of the tool's time zone) and applied through
// the flavor's binlog tool and client, skipping what the backup and the files before it
// applied (an archived file can overlap the one before it after a failover). The first
// object cut at the stop is the last one read.
func (b *backups) replay(req agentapi.BackupRequest, store *storage.Store) func(context.Context, *agentapi.BackupState) error {
	return func(ctx context.Context, st *agentapi.BackupState) error {
		rr := req.Replay
		f := b.cfg.Flavor
		stop, err := replayStop(f, rr)
		if err != nil {
			return err
		}
		reached, err := mysql.ParseGTIDSet(f, rr.Start)
		if err != nil {
			return fmt.Errorf("replay start: %w", err)
		}
		undo, err := b.allowOperatorWrites(ctx)
		if err != nil {
			return err
		}
		defer undo()
		stopped := false
		sources := func(yield func(executor.Source) bool) {
			for _, obj := range rr.Objects {
				if stopped {
					return
				}
				skip := reached
				src := executor.Source{Start: skip.String(), Write: func(w io.Writer) error {
					r, err := store.Get(ctx, obj)
					if err != nil {
						return err
					}
					defer r.Close()
					// Counts only what the tool applies: transactions in skip are left out.
					res, err := binlog.Cut(w, r, f, func(g mysql.GTIDSet, t time.Time) bool {
						if stop(g, t) {
							return true
						}
						if !skip.Contains(g) {
							st.Transactions++
							last := t
							st.LastTransactionTime = &last
						}
						return false
					})
					if err != nil {
						return fmt.Errorf("read %s: %w", store.Location(obj), err)
					}
					st.Size += res.Size
					reached = reached.Union(res.End)
					stopped = res.Stopped
					return nil
				}}
				if !yield(src) {
					return
				}
			}
		}
		err = executor.Replay(ctx, executor.Request{
			Flavor: f, Socket: b.cfg.Socket, User: b.cfg.User, Password: b.cfg.Password,
			TmpDir: b.cfg.TmpDir, Tools: b.cfg.Tools,
		}, iter.Seq[executor.Source](sources))
		st.GTID = reached.String()
		return err
	}
}

// replayStop is the cut of req: a transaction after StopTime or outside StopGTID stops the
// replay before it.
func replayStop(f mysql.Flavor, req *agentapi.ReplayRequest) (func(mysql.GTIDSet, time.Time) bool, error) {
	var target mysql.GTIDSet
	if req.StopGTID != "" {
		var err error
		if target, err = mysql.ParseGTIDSet(f, req.StopGTID); err != nil {
			return nil, fmt.Errorf("replay stop: %w", err)
		}
	}
	var until int64
	if req.StopTime != nil {
		until = req.StopTime.Unix()
	}
	return func(g mysql.GTIDSet, t time.Time) bool {
		if req.StopTime != nil && t.Unix() > until {
			return true
		}
		return target != nil && !target.Contains(g)
	}, nil
}
