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
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start the toolbox: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		os.RemoveAll(dir)
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return toolbox.Client{Socket: sock}, nil
		}
		select {
		case err := <-exited:
			exited <- err
			return nil, fmt.Errorf("the toolbox exited: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the toolbox did not listen within 10 s")
		}
	}
}

// spawn runs args on this process's standard streams, writes the tool's maximum RSS in KiB to
// descriptor 3 and returns the tool's exit code.
func spawn(args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		return 127
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss := os.NewFile(3, "rss")
		fmt.Fprint(rss, ru.Maxrss)
		rss.Close()
	}
	return cmd.ProcessState.ExitCode()
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
	kib, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, 0, fmt.Errorf("the maximum RSS of %s: %q: %w", name, b, err)
	}
	return took, kib / 1024, nil
}
