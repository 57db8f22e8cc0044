package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/toolbox"
	"github.com/mysqlop/mysql-operator/test/bench/benchutil"
	"github.com/mysqlop/mysql-operator/test/proc"
)

// The benchmark starts the tools from small processes of its own, started from its own
// binary: the toolbox (a container of its own in a pod) and a spawner for the raw tools. A
// tool started from this process would report this process's memory as its own: Linux carries
// the parent's RSS high-water mark, shared until exec, into the child's ru_maxrss, and this
// process holds hundreds of MiB of buffers. The reported figures were the benchmark's, not the
// tools'.
const (
	serveToolboxArg = "-serve-toolbox"
	spawnArg        = "-spawn"
)

// runChild runs the child the arguments name and exits; it returns when they name none.
func runChild() {
	if len(os.Args) < 3 {
		return
	}
	switch os.Args[1] {
	case serveToolboxArg:
		os.Exit(serveToolbox(os.Args[2]))
	case spawnArg:
		os.Exit(spawn(os.Args[2:]))
	}
}

// serveToolbox serves the tools on socket until SIGTERM and returns the exit code.
func serveToolbox(socket string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	l, err := toolbox.Listen(socket)
	if err == nil {
		err = (&toolbox.Server{Allowed: toolbox.Tools}).Serve(ctx, l)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "toolbox:", err)
		return 1
	}
	return 0
}

// startToolbox starts the toolbox in a process of its own and returns its client; the
// process is stopped when t's cleanups run.
func startToolbox(t *benchutil.T) (toolbox.Runner, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// A short directory: a unix socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "toolbox-")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "toolbox.sock")
	cmd := exec.Command(self, serveToolboxArg, sock)
	cmd.Stderr = os.Stderr // its log: a line per tool it ran
	// Started as the benchmark's servers are: it dies with the benchmark.
	if err := proc.Start(cmd); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start the toolbox: %w", err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		proc.Terminate(cmd.Process, done, 10*time.Second)
		os.RemoveAll(dir)
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return toolbox.Client{Socket: sock}, nil
		}
		select {
		case <-done:
			return nil, fmt.Errorf("the toolbox exited: %v", waitErr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the toolbox did not listen within 10 s")
		}
	}
}

// spawn runs args on this process's standard streams (toolbox.Local), writes the tool's
// maximum RSS in bytes to descriptor 3 and returns the tool's exit code.
func spawn(args []string) int {
	rss, err := toolbox.Local{}.Run(context.Background(), toolbox.Tool{Name: args[0], Args: args[1:],
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	out := os.NewFile(3, "rss")
	fmt.Fprint(out, rss)
	out.Close()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return 127
	}
	return 0
}

// runFrom runs a tool with file as its standard input (started by the spawner) and returns how
// long it took and its maximum RSS in MiB. The time includes starting the spawner, a few
// milliseconds.
func runFrom(file, name string, args ...string) (time.Duration, float64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	in, err := os.Open(file)
	if err != nil {
		return 0, 0, err
	}
	defer in.Close()
	rssR, rssW, err := os.Pipe()
	if err != nil {
		return 0, 0, err
	}
	defer rssR.Close()
	cmd := exec.Command(self, append([]string{spawnArg, name}, args...)...)
	var stderr strings.Builder
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, io.Discard, &stderr
	cmd.ExtraFiles = []*os.File{rssW}
	start := time.Now()
	err = cmd.Start()
	rssW.Close()
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w: %s", name, err, stderr.String())
	}
	took := time.Since(start)
	b, err := io.ReadAll(rssR)
	if err != nil {
		return 0, 0, fmt.Errorf("the maximum RSS of %s: %w", name, err)
	}
	rss, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, 0, fmt.Errorf("the maximum RSS of %s: %q: %w", name, b, err)
	}
	return took, rss / (1 << 20), nil
}
