package toolbox

import (
	"bytes"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOutputPipeIsEnlarged: the relay reads a tool's output in frames of up to maxFrame from
// a pipe of that size, as exec hands it over (the *os.File wrapped without WriteTo).
func TestOutputPipeIsEnlarged(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	payload := bytes.Repeat([]byte("x"), 200<<10)
	var conn bytes.Buffer
	s := stream{&frameWriter{w: &conn}, frameStdout}
	done := make(chan error, 1)
	go func() {
		_, err := s.ReadFrom(struct {
			io.Reader
			syscall.Conn
		}{pr, pr})
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		size, err := unix.FcntlInt(pr.Fd(), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		if size == maxFrame {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tool's pipe holds %d bytes, want %d", size, maxFrame)
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := pw.Write(payload); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r := newFrameReader(nil)
	r.r.Reset(&conn)
	var got []byte
	for {
		typ, p, err := r.read()
		if err == io.EOF {
			break
		}
		if err != nil || typ != frameStdout {
			t.Fatalf("frame %q: %v", typ, err)
		}
		got = append(got, p...)
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("relayed %d bytes, want the %d written", len(got), len(payload))
	}
}
