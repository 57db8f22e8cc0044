package localkubelet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"time"
)

// logRun is one run of a container in its log file: it starts at byte start, and done is
// closed when nothing more of it will be written.
type logRun struct {
	start int64
	done  chan struct{}
}

// maxLine is where a longer line is split: the copier must never stop reading, or the
// container would block on a full pipe.
const maxLine = 64 << 10

// stampLines copies r to w line by line, each line prefixed with the time it was read.
func stampLines(r io.Reader, w io.Writer, now func() time.Time) {
	br := bufio.NewReaderSize(r, maxLine)
	var buf []byte
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			buf = now().UTC().AppendFormat(buf[:0], time.RFC3339Nano)
			buf = append(append(buf, ' '), line...)
			if buf[len(buf)-1] != '\n' {
				buf = append(buf, '\n')
			}
			// A failed write loses the line, not the container.
			_, _ = w.Write(buf)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// logOptions are the kubelet's containerLogs query parameters.
type logOptions struct {
	follow, previous, timestamps bool
	// tail is the number of last lines to show, -1 for all.
	tail int64
	// since drops lines written before it (zero: none dropped).
	since time.Time
	// limit stops the output after this many bytes (0: no limit).
	limit int64
}

// parseLogOptions reads the query of a containerLogs request as the kubelet does.
func parseLogOptions(q url.Values, now time.Time) (logOptions, error) {
	o := logOptions{tail: -1}
	var err error
	parseBool := func(name string) bool {
		v := q.Get(name)
		if v == "" || err != nil {
			return false
		}
		b, e := strconv.ParseBool(v)
		if e != nil {
			err = fmt.Errorf("%s: %w", name, e)
		}
		return b
	}
	parseInt := func(name string) int64 {
		v := q.Get(name)
		if v == "" || err != nil {
			return -1
		}
		n, e := strconv.ParseInt(v, 10, 64)
		if e != nil || n < 0 {
			err = fmt.Errorf("%s: %q is not a non-negative integer", name, v)
		}
		return n
	}
	o.follow, o.previous, o.timestamps = parseBool("follow"), parseBool("previous"), parseBool("timestamps")
	o.tail = parseInt("tailLines")
	if n := parseInt("limitBytes"); n > 0 {
		o.limit = n
	}
	if n := parseInt("sinceSeconds"); n >= 0 {
		o.since = now.Add(-time.Duration(n) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" && err == nil {
		if o.since, err = time.Parse(time.RFC3339, v); err != nil {
			err = fmt.Errorf("sinceTime: %w", err)
		}
	}
	return o, err
}

// errLimit ends the output at limitBytes.
var errLimit = errors.New("limit reached")

// logWriter writes stored lines the way the options ask.
type logWriter struct {
	o       logOptions
	w       io.Writer
	written int64
}

func (lw *logWriter) line(l []byte) error {
	ts, rest, ok := bytes.Cut(l, []byte{' '})
	if !lw.o.since.IsZero() {
		if t, err := time.Parse(time.RFC3339Nano, string(ts)); ok && err == nil && t.Before(lw.o.since) {
			return nil
		}
	}
	if !lw.o.timestamps && ok {
		l = rest
	}
	if lw.o.limit > 0 && lw.written+int64(len(l)) > lw.o.limit {
		l = l[:lw.o.limit-lw.written]
	}
	n, err := lw.w.Write(l)
	lw.written += int64(n)
	if err != nil {
		return err
	}
	if lw.o.limit > 0 && lw.written >= lw.o.limit {
		return errLimit
	}
	return nil
}

// writeLogs writes the lines of path from byte start to end (end < 0: to the end of the
// file, and with follow on until done is closed and all is read or ctx ends), as o asks.
// flush is called after each batch of lines while following.
func writeLogs(ctx context.Context, w io.Writer, flush func(), path string, start, end int64, done <-chan struct{}, o logOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return err
	}
	var r io.Reader = f
	if end >= 0 {
		r = io.LimitReader(f, end-start)
	}
	lw := &logWriter{o: o, w: w}
	// What is there now: complete lines, of which the last tailLines.
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	lines, pending := completeLines(data)
	if o.tail >= 0 && int64(len(lines)) > o.tail {
		lines = lines[int64(len(lines))-o.tail:]
	}
	for _, l := range lines {
		if err := lw.line(l); err != nil {
			return ignoreLimit(err)
		}
	}
	if !o.follow || end >= 0 {
		return nil
	}
	flush()
	buf := make([]byte, 32<<10)
	for {
		finished := false
		select {
		case <-done:
			finished = true
		default:
		}
		n, err := f.Read(buf)
		if n > 0 {
			lines, rest := completeLines(append(pending, buf[:n]...))
			for _, l := range lines {
				if err := lw.line(l); err != nil {
					return ignoreLimit(err)
				}
			}
			pending = append([]byte(nil), rest...)
			flush()
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		// At the end of the file: done when the run is over (checked before the read, so
		// its last lines were read), else wait for more.
		if finished {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-done:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// completeLines splits data into its complete lines (each with its newline) and the
// incomplete rest, which waits for more.
func completeLines(data []byte) (lines [][]byte, rest []byte) {
	complete := bytes.LastIndexByte(data, '\n') + 1
	lines = bytes.SplitAfter(data[:complete], []byte{'\n'})
	// SplitAfter leaves an empty last element.
	return lines[:len(lines)-1], data[complete:]
}

func ignoreLimit(err error) error {
	if errors.Is(err, errLimit) {
		return nil
	}
	return err
}
