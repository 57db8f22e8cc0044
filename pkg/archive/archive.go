// Package archive copies a primary's binary logs to object storage for point-in-time recovery.
//
// One object per archived file, and an index (index.json) listing them in GTID order with
// each file's GTID start and end, times, size and checksum. The chain is kept by GTIDs, not
// file names: a file is archived when it holds a transaction the index does not; a file whose
// transactions are all archived already (by this server or a former primary whose binary logs
// it replicated) is skipped. So after a failover the new primary continues the chain with no
// gap, and a file that overlaps the chain is replayed from where the chain ends.
//
// Only a writable server archives: a replica's files hold the primary's transactions, which
// the primary archives. The index is written after each object: an interrupted round leaves
// an object the index does not name, and the next round uploads it again under the same name.
// Two archivers racing on the index (an old and a new primary for a moment) can lose an index
// entry; the next round finds its transactions missing and archives the file again.
package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/pkg/binlog"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// IndexName is the index object's name under the archive's prefix.
const IndexName = "index.json"

// Entry is one archived file.
type Entry struct {
	// Object is the object's name under the archive's prefix: <server id>/<file>.
	Object string `json:"object"`
	// Start and End are the GTID states before and after the file's transactions.
	Start string `json:"start"`
	End   string `json:"end"`
	// FirstTime and LastTime are the times of its first and last transactions.
	FirstTime time.Time `json:"firstTime"`
	LastTime  time.Time `json:"lastTime"`
	// Transactions counts them.
	Transactions int `json:"transactions"`
	// Size and SHA256 describe the object.
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Gap is set when the file starts after the end of the chain before it: a recovery
	// cannot cross it.
	Gap bool `json:"gap,omitempty"`
}

// Index is the archive's table of contents.
type Index struct {
	// Flavor is the GTID notation of the entries.
	Flavor mysql.Flavor `json:"flavor"`
	// Entries are in the order they were archived, which is GTID order.
	Entries []Entry `json:"entries"`
}

// End is the GTID state at the end of the chain.
func (ix *Index) End() (mysql.GTIDSet, error) {
	end, _ := mysql.ParseGTIDSet(ix.Flavor, "")
	for _, e := range ix.Entries {
		s, err := mysql.ParseGTIDSet(ix.Flavor, e.End)
		if err != nil {
			return nil, fmt.Errorf("index entry %s: %w", e.Object, err)
		}
		end = end.Union(s)
	}
	return end, nil
}

// Archiver archives one server's binary logs.
type Archiver struct {
	// In is the server: its writability, its list of binary logs, and FLUSH BINARY LOGS.
	In *mysql.Instance
	// Dir is the directory of the binary log files (the datadir).
	Dir string
	// Store and Prefix are where the archive lives.
	Store  *storage.Store
	Prefix string
	// Interval bounds how long a transaction waits in the current file: older than this, the
	// file is closed (FLUSH BINARY LOGS) and archived.
	Interval time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// RetainFrom, when set, is the GTID position of the oldest backup kept: files whose every
	// transaction is in it are no longer needed by any restore, and a round deletes them
	// (Retention). Empty keeps everything.
	RetainFrom string

	// ix is the index as this archiver last read or wrote it. Only a writable server writes
	// the index, so it is read again only after a round that idled or failed: another
	// archiver may have written it meanwhile.
	ix *Index
	// closed caches the summaries of files older than the current one, which the server never
	// writes again, so that a round reads only the current file and the ones it has not seen.
	// The key holds size and modification time: RESET MASTER reuses file names.
	closed map[fileKey]binlog.Summary
}

// fileKey identifies one version of a binary log file.
type fileKey struct {
	name    string
	size    int64
	modTime time.Time
}

// Report is what one round saw and did.
type Report struct {
	// Idle is set when the server is not writable: it does not archive.
	Idle bool
	// Archived are the objects uploaded in this round.
	Archived []string
	// Rotated is set when the round closed the current file to bound the lag.
	Rotated bool
	// End is the GTID state the archive holds after the round.
	End string
	// From and Until are the times of the archive's first and last transactions (zero when
	// it holds none); Start is the GTID state its chain starts from.
	From, Until time.Time
	Start       string
	// LagSeconds is the age of the oldest transaction not archived (0 when none); LagBytes
	// the size of the files that hold such transactions.
	LagSeconds float64
	LagBytes   int64
	// Gap is set when an archived file does not continue the chain.
	Gap bool
	// Pruned are the objects deleted by retention in this round.
	Pruned []string
}

func (a *Archiver) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Round archives every closed file holding transactions the archive lacks, and closes the
// current file when its oldest such transaction is older than Interval.
func (a *Archiver) Round(ctx context.Context) (Report, error) {
	rep, err := a.round(ctx)
	if err != nil || rep.Idle {
		a.ix = nil
	}
	return rep, err
}

func (a *Archiver) round(ctx context.Context) (Report, error) {
	writable, err := a.In.Writable(ctx)
	if err != nil {
		return Report{}, err
	}
	if !writable {
		return Report{Idle: true}, nil
	}
	if a.ix == nil {
		if a.ix, err = a.LoadIndex(ctx); err != nil {
			return Report{}, err
		}
	}
	ix := a.ix
	serverID, files, err := a.binaryLogs(ctx)
	if err != nil {
		return Report{}, err
	}
	end, err := ix.End()
	if err != nil {
		return Report{}, err
	}
	closed := map[fileKey]binlog.Summary{}
	defer func() { a.closed = closed }()
	var rep Report
	for i, f := range files {
		sum, err := a.summary(f, i == len(files)-1, closed)
		if err != nil {
			return rep, err
		}
		if sum.Transactions == 0 || end.Contains(sum.End) {
			continue // nothing the archive lacks
		}
		if i == len(files)-1 {
			// The current file: archived once closed; closed once its transactions wait too
			// long. (An older file is complete even without a Rotate event: after a crash the
			// server starts a new file and never writes the old one again.)
			rep.LagBytes += sum.Size
			rep.LagSeconds = a.now().Sub(sum.FirstTime).Seconds()
			if a.now().Sub(sum.FirstTime) >= a.Interval {
				if _, err := a.In.DB.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
					return rep, fmt.Errorf("close the current binary log: %w", err)
				}
				rep.Rotated = true
			}
			continue
		}
		e, err := a.upload(ctx, serverID, f, sum)
		if err != nil {
			return rep, err
		}
		if len(ix.Entries) > 0 && !end.Contains(sum.Start) {
			e.Gap, rep.Gap = true, true
		}
		ix.Entries = append(ix.Entries, e)
		if err := a.saveIndex(ctx, ix); err != nil {
			return rep, err
		}
		end = end.Union(sum.End)
		rep.Archived = append(rep.Archived, e.Object)
	}
	rep.End = end.String()
	if rep.Pruned, err = a.prune(ctx, ix); err != nil {
		return rep, err
	}
	span := ix.Span()
	rep.From, rep.Until, rep.Start = span.From, span.Until, span.Start
	return rep, nil
}

// binaryLogs returns the server's id and its binary log files, oldest first.
func (a *Archiver) binaryLogs(ctx context.Context) (uint32, []string, error) {
	var id uint32
	if err := a.In.DB.QueryRowContext(ctx, "SELECT @@server_id").Scan(&id); err != nil {
		return 0, nil, fmt.Errorf("read server_id: %w", err)
	}
	logs, err := a.In.BinaryLogs(ctx)
	if err != nil {
		return 0, nil, err
	}
	files := make([]string, len(logs))
	for i, l := range logs {
		files[i] = l.Name
	}
	return id, files, nil
}

// summary reads file, or takes a closed file's summary from the last round's cache; a closed
// file's summary goes into next, the cache of the next round.
func (a *Archiver) summary(file string, current bool, next map[fileKey]binlog.Summary) (binlog.Summary, error) {
	f, err := os.Open(filepath.Join(a.Dir, filepath.Base(file)))
	if err != nil {
		return binlog.Summary{}, fmt.Errorf("open binary log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return binlog.Summary{}, fmt.Errorf("stat binary log: %w", err)
	}
	key := fileKey{name: fi.Name(), size: fi.Size(), modTime: fi.ModTime()}
	if sum, ok := a.closed[key]; ok && !current {
		next[key] = sum
		return sum, nil
	}
	sum, err := binlog.Scan(f, a.In.Flavor)
	if err != nil {
		return sum, fmt.Errorf("read binary log %s: %w", file, err)
	}
	if !current {
		next[key] = sum
	}
	return sum, nil
}

// upload copies the closed file to <prefix>/<server id>/<file>, hashing what it sends.
func (a *Archiver) upload(ctx context.Context, serverID uint32, file string, sum binlog.Summary) (Entry, error) {
	f, err := os.Open(filepath.Join(a.Dir, filepath.Base(file)))
	if err != nil {
		return Entry{}, fmt.Errorf("open binary log: %w", err)
	}
	defer f.Close()
	name := fmt.Sprintf("%d/%s", serverID, filepath.Base(file))
	h := sha256.New()
	n, err := a.Store.Put(ctx, a.object(name), io.TeeReader(io.LimitReader(f, sum.Size), h))
	if err != nil {
		return Entry{}, err
	}
	if n != sum.Size {
		return Entry{}, fmt.Errorf("archive %s: sent %d of %d bytes", file, n, sum.Size)
	}
	return Entry{Object: name, Start: sum.Start.String(), End: sum.End.String(), FirstTime: sum.FirstTime, LastTime: sum.LastTime,
		Transactions: sum.Transactions, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func (a *Archiver) object(name string) string { return path.Join(a.Prefix, name) }

// prune applies retention: the entries at the head of the chain whose transactions are all in
// RetainFrom leave the index, then their objects are deleted (an object left by an
// interrupted round is only unreferenced, never a hole in the chain). The last entry always
// stays: it carries the chain's end, which tells the next round what is archived.
func (a *Archiver) prune(ctx context.Context, ix *Index) ([]string, error) {
	if a.RetainFrom == "" || len(ix.Entries) < 2 {
		return nil, nil
	}
	keep, err := mysql.ParseGTIDSet(ix.Flavor, a.RetainFrom)
	if err != nil {
		return nil, fmt.Errorf("retention position: %w", err)
	}
	n := 0
	for n < len(ix.Entries)-1 {
		end, err := mysql.ParseGTIDSet(ix.Flavor, ix.Entries[n].End)
		if err != nil || !keep.Contains(end) {
			break
		}
		n++
	}
	if n == 0 {
		return nil, nil
	}
	dropped := slices.Clone(ix.Entries[:n])
	ix.Entries = slices.Delete(ix.Entries, 0, n)
	if err := a.saveIndex(ctx, ix); err != nil {
		ix.Entries = append(dropped, ix.Entries...)
		return nil, err
	}
	var out []string
	for _, e := range dropped {
		if err := a.Store.Delete(ctx, a.object(e.Object)); err != nil {
			return out, err
		}
		out = append(out, e.Object)
	}
	return out, nil
}

// LoadIndex reads the archive's index; an archive without one is empty.
func (a *Archiver) LoadIndex(ctx context.Context) (*Index, error) {
	return LoadIndex(ctx, a.Store, a.Prefix, a.In.Flavor)
}

// LoadIndex reads the index of the archive at prefix in store; an archive without one is
// empty (of flavor).
func LoadIndex(ctx context.Context, store *storage.Store, prefix string, flavor mysql.Flavor) (*Index, error) {
	name := path.Join(prefix, IndexName)
	exists, err := store.Exists(ctx, name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return &Index{Flavor: flavor}, nil
	}
	r, err := store.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var ix Index
	if err := json.NewDecoder(io.LimitReader(r, 64<<20)).Decode(&ix); err != nil {
		return nil, fmt.Errorf("read the archive index: %w", err)
	}
	if ix.Flavor != flavor {
		return nil, fmt.Errorf("the archive at %s holds %s binary logs, not %s", prefix, ix.Flavor, flavor)
	}
	return &ix, nil
}

func (a *Archiver) saveIndex(ctx context.Context, ix *Index) error {
	b, err := json.MarshalIndent(ix, "", "  ")
	if err != nil {
		return err
	}
	if _, err := a.Store.Put(ctx, a.object(IndexName), strings.NewReader(string(b))); err != nil {
		return fmt.Errorf("write the archive index: %w", err)
	}
	return nil
}

// Check verifies that the archive's chain has no gap and that every entry's object exists
// with its recorded size; it returns the first problem found.
func Check(ctx context.Context, store *storage.Store, prefix string, ix *Index) error {
	end, _ := mysql.ParseGTIDSet(ix.Flavor, "")
	for i, e := range ix.Entries {
		start, err := mysql.ParseGTIDSet(ix.Flavor, e.Start)
		if err != nil {
			return fmt.Errorf("entry %s: %w", e.Object, err)
		}
		if i > 0 && !end.Contains(start) {
			return fmt.Errorf("gap before %s: the chain ends at %s, the file starts at %s", e.Object, end, start)
		}
		s, _ := mysql.ParseGTIDSet(ix.Flavor, e.End)
		end = end.Union(s)
	}
	return CheckObjects(ctx, store, prefix, ix.Entries)
}

// CheckObjects verifies that the objects of entries exist with their recorded sizes, with one
// listing of the archive; it names the first that does not.
func CheckObjects(ctx context.Context, store *storage.Store, prefix string, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	sizes, err := store.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, e := range entries {
		size, ok := sizes[path.Join(prefix, e.Object)]
		switch {
		case !ok:
			return fmt.Errorf("%w: %s (transactions %s to %s, %s to %s)", ErrMissing, e.Object, orEmpty(e.Start), e.End, stamp(e.FirstTime), stamp(e.LastTime))
		case size != e.Size:
			return fmt.Errorf("%w: %s holds %d bytes, the index recorded %d", ErrMissing, e.Object, size, e.Size)
		}
	}
	return nil
}

// ErrMissing is returned by Check for an archived object that is gone.
var ErrMissing = errors.New("archived binary log missing")
