package toolbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
)

// Piped runs. The client makes the pipes of the tool's standard input and output and sends
// their tool ends along with the header (SCM_RIGHTS on the unix socket); the toolbox gives
// them to the tool as they are. A backup's or a restore's bytes then pass from the agent to the
// tool, or back, through one pipe: no relay between them. Relayed, each byte was copied four
// more times (into the socket and out, into the toolbox's buffer and into the tool's pipe) and
// woke two more processes' threads on its way. Standard error stays relayed: it is small, and
// the toolbox's log keeps nothing of it.

// badRequest starts the answer of a toolbox that cannot take a piped header: one that
// predates piped runs takes only the relayed header ("bad request: expected a header frame"),
// and its binary stays in a pod until the pod restarts (an operator upgrade moves the agent in
// place); a current one whose descriptors did not arrive (a security policy between the
// containers could drop them) says how many it got. The client then runs the tool relayed.
const badRequest = "bad request: "

// maxPassed is the most descriptors a piped header carries: standard input and output.
const maxPassed = 2

// runPiped runs t with its standard input and output as pipes the toolbox hands to the tool.
// refused reports a toolbox that refused the piped request; t's streams are untouched then.
func (c Client) runPiped(ctx context.Context, t Tool) (rss int64, refused bool, err error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return 0, false, err
	}
	defer conn.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		return 0, false, fmt.Errorf("pipe for the output of %s: %w", t.Name, err)
	}
	defer outR.Close()
	enlargePipe(outR)
	passed := []*os.File{outW}
	var inW *os.File
	if t.Stdin != nil {
		inR, w, err := os.Pipe()
		if err != nil {
			outW.Close()
			return 0, false, fmt.Errorf("pipe for the input of %s: %w", t.Name, err)
		}
		inW = w
		defer inW.Close()
		enlargePipe(inW)
		passed = []*os.File{inR, outW}
	}
	err = sendWithFiles(conn, framePipedHeader, header{Name: t.Name, Args: t.Args, Stdin: t.Stdin != nil}, passed)
	// The tool's ends are the toolbox's now (or gone with a toolbox that ignores them): with
	// no copy here, the output ends when the tool and the toolbox close theirs.
	closeFiles(passed)
	if err != nil {
		return 0, false, fmt.Errorf("send %s to the toolbox container: %w", t.Name, err)
	}
	// Cancelling closes the pipes too, so that no copy below waits on the tool.
	stop := context.AfterFunc(ctx, func() {
		conn.Close()
		outR.Close()
		if inW != nil {
			inW.Close()
		}
	})
	defer stop()
	r := newFrameReader(conn)
	typ, p, err := r.read()
	switch {
	case ctx.Err() != nil:
		return 0, false, ctx.Err()
	case err != nil:
		return 0, false, fmt.Errorf("connection to the toolbox container: %w", err)
	case typ == frameExit:
		var e exit
		if err := json.Unmarshal(p, &e); err != nil {
			return 0, false, fmt.Errorf("exit of %s: %w", t.Name, err)
		}
		if strings.HasPrefix(e.Error, badRequest) {
			return 0, true, nil
		}
		return e.MaxRSS, false, errors.New(e.Error)
	case typ != frameAccepted:
		return 0, false, fmt.Errorf("toolbox answered %s with frame %q", t.Name, typ)
	}

	// The tool runs. The input and output are copied while the frames (error, exit) are read;
	// a failed copy closes the connection, and the toolbox kills the tool.
	var wg sync.WaitGroup
	var inErr, outErr error
	if t.Stdin != nil {
		wg.Go(func() {
			w := &errWriter{w: inW}
			if _, err := io.Copy(w, t.Stdin); err != nil && w.err == nil {
				// The input failed (a download broke): the tool must not finish on part
				// of it, so it gets no end of input. Ending the connection's client side
				// makes the toolbox kill it and answer with the exit.
				inErr = err
				_ = conn.(*net.UnixConn).CloseWrite()
				return
			}
			// The end of input; or, after a write error, the tool no longer reads and its
			// exit says why.
			inW.Close()
		})
	}
	wg.Go(func() {
		dst := t.Stdout
		if dst == nil {
			dst = io.Discard
		}
		// Only a refused write is an error here: reads fail when the run is given up, below.
		_, _ = readFilled(outR, true, func(p []byte) error {
			if _, err := dst.Write(p); err != nil {
				outErr = err
				conn.Close()
				return err
			}
			return nil
		})
		// A tool still writing gets a broken pipe.
		outR.Close()
	})
	rss, err = c.frames(r, t)
	if err != nil {
		// Whatever the tool still writes or reads goes nowhere.
		outR.Close()
		inW.Close()
	}
	wg.Wait()
	switch {
	case ctx.Err() != nil:
		return rss, false, ctx.Err()
	case outErr != nil:
		// Written or not, the output is incomplete.
		return rss, false, outErr
	case err != nil && inErr != nil:
		return rss, false, fmt.Errorf("standard input of %s: %w", t.Name, inErr)
	}
	return rss, false, err
}

// errWriter remembers whether a write failed, to tell the tool's end of reading from the
// input's failure when a copy fails.
type errWriter struct {
	w   io.Writer
	err error
}

func (w *errWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// sendWithFiles writes one frame with files attached, in one message.
func sendWithFiles(conn net.Conn, typ byte, v any, files []*os.File) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return errors.New("not a unix socket")
	}
	var buf bytes.Buffer
	if err := (&frameWriter{w: &buf}).json(typ, v); err != nil {
		return err
	}
	frame := buf.Bytes()
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	n, _, err := uc.WriteMsgUnix(frame, syscall.UnixRights(fds...), nil)
	if err == nil && n < len(frame) {
		// The descriptors went with the first bytes; the rest of the frame follows.
		_, err = conn.Write(frame[n:])
	}
	return err
}

// readFirst makes the connection's first read, taking the files a piped header carries.
func readFirst(conn net.Conn) ([]byte, []*os.File, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil, nil, nil
	}
	buf := make([]byte, 64<<10)
	// Room for one descriptor more than a client may send, so that too many are seen.
	oob := make([]byte, syscall.CmsgSpace((maxPassed+1)*4))
	n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	var files []*os.File
	if msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for i := range msgs {
			fds, _ := syscall.ParseUnixRights(&msgs[i])
			for _, fd := range fds {
				files = append(files, os.NewFile(uintptr(fd), "toolbox-pipe"))
			}
		}
	}
	if err == io.EOF && n > 0 {
		err = nil
	}
	return buf[:n], files, err
}

// checkPassed says whether the files received fit the header: none with a relayed one, the
// tool's output (after its input, when it has one) with a piped one.
func checkPassed(piped bool, h header, passed []*os.File) error {
	want := 0
	if piped {
		want = 1
		if h.Stdin {
			want = 2
		}
	}
	if len(passed) != want {
		return fmt.Errorf("%d descriptors passed, want %d", len(passed), want)
	}
	return nil
}

// closeFiles closes files; closing one twice is harmless.
func closeFiles(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
