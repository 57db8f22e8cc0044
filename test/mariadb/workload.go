package mariadb

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// App is the account the workload writes with. Like a real application's it lacks READ ONLY
// ADMIN, so read_only binds it (on MariaDB, read_only does not bind accounts holding that
// privilege, which ALL PRIVILEGES includes).
const (
	AppUser     = "app"
	AppPassword = "app-Pa55"
)

// CreateApp creates app.t and the App account on the primary; both replicate.
func CreateApp(ctx context.Context, primary *sql.DB) error {
	for _, s := range []mysql.Statement{
		{Query: "CREATE DATABASE app"},
		{Query: "CREATE TABLE app.t (id INT PRIMARY KEY, v TEXT)"},
		mysql.CreateUser(AppUser, "%", AppPassword),
		{Query: "GRANT SELECT, INSERT ON app.* TO ?@?", Args: []any{AppUser, "%"}},
	} {
		if _, err := primary.ExecContext(ctx, s.Query, s.Args...); err != nil {
			return err
		}
	}
	return nil
}

// writeIDs numbers the rows of every writer of this process: a second writer on the same
// table must not retry the first one's ids, each failing as a duplicate key (which once
// looked like a 20-30 s stall of the cluster in e2e).
var writeIDs atomic.Int64

// Writer inserts rows into app.t on whichever server primary() names, and records every id
// whose commit the server acknowledged and when each server first acknowledged one.
type Writer struct {
	mu      sync.Mutex
	acked   []int
	firstOn map[int]time.Time
	stop    chan struct{}
	done    chan struct{}
}

// StartWriter starts writing through the App account; servers are indexed as primary() is.
func StartWriter(servers []*Server, primary func() int) (*Writer, error) {
	w := &Writer{firstOn: map[int]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	dbs := make([]*sql.DB, len(servers))
	for i, s := range servers {
		db, err := mysql.Open(mysql.ConnConfig{Addr: s.Addr(), User: AppUser, Password: AppPassword, Timeout: time.Second, TLS: s.clientTLS()})
		if err != nil {
			return nil, err
		}
		dbs[i] = db
	}
	go func() {
		defer close(w.done)
		defer func() {
			for _, db := range dbs {
				db.Close()
			}
		}()
		for {
			id := 1_000_000 + int(writeIDs.Add(1))
			select {
			case <-w.stop:
				return
			default:
			}
			p := primary()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := dbs[p].ExecContext(ctx, "INSERT INTO app.t VALUES (?, 'w')", id)
			cancel()
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			w.mu.Lock()
			w.acked = append(w.acked, id)
			if _, seen := w.firstOn[p]; !seen {
				w.firstOn[p] = time.Now()
			}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// Acked is the number of acknowledged writes so far.
func (w *Writer) Acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// FirstAckOn is when server i first acknowledged a write (zero if never).
func (w *Writer) FirstAckOn(i int) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstOn[i]
}

// Stop stops writing and returns every acknowledged id.
func (w *Writer) Stop() []int {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked)
}

// Lost returns the acknowledged ids missing from app.t on db.
func Lost(ctx context.Context, db *sql.DB, acked []int) ([]int, error) {
	ids, err := WriterRows(ctx, db)
	if err != nil {
		return nil, err
	}
	var missing []int
	for _, id := range acked {
		if _, found := slices.BinarySearch(ids, id); !found {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// WriterRows returns the ids the writer inserted that app.t on db holds, in ascending order.
func WriterRows(ctx context.Context, db *sql.DB) ([]int, error) {
	rows, err := db.QueryContext(ctx, "SELECT id FROM app.t WHERE id >= 1000000 ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
