// Package proc starts and stops the processes test helpers own, and finds them free ports.
// Processes started here die with the test binary:
// each runs in its own process group with PR_SET_PDEATHSIG, forked from one OS thread that is
// locked for the life of the binary (the kernel sends the signal when the forking thread exits,
// not the process, so that thread must never exit first).
package proc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

type request struct {
	cmd  *exec.Cmd
	done chan error
}

var requests = make(chan request)

func init() {
	go func() {
		runtime.LockOSThread()
		for r := range requests {
			r.done <- r.cmd.Start()
		}
	}()
}

// Start starts cmd; the kernel kills it with SIGKILL if the test binary dies. The caller
// waits for it and stops it.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	requests <- request{cmd: cmd, done: done}
	return <-done
}

// Terminate sends SIGTERM to p and waits until done is closed (by whoever waits for the
// process), sending SIGKILL after grace.
func Terminate(p *os.Process, done <-chan struct{}, grace time.Duration) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = p.Kill()
		<-done
	}
}

// FreePorts returns n distinct free loopback TCP ports.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		// Held open until all are chosen, so the same port is not returned twice.
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// FreePort returns one free loopback TCP port.
func FreePort() (int, error) {
	p, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}
