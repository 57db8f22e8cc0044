package agent

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/klog/v2"
)

// Killing the server: the operator fences a writable member that is not the primary (a former
// primary back from a partition, whose commits wait for acknowledgements no replica sends) by
// crashing its server rather than ending its connections, so that no waiting commit is ever
// answered OK (docs/clustering.md, "Fencing"). The pod shares one process namespace, and every
// container runs as the same user, so the agent may signal the server; it finds it through
// the server's pid file and kills it only if that process is a server binary. The container
// restarts the server, read-only, after crash recovery.

// serverBinaries are the process names KillServer accepts.
var serverBinaries = []string{"mariadbd", "mysqld"}

func (s *Server) killServer(w http.ResponseWriter, r *http.Request) {
	if !s.checkToken(r) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	pid, err := KillServer(s.PIDFile)
	if err != nil {
		klog.ErrorS(err, "Killing the server")
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	klog.InfoS("Killed the server on the operator's request", "pid", pid)
	w.WriteHeader(http.StatusNoContent)
}

// KillServer SIGKILLs the server whose pid file is pidFile and returns its pid.
func KillServer(pidFile string) (int, error) {
	if pidFile == "" {
		return 0, errors.New("no server pid file is configured")
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, fmt.Errorf("read the server's pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("the server's pid file holds %q", strings.TrimSpace(string(b)))
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return 0, fmt.Errorf("server process %d: %w", pid, err)
	}
	name := strings.TrimSpace(string(comm))
	ok := false
	for _, b := range serverBinaries {
		ok = ok || name == b
	}
	if !ok {
		return 0, fmt.Errorf("process %d is %q, not the server", pid, name)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("kill server process %d: %w", pid, err)
	}
	return pid, nil
}
