package toolbox_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/toolbox"
)

// serve starts a toolbox server allowing the given tools and returns its client.
func serve(t testing.TB, allowed ...string) toolbox.Client {
	t.Helper()
	return serveWith(t, &toolbox.Server{Allowed: allowed})
}

// toolboxes returns clients of a current toolbox, which takes the tool's pipes, of one that
// predates piped runs, and of one that never gets the pipes (a policy between the containers
// dropped them): to the last two the client relays the tool's streams.
func toolboxes(t testing.TB, allowed ...string) map[string]toolbox.Client {
	t.Helper()
	return map[string]toolbox.Client{
		"piped":                    serve(t, allowed...),
		"relayed-to-older-toolbox": serveWith(t, toolbox.RelayedOnly(&toolbox.Server{Allowed: allowed})),
		"relayed-pipes-lost":       serveWith(t, toolbox.DroppingPipes(&toolbox.Server{Allowed: allowed})),
	}
}

// serveWith starts s and returns its client.
func serveWith(t testing.TB, s *toolbox.Server) toolbox.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "toolbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "t.sock")
	l, err := toolbox.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v", fi.Mode().Perm(), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		os.RemoveAll(dir)
	})
	return toolbox.Client{Socket: sock}
}

// Standard input, output and error cross the socket whole, in both directions at once, and
// the peak memory of the tool comes back.
func TestClientStreamsLikeALocalRun(t *testing.T) {
	in := make([]byte, 8<<20)
	if _, err := rand.Read(in); err != nil {
		t.Fatal(err)
	}
	runners := map[string]toolbox.Runner{"local": toolbox.Local{}}
	for name, c := range toolboxes(t, "sh") {
		runners[name] = c
	}
	for name, r := range runners {
		var out, errOut bytes.Buffer
		rss, err := r.Run(context.Background(), toolbox.Tool{Name: "sh", Args: []string{"-c", "echo started >&2; cat; echo done >&2"},
			Stdin: bytes.NewReader(in), Stdout: &out, Stderr: &errOut})
		if err != nil || !bytes.Equal(out.Bytes(), in) || errOut.String() != "started\ndone\n" || rss == 0 {
			t.Errorf("%s: %d of %d bytes back, stderr %q, rss %d, %v", name, out.Len(), len(in), errOut.String(), rss, err)
		}
	}
}

func TestFailuresAreErrors(t *testing.T) {
	ctx := context.Background()
	for name, c := range toolboxes(t, "sh") {
		var errOut bytes.Buffer
		_, err := c.Run(ctx, toolbox.Tool{Name: "sh", Args: []string{"-c", "echo oops >&2; exit 3"}, Stderr: &errOut})
		if err == nil || err.Error() != "exit status 3" || errOut.String() != "oops\n" {
			t.Errorf("%s: failing tool: %v, stderr %q", name, err, errOut.String())
		}
		// A tool that stops reading early: its exit decides, not the rest of its input.
		_, err = c.Run(ctx, toolbox.Tool{Name: "sh", Args: []string{"-c", "head -c 1 >/dev/null"}, Stdin: bytes.NewReader(make([]byte, 8<<20))})
		if err != nil {
			t.Errorf("%s: a tool that read part of its input and succeeded: %v", name, err)
		}
		marker := filepath.Join(t.TempDir(), "ran")
		_, err = c.Run(ctx, toolbox.Tool{Name: "touch", Args: []string{marker}})
		if err == nil || !strings.Contains(err.Error(), `"touch" is not allowed`) {
			t.Errorf("%s: a tool off the list: %v", name, err)
		}
		if _, statErr := os.Stat(marker); statErr == nil {
			t.Errorf("%s: a tool off the list ran", name)
		}
	}
	_, err := (toolbox.Client{Socket: filepath.Join(t.TempDir(), "none.sock")}).Run(ctx, toolbox.Tool{Name: "sh"})
	if err == nil || !strings.Contains(err.Error(), "reach the toolbox container") {
		t.Errorf("no server: %v", err)
	}
}

// waitGone waits until the process whose pid sh wrote to file has exited.
func waitGone(t *testing.T, file string) {
	t.Helper()
	var pid int
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(file)
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			pid = p
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tool never started")
		}
	}
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("tool %d still runs", pid)
		}
	}
}

// A caller that gives up (cancelled, its output refused, its input broken) kills the tool in
// the toolbox, and the tool's half-read input never counts as success.
func TestAbandonedToolsAreKilled(t *testing.T) {
	for name, c := range toolboxes(t, "sh") {
		t.Run(name, func(t *testing.T) { testAbandonedToolsAreKilled(t, c) })
	}
}

func testAbandonedToolsAreKilled(t *testing.T, c toolbox.Client) {
	dir := t.TempDir()
	script := func(pidFile, rest string) []string { return []string{"-c", "echo $$ > " + pidFile + "; exec " + rest} }

	ctx, cancel := context.WithCancel(context.Background())
	pid := filepath.Join(dir, "cancelled")
	// Cancelled once the tool runs: a fixed delay could cancel it before it started on a
	// loaded machine, and then no pid file is ever written.
	go func(pid string) {
		waitPidFile(pid)
		cancel()
	}(pid)
	if _, err := c.Run(ctx, toolbox.Tool{Name: "sh", Args: script(pid, "sleep 60")}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	waitGone(t, pid)

	pid = filepath.Join(dir, "refused")
	refused := errors.New("disk full")
	if _, err := c.Run(context.Background(), toolbox.Tool{Name: "sh", Args: script(pid, "yes"), Stdout: failingWriter{refused}}); !errors.Is(err, refused) {
		t.Errorf("output refused: %v", err)
	}
	waitGone(t, pid)

	pid = filepath.Join(dir, "broken")
	broken := errors.New("connection reset by the object store")
	in := io.MultiReader(strings.NewReader("part of it\n"), failingReader{broken, pid})
	_, err := c.Run(context.Background(), toolbox.Tool{Name: "sh", Args: script(pid, "cat"), Stdin: in})
	if err == nil || !strings.Contains(err.Error(), broken.Error()) {
		t.Errorf("input broken: %v", err)
	}
	waitGone(t, pid)
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

// failingReader fails once the tool wrote its pid file.
type failingReader struct {
	err     error
	pidFile string
}

func (f failingReader) Read([]byte) (int, error) {
	waitPidFile(f.pidFile)
	return 0, f.err
}

// waitPidFile waits up to 5 s until sh wrote its pid and the newline to file. The file exists,
// empty, as soon as sh opens it: a tool killed then never writes its pid, and waitGone cannot
// tell it ran.
func waitPidFile(file string) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(file); len(b) > 0 && b[len(b)-1] == '\n' {
			return
		}
	}
}

// recordingRunner runs tools locally and records what their standard streams were.
type recordingRunner struct{ stdin, stdout []any }

func (r *recordingRunner) Run(ctx context.Context, t toolbox.Tool) (int64, error) {
	r.stdin, r.stdout = append(r.stdin, t.Stdin), append(r.stdout, t.Stdout)
	return toolbox.Local{}.Run(ctx, t)
}

// A current toolbox gives the tool the client's pipes as its standard input and output (exec
// then connects them directly, with no copy in the toolbox); an older one, or one whose pipes
// were lost on the way, gets the streams relayed.
func TestToolsGetTheClientsPipes(t *testing.T) {
	for name, relayed := range map[string]func(*toolbox.Server) *toolbox.Server{
		"piped": nil, "older toolbox": toolbox.RelayedOnly, "pipes lost": toolbox.DroppingPipes,
	} {
		rec := &recordingRunner{}
		s := &toolbox.Server{Allowed: []string{"sh"}, Runner: rec}
		if relayed != nil {
			s = relayed(s)
		}
		c := serveWith(t, s)
		var out bytes.Buffer
		if _, err := c.Run(context.Background(), toolbox.Tool{Name: "sh", Args: []string{"-c", "cat"}, Stdin: strings.NewReader("x"), Stdout: &out}); err != nil || out.String() != "x" {
			t.Fatalf("%s: %q, %v", name, out.String(), err)
		}
		if len(rec.stdin) != 1 {
			t.Fatalf("%s: %d runs, want 1", name, len(rec.stdin))
		}
		_, inFile := rec.stdin[0].(*os.File)
		_, outFile := rec.stdout[0].(*os.File)
		if piped := relayed == nil; inFile != piped || outFile != piped {
			t.Errorf("%s: the tool's input is a file: %v, its output: %v", name, inFile, outFile)
		}
	}
}

// BenchmarkRun passes 64 MiB through cat: run locally, piped through a toolbox, and relayed
// by an older one. cpu-ms/op is the CPU of all processes involved.
func BenchmarkRun(b *testing.B) {
	in := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	runners := map[string]toolbox.Runner{"local": toolbox.Local{}}
	for name, c := range toolboxes(b, "cat") {
		runners[name] = c
	}
	for _, name := range []string{"local", "piped", "relayed-to-older-toolbox"} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			start := cpuTime()
			for b.Loop() {
				if _, err := runners[name].Run(context.Background(), toolbox.Tool{Name: "cat", Stdin: bytes.NewReader(in), Stdout: io.Discard}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-start).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time of this process (client and toolbox here) and its waited-for
// children (the tools).
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

// Two tools at once, the output of one the input of the other through the client (as a
// point-in-time replay runs the binlog tool and the client): each tool holds only its own
// pipes, so each stream ends when its tool does. A pipe end that leaked into the other tool
// would hold its stream open, and the pair would wait on each other until the deadline.
func TestToolsAtOnceHoldOnlyTheirOwnPipes(t *testing.T) {
	for name, c := range toolboxes(t, "sh") {
		for i := range 20 {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			pr, pw := io.Pipe()
			first := make(chan error, 1)
			go func() {
				_, err := c.Run(ctx, toolbox.Tool{Name: "sh", Args: []string{"-c", "head -c 1000000 /dev/zero"}, Stdout: pw})
				pw.CloseWithError(err)
				first <- err
			}()
			var out bytes.Buffer
			_, err := c.Run(ctx, toolbox.Tool{Name: "sh", Args: []string{"-c", "wc -c"}, Stdin: pr, Stdout: &out})
			if ferr := <-first; ferr != nil || err != nil || strings.TrimSpace(out.String()) != "1000000" {
				t.Fatalf("%s, run %d: first %v, second %v, counted %q", name, i, ferr, err, out.String())
			}
			cancel()
		}
	}
}
