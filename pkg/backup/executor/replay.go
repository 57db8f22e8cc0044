package executor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/toolbox"
)

// Source is one binary log file to replay.
type Source struct {
	// Start is the GTID state already applied: the file's transactions in it are skipped. It
	// must hold the file's own start state (the flavor's tool refuses a file that begins
	// after it: transactions would be missing).
	Start string
	// Write writes the file (or the part of it to replay) to w.
	Write func(w io.Writer) error
}

// ReplayCommand is the flavor's binlog tool with its arguments: it reads one binary log on
// standard input and prints, as SQL for the client, the transactions that are not in start
// (a GTID position or set; "" for all). The transactions get new GTIDs from the server that
// applies them:
//
//   - MySQL: mysqlbinlog --skip-gtids;
//   - MariaDB: mariadb-binlog prints the original server_id and sequence number as session
//     variables, which Replay drops (see dropReplayed).
//
// Keeping the original GTIDs is wrong in both cases: after a logical restore the server's
// GTID state is ahead of the archived sequence numbers (strict mode refuses them), and a
// replica skips events carrying its own server_id, so a transaction first written by the
// member that replicates it would be lost on that member.
func ReplayCommand(flavor mysql.Flavor, start string) (string, []string) {
	if flavor == mysql.MariaDB {
		args := []string{}
		if start != "" {
			args = append(args, "--start-position="+start)
		}
		return "mariadb-binlog", append(args, "-")
	}
	args := []string{"--skip-gtids"}
	if start != "" {
		args = append(args, "--exclude-gtids="+start)
	}
	return "mysqlbinlog", append(args, "-")
}

// ClientCommand is the flavor's client that reads SQL on standard input, as a restore runs it,
// with optFile holding the account.
func ClientCommand(flavor mysql.Flavor, optFile string) (string, []string) {
	name := "mysql"
	if flavor == mysql.MariaDB {
		name = "mariadb"
	}
	return name, []string{"--defaults-extra-file=" + optFile, "--binary-mode", "--batch"}
}

// mariaDBOriginals are the lines of mariadb-binlog's output that set a transaction's original
// server_id and sequence number (in /*M!100001 ...*/ or /*!100001 ...*/ comments).
var mariaDBOriginals = [][]byte{
	[]byte("SET @@session.server_id="),
	[]byte("SET @@session.gtid_seq_no="),
}

// dropReplayed reports whether a line of the binlog tool's output is left out.
func dropReplayed(flavor mysql.Flavor, line []byte) bool {
	if flavor != mysql.MariaDB || !bytes.HasPrefix(line, []byte("/*")) {
		return false
	}
	i := bytes.IndexByte(line, ' ')
	if i < 0 || i > 12 {
		return false
	}
	for _, p := range mariaDBOriginals {
		if bytes.HasPrefix(line[i+1:], p) {
			return true
		}
	}
	return false
}

// copyReplayed copies the binlog tool's output from src to dst without the lines drop
// refuses. Lines longer than the buffer pass in pieces; the decision is made on the first.
func copyReplayed(dst io.Writer, src io.Reader, drop func([]byte) bool) error {
	br := bufio.NewReaderSize(src, 256<<10)
	skipping, mid := false, false
	for {
		chunk, err := br.ReadSlice('\n')
		if !mid {
			skipping = drop(chunk)
		}
		if !skipping && len(chunk) > 0 {
			if _, werr := dst.Write(chunk); werr != nil {
				return werr
			}
		}
		mid = errors.Is(err, bufio.ErrBufferFull)
		switch {
		case err == nil || mid:
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}

// Replay applies binary logs to the local server through one client session: each source in
// turn is read by the flavor's binlog tool (ReplayCommand, from the source's Start) and its
// SQL goes to the client. The transactions are binary-logged with new GTIDs, so on a primary they replicate.
// A failure ends the client's session: a transaction it did not finish is rolled back.
func Replay(ctx context.Context, req Request, sources iter.Seq[Source]) error {
	dir, optFile, err := optionFile(req, "replay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tools := toolbox.Or(req.Tools)

	sqlIn, sqlOut := io.Pipe()
	var clientErrs tail
	name, args := ClientCommand(req.Flavor, optFile)
	client := toolbox.Tool{Name: name, Args: args, Stdin: sqlIn, Stderr: &clientErrs}
	clientDone := make(chan error, 1)
	go func() {
		_, err := tools.Run(ctx, client)
		if err != nil {
			err = fmt.Errorf("%s failed: %w: %s", name, err, clientErrs.String())
		}
		sqlIn.CloseWithError(err) // unblocks a writer when the client is gone
		clientDone <- err
	}()
	sql := bufio.NewWriterSize(sqlOut, 256<<10)
	err = replayAll(ctx, req.Flavor, tools, sources, sql)
	if err == nil {
		err = sql.Flush()
	}
	sqlOut.CloseWithError(err)
	if cerr := <-clientDone; cerr != nil {
		return cerr
	}
	return err
}

// replayAll runs the binlog tool on every source, writing its filtered output to sql.
func replayAll(ctx context.Context, flavor mysql.Flavor, tools toolbox.Runner, sources iter.Seq[Source], sql io.Writer) error {
	drop := func(line []byte) bool { return dropReplayed(flavor, line) }
	for src := range sources {
		name, args := ReplayCommand(flavor, src.Start)
		binIn, binOut := io.Pipe()
		textIn, textOut := io.Pipe()
		srcDone, copyDone := make(chan error, 1), make(chan error, 1)
		go func() {
			err := src.Write(binOut)
			binOut.CloseWithError(err)
			srcDone <- err
		}()
		go func() {
			err := copyReplayed(sql, textIn, drop)
			textIn.CloseWithError(err)
			copyDone <- err
		}()
		var stderr tail
		_, err := tools.Run(ctx, toolbox.Tool{Name: name, Args: args, Stdin: binIn, Stdout: textOut, Stderr: &stderr})
		binIn.CloseWithError(errors.New("the binlog tool ended"))
		textOut.Close()
		srcErr, copyErr := <-srcDone, <-copyDone
		switch {
		case srcErr != nil:
			return srcErr
		case err != nil:
			return fmt.Errorf("%s failed: %w: %s", name, err, stderr.String())
		case copyErr != nil:
			return fmt.Errorf("send the replayed transactions to the client: %w", copyErr)
		}
	}
	return nil
}
