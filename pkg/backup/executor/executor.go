// Package executor runs the flavor's backup tool against a local server and streams its
// output, zstd-compressed, to a writer the caller supplies (an S3 upload): logical backups with
// mariadb-dump / mysqldump (one consistent transaction), physical ones with mariadb-backup /
// xtrabackup (an xbstream). Nothing is staged on disk.
//
// The server password reaches the tool through a 0600 option file (--defaults-extra-file) in
// a private directory, never through argv or the environment. The tools run through a
// toolbox.Runner: in the server's container in a pod, as children of the caller in tests.
package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/mysqlop/mysql-operator/pkg/bufpipe"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/toolbox"
)

// stageBuffer is the buffer between two stages of a backup (tool, compressor, upload): two
// compression segments, so that one stage's pause (an upload part's round trip, a segment's
// compression) does not stall the other.
const stageBuffer = 4 << 20

// Methods of backup.
const (
	Logical  = "logical"
	Physical = "physical"
)

// Request is one backup of a local server.
type Request struct {
	Flavor mysql.Flavor
	// Method is Logical or Physical.
	Method string
	// Socket is the server's unix socket.
	Socket string
	// DataDir is the server's datadir (physical backups read it).
	DataDir string
	// User and Password are the account the tool connects as.
	User     string
	Password string
	// TmpDir holds the option file and the physical tool's scratch directory; the tools'
	// container must see it at the same path.
	TmpDir string
	// Tools runs the tools; nil runs them as children of this process.
	Tools toolbox.Runner
}

// Result describes a finished backup.
type Result struct {
	// Size is the compressed size in bytes.
	Size int64
	// SHA256 is the hex SHA-256 of the compressed stream.
	SHA256 string
	// GTID is the GTID position the backup is consistent with.
	GTID string
	// ToolMaxRSS is the backup or client tool's peak resident memory in bytes.
	ToolMaxRSS int64
}

// Run runs the backup and hands the compressed stream to put, which must read it to the end
// (or fail). A failure of the tool or of put stops both; the error says which.
func Run(ctx context.Context, req Request, put func(io.Reader) error) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tool, cleanup, err := backupTool(req)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()

	// The tool writes into out; the compressor reads it and writes into pw, which put reads.
	// Buffered pipes let the relay, the compressor and the upload run at once instead of
	// taking turns (memory: 2 × stageBuffer).
	out, toolOut := bufpipe.New(stageBuffer)
	var stderr tail
	tool.Stdout, tool.Stderr = toolOut, &stderr
	var toolRSS int64
	toolErr := make(chan error, 1)
	go func() {
		rss, err := toolbox.Or(req.Tools).Run(ctx, tool)
		if err != nil {
			err = fmt.Errorf("%s failed: %w: %s", tool.Name, err, stderr.String())
		}
		toolRSS = rss
		toolOut.CloseWithError(err)
		toolErr <- err
	}()

	pr, pw := bufpipe.New(stageBuffer)
	hash := sha256.New()
	counter := &countingWriter{}
	gtid := &gtidScanner{}
	var src io.Reader = out
	if req.Method == Logical {
		src = io.TeeReader(out, gtid)
	}
	compressErr := make(chan error, 1)
	go func() {
		err := compress(io.MultiWriter(pw, hash, counter), src)
		// Unblock a tool still writing when compressing or storing failed.
		out.CloseWithError(err)
		if terr := <-toolErr; terr != nil {
			err = terr
		} else if err != nil {
			err = fmt.Errorf("compress the output of %s: %w", tool.Name, err)
		}
		pw.CloseWithError(err)
		compressErr <- err
	}()
	putErr := put(pr)
	if putErr != nil {
		cancel()
		pr.CloseWithError(putErr)
	}
	runErr := <-compressErr
	if putErr != nil {
		return Result{}, fmt.Errorf("store the backup: %w", putErr)
	}
	if runErr != nil {
		return Result{}, runErr
	}
	res := Result{Size: counter.n, SHA256: hex.EncodeToString(hash.Sum(nil)), ToolMaxRSS: toolRSS}
	if req.Method == Logical {
		res.GTID = gtid.value()
	} else {
		res.GTID = physicalGTID(stderr.String())
	}
	return res, nil
}

// BackupCommand returns the backup tool's command for req, writing its stream to stdout, and
// a cleanup that removes its option file and scratch directory. The backup benchmark runs it
// alone as its baseline.
func BackupCommand(ctx context.Context, req Request) (*exec.Cmd, func(), error) {
	t, cleanup, err := backupTool(req)
	if err != nil {
		return nil, nil, err
	}
	return exec.CommandContext(ctx, t.Name, t.Args...), cleanup, nil
}

// backupTool is the backup tool for req (streams not set) and a cleanup that removes its
// option file and scratch directory.
func backupTool(req Request) (toolbox.Tool, func(), error) {
	dir, optFile, err := optionFile(req, "backup-")
	if err != nil {
		return toolbox.Tool{}, nil, err
	}
	name, args, err := command(req, optFile, dir)
	if err != nil {
		os.RemoveAll(dir)
		return toolbox.Tool{}, nil, err
	}
	return toolbox.Tool{Name: name, Args: args}, func() { os.RemoveAll(dir) }, nil
}

// optionFile writes the client option file into a new private directory under req.TmpDir.
func optionFile(req Request, pattern string) (dir, file string, err error) {
	dir, err = os.MkdirTemp(req.TmpDir, pattern)
	if err != nil {
		return "", "", fmt.Errorf("scratch directory: %w", err)
	}
	file = filepath.Join(dir, "client.cnf")
	// Quoted values: a password may hold '#' or spaces. Backslashes and quotes are escaped as
	// the option file parser expects.
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	body := fmt.Sprintf("[client]\nuser=\"%s\"\npassword=\"%s\"\nsocket=\"%s\"\n", esc.Replace(req.User), esc.Replace(req.Password), esc.Replace(req.Socket))
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("write option file: %w", err)
	}
	return dir, file, nil
}

// Restore loads a logical backup written by Run, read from r, into the server through the
// flavor's client; the result's Size is the compressed bytes read. The statements are
// binlogged, so on a primary they replicate to its replicas.
func Restore(ctx context.Context, req Request, r io.Reader) (Result, error) {
	if req.Method != Logical {
		return Result{}, fmt.Errorf("a %s backup is not loaded through the client: unpack it with Extract and Prepare", req.Method)
	}
	dir, optFile, err := optionFile(req, "restore-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	name, args := ClientCommand(req.Flavor, optFile)
	return decompressInto(ctx, req.Tools, r, toolbox.Tool{Name: name, Args: args})
}

// decompressInto runs t with the decompressed stream of r as its standard input; the result's
// Size is the compressed bytes read.
func decompressInto(ctx context.Context, tools toolbox.Runner, r io.Reader, t toolbox.Tool) (Result, error) {
	counter := &countingWriter{}
	d, err := Decompress(io.TeeReader(r, counter))
	if err != nil {
		return Result{}, err
	}
	var stderr tail
	t.Stdin, t.Stderr = d, &stderr
	rss, err := toolbox.Or(tools).Run(ctx, t)
	// Counted once the decoder no longer reads ahead (the tool may have stopped reading).
	d.Close()
	res := Result{Size: counter.n, ToolMaxRSS: rss}
	if err != nil {
		return res, fmt.Errorf("%s failed: %w: %s", t.Name, err, stderr.String())
	}
	return res, nil
}

// command returns the tool and its arguments; the option file comes first, as the tools
// require.
func command(req Request, optFile, dir string) (string, []string, error) {
	extra := "--defaults-extra-file=" + optFile
	switch {
	case req.Method == Logical && req.Flavor == mysql.MariaDB:
		// The mysql schema is left out: restoring it would replace the target cluster's
		// accounts, the operator's own among them. Accounts are declared as MySQLUsers.
		return "mariadb-dump", []string{extra, "--single-transaction", "--master-data=2", "--gtid",
			"--all-databases", "--ignore-database=mysql", "--routines", "--events", "--triggers", "--hex-blob", "--quick"}, nil
	case req.Method == Logical:
		return "mysqldump", []string{extra, "--single-transaction", "--set-gtid-purged=ON", "--source-data=2",
			"--all-databases", "--routines", "--events", "--triggers", "--hex-blob", "--quick"}, nil
	case req.Method == Physical && req.Flavor == mysql.MariaDB:
		return "mariadb-backup", []string{extra, "--backup", "--stream=xbstream", "--datadir=" + req.DataDir,
			"--target-dir=" + filepath.Join(dir, "target")}, nil
	case req.Method == Physical:
		return "xtrabackup", []string{extra, "--backup", "--stream=xbstream", "--datadir=" + req.DataDir,
			"--target-dir=" + filepath.Join(dir, "target")}, nil
	}
	return "", nil, fmt.Errorf("unknown backup method %q", req.Method)
}

var (
	// mariadb-dump --gtid --master-data=2: "-- SET GLOBAL gtid_slave_pos='0-100-7';"
	mariaDumpGTID = regexp.MustCompile(`gtid_slave_pos\s*=\s*'([^']*)'`)
	// mysqldump --set-gtid-purged=ON: "SET @@GLOBAL.GTID_PURGED=/*!80000 '+'*/ 'uuid:1-5';"
	mysqlDumpGTID = regexp.MustCompile(`GTID_PURGED=(?:/\*!80000 '\+'\*/ )?'([^']*)'`)
	// mariadb-backup / xtrabackup on stderr: "GTID of the last change '0-100-7'"
	physGTID = regexp.MustCompile(`GTID of the last change '([^']*)'`)
)

func physicalGTID(stderr string) string {
	if m := physGTID.FindStringSubmatch(stderr); m != nil {
		return strings.Join(strings.Fields(m[1]), "")
	}
	return ""
}

// gtidScanner finds the GTID position in a dump without parsing it: mysqldump writes it in
// the header, mariadb-dump (with --gtid --master-data) near the end, so the first and the
// last 64 KiB are kept and searched.
type gtidScanner struct {
	head []byte
	last tail
}

func (g *gtidScanner) Write(p []byte) (int, error) {
	if room := 64<<10 - len(g.head); room > 0 {
		g.head = append(g.head, p[:min(room, len(p))]...)
	}
	return g.last.Write(p)
}

func (g *gtidScanner) value() string {
	for _, b := range []string{string(g.head), g.last.String()} {
		for _, re := range []*regexp.Regexp{mariaDumpGTID, mysqlDumpGTID} {
			if m := re.FindStringSubmatch(b); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// tailSize is how much of a stream a tail keeps.
const tailSize = 64 << 10

// tail keeps the last 64 KiB written to it: a tool's stderr, for errors and the physical GTID
// line, and a whole dump, for its GTID line.
type tail struct {
	mu sync.Mutex
	// buf holds up to 2 × tailSize bytes, so that the kept bytes are moved to its front once
	// per tailSize written rather than on every write (a dump passes through here).
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= tailSize {
		t.buf = append(t.buf[:0], p[len(p)-tailSize:]...)
		return len(p), nil
	}
	if len(t.buf)+len(p) > 2*tailSize {
		keep := min(len(t.buf), tailSize-len(p))
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-keep:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf[max(0, len(t.buf)-tailSize):]))
}
