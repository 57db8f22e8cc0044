package toolbox

import (
	"bytes"
	"io"
	"os"
	"slices"
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
	_, got := readStdout(t, &conn)
	if !bytes.Equal(got, payload) {
		t.Fatalf("relayed %d bytes, want the %d written", len(got), len(payload))
	}
}

// TestShortReadsWaitForThePipe: after a small read of a tool's pipe the relay waits for the
// tool to write more, and sends what it wrote meanwhile in one frame; after a full or a large
// read it reads on at once, and it never waits for a reader that is not a pipe.
func TestShortReadsWaitForThePipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	// Without waits the relay would block on the pipe for good: end the tool's output then.
	watchdog := time.AfterFunc(10*time.Second, func() { pw.Close() })
	defer watchdog.Stop()
	chunk := bytes.Repeat([]byte("d"), 4<<10)
	// The tool writes a chunk. During the relay's first wait it writes 8 more, as a dump
	// does meanwhile; during the second a full frame and 3 chunks, and ends.
	plan := [][]byte{bytes.Repeat(chunk, 8), append(bytes.Repeat([]byte("f"), maxFrame), bytes.Repeat(chunk, 3)...)}
	want := slices.Concat(append([][]byte{chunk}, plan...)...)
	waits := 0
	defer func(s func(time.Duration)) { sleep = s }(sleep)
	sleep = func(d time.Duration) {
		if d != fillWait {
			t.Errorf("waited %v, want %v", d, fillWait)
		}
		waits++
		if len(plan) == 0 {
			return
		}
		p, last := plan[0], len(plan) == 1
		plan = plan[1:]
		// A writer of its own: a full frame does not fit the pipe beside what it holds.
		go func() {
			if _, err := pw.Write(p); err != nil {
				t.Error(err)
			}
			if last {
				pw.Close()
			}
		}()
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := pw.Write(chunk); err != nil {
		t.Fatal(err)
	}
	var conn bytes.Buffer
	s := stream{&frameWriter{w: &conn}, frameStdout}
	if _, err := s.ReadFrom(struct {
		io.Reader
		syscall.Conn
	}{pr, pr}); err != nil {
		t.Fatal(err)
	}
	frames, got := readStdout(t, &conn)
	if !bytes.Equal(got, want) {
		t.Fatalf("relayed %d bytes, want the %d written", len(got), len(want))
	}
	// chunk | 8 chunks | full frame | 3 chunks (a read may stop short of a write's end).
	if frames > 5 {
		t.Errorf("%d frames, want the chunks written during each wait in one", frames)
	}
	if waits < 2 || waits > 4 {
		t.Errorf("waited %d times, want only after the short reads", waits)
	}

	// A large read short of a frame: a fast tool is not waited for.
	fastR, fastW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer fastR.Close()
	if _, err := fastW.Write(bytes.Repeat(chunk, smallRead/len(chunk))); err != nil {
		t.Fatal(err)
	}
	fastW.Close()
	waits, conn = 0, bytes.Buffer{}
	if _, err := s.ReadFrom(struct {
		io.Reader
		syscall.Conn
	}{fastR, fastR}); err != nil {
		t.Fatal(err)
	}
	if waits != 0 {
		t.Errorf("waited %d times after a read of %d bytes", waits, smallRead)
	}

	// Not a pipe: short reads are not waited for.
	waits, conn = 0, bytes.Buffer{}
	if _, err := s.ReadFrom(io.MultiReader(bytes.NewReader(chunk), bytes.NewReader(chunk))); err != nil {
		t.Fatal(err)
	}
	if waits != 0 {
		t.Errorf("waited %d times for a reader that is not a pipe", waits)
	}
}

// readStdout parses the frames in conn: how many, and the bytes of the standard output.
func readStdout(t *testing.T, conn *bytes.Buffer) (int, []byte) {
	t.Helper()
	r := newFrameReader(nil)
	r.r.Reset(conn)
	var got []byte
	n := 0
	for {
		typ, p, err := r.read()
		if err == io.EOF {
			return n, got
		}
		if err != nil || typ != frameStdout {
			t.Fatalf("frame %q: %v", typ, err)
		}
		n++
		got = append(got, p...)
	}
}
