// Package toolbox runs the backup tools (the dump tool, the physical backup tool, the stream
// unpacker, the client) either in the calling process's container or in the server's.
//
// Why two places: the agent's image holds the agent alone, while the tools ship in the server
// image, at versions that match the server (a physical backup tool refuses another server
// series). A pod therefore runs a toolbox container from the server image (`mysql-agent
// toolbox`), which executes the tools the agent asks for over a unix socket in a volume both
// containers mount. The agent passes the pipes of a tool's standard input and output on the
// socket, so that their bytes go between the tool and the agent without a copy in between;
// standard error and the exit come back in frames (pipes.go). Tests and local runs, where the
// tools are on the agent's own PATH, use Local.
//
// Invariants:
//   - Only the tools in the server's allow-list run; anything else is refused.
//   - Arguments carry no secret: the tools read credentials from option files on a shared
//     private volume, so nothing secret crosses the socket.
//   - A caller that goes away (context cancelled, connection closed) kills its tool.
//   - The protocol is versioned by its frame types and stays backward compatible: after an
//     operator upgrade a new agent talks to the toolbox binary the pod started with. A toolbox
//     that predates piped runs refuses their header (as does one whose pipes did not arrive),
//     and the client relays the tool's streams in frames instead; it reads none of the tool's
//     input before a piped run is accepted.
package toolbox

import (
	"context"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// Tool is one run of a tool: its name (looked up in PATH), its arguments and where its
// standard streams go.
type Tool struct {
	Name string
	Args []string
	// Stdin is the tool's standard input; nil for none.
	Stdin io.Reader
	// Stdout and Stderr receive its output; nil discards it.
	Stdout, Stderr io.Writer
}

// Runner runs tools to completion.
type Runner interface {
	// Run runs t and returns the tool's peak resident memory in bytes (0 when unknown). A
	// tool that exits non-zero is an error.
	Run(ctx context.Context, t Tool) (maxRSS int64, err error)
}

// Local runs tools as child processes of this process.
type Local struct{}

// waitDelay bounds how long a finished or killed tool's streams are drained.
const waitDelay = 10 * time.Second

// Run implements Runner.
func (Local) Run(ctx context.Context, t Tool) (int64, error) {
	cmd := exec.CommandContext(ctx, t.Name, t.Args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = t.Stdin, t.Stdout, t.Stderr
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	var rss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss * 1024 // kilobytes on Linux
		}
	}
	return rss, err
}

// Or returns r, or Local when r is nil.
func Or(r Runner) Runner {
	if r == nil {
		return Local{}
	}
	return r
}
