// Package proc starts the processes test helpers own so that they die with the test binary:
// each runs in its own process group with PR_SET_PDEATHSIG, forked from one OS thread that is
// locked for the life of the binary (the kernel sends the signal when the forking thread exits,
// not the process, so that thread must never exit first).
package proc

import (
	"os/exec"
	"runtime"
	"syscall"
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
