// Package bufpipe is io.Pipe with a bounded buffer between its two ends. A backup or restore
// is a chain of stages (the tool, the relay, zstd, the upload); with io.Pipe between them each
// write waits until the next stage has read it, so the stages take turns instead of running
// at once. A buffer of a few MiB lets each stage go on while the next is busy, and still
// stops a fast writer (memory stays flat in the data size).
package bufpipe

import (
	"io"
	"sync"
)

// New returns the two ends of a pipe that holds up to size bytes the reader has not read.
// One goroutine at a time may write and one may read.
func New(size int) (*Reader, *Writer) {
	p := &pipe{buf: make([]byte, size)}
	p.readable.L = &p.mu
	p.writable.L = &p.mu
	return &Reader{p}, &Writer{p}
}

type pipe struct {
	mu                 sync.Mutex
	readable, writable sync.Cond
	buf                []byte
	// start is where the unread bytes begin, n how many there are (they may wrap around).
	start, n int
	// werr is set when the writer closes (io.EOF for a plain Close), rerr when the reader
	// closes.
	werr, rerr error
	// Each end copies outside the lock: only the writer writes the free part of buf and only
	// the reader reads the filled part; these keep each end to one goroutine at a time.
	wmu, rmu sync.Mutex
}

// Reader is the read end of a pipe.
type Reader struct{ p *pipe }

// Writer is the write end of a pipe.
type Writer struct{ p *pipe }

// Read reads buffered bytes, waiting for some while the writer is open. After the writer
// closed it returns what is left, then the writer's error (io.EOF for Close).
func (r *Reader) Read(b []byte) (int, error) {
	p := r.p
	p.rmu.Lock()
	defer p.rmu.Unlock()
	p.mu.Lock()
	for p.n == 0 && p.werr == nil && p.rerr == nil {
		p.readable.Wait()
	}
	switch {
	case p.rerr != nil:
		p.mu.Unlock()
		return 0, io.ErrClosedPipe
	case p.n == 0:
		err := p.werr
		p.mu.Unlock()
		return 0, err
	}
	start, avail := p.start, min(p.n, len(p.buf)-p.start)
	p.mu.Unlock()

	k := copy(b, p.buf[start:start+avail])

	p.mu.Lock()
	p.start = (p.start + k) % len(p.buf)
	p.n -= k
	p.writable.Signal()
	p.mu.Unlock()
	return k, nil
}

// Close closes the read end: a writer's next write fails with io.ErrClosedPipe.
func (r *Reader) Close() error { return r.CloseWithError(nil) }

// CloseWithError closes the read end: a writer's next write fails with err (io.ErrClosedPipe
// if nil).
func (r *Reader) CloseWithError(err error) error {
	if err == nil {
		err = io.ErrClosedPipe
	}
	r.p.closeEnd(&r.p.rerr, err)
	return nil
}

// Write copies b into the buffer, waiting for room while the reader is open. It fails with
// the reader's error once the reader closed, and with io.ErrClosedPipe after the writer's
// own Close.
func (w *Writer) Write(b []byte) (int, error) {
	p := w.p
	p.wmu.Lock()
	defer p.wmu.Unlock()
	written := 0
	for len(b) > 0 {
		p.mu.Lock()
		for p.n == len(p.buf) && p.rerr == nil && p.werr == nil {
			p.writable.Wait()
		}
		switch {
		case p.rerr != nil:
			err := p.rerr
			p.mu.Unlock()
			return written, err
		case p.werr != nil:
			p.mu.Unlock()
			return written, io.ErrClosedPipe
		}
		// The free part starts after the unread bytes and runs to the end of buf or, when
		// they wrap, to their start.
		end := p.start + p.n
		limit := len(p.buf)
		if end >= len(p.buf) {
			end -= len(p.buf)
			limit = p.start
		}
		p.mu.Unlock()

		k := copy(p.buf[end:limit], b)

		p.mu.Lock()
		p.n += k
		p.readable.Signal()
		p.mu.Unlock()
		b = b[k:]
		written += k
	}
	return written, nil
}

// Close closes the write end: the reader gets io.EOF after the buffered bytes.
func (w *Writer) Close() error { return w.CloseWithError(nil) }

// CloseWithError closes the write end: the reader gets err (io.EOF if nil) after the
// buffered bytes. The first close of an end wins.
func (w *Writer) CloseWithError(err error) error {
	if err == nil {
		err = io.EOF
	}
	w.p.closeEnd(&w.p.werr, err)
	return nil
}

// closeEnd records the first close of an end (end is werr or rerr) and wakes both ends.
func (p *pipe) closeEnd(end *error, err error) {
	p.mu.Lock()
	if *end == nil {
		*end = err
	}
	p.readable.Broadcast()
	p.writable.Broadcast()
	p.mu.Unlock()
}
