package localkubelet

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// mountPointsDir holds the lock and the list of mount points the runtimes on this machine
// made on the host.
const mountPointsDir = "/run/mysqlop-local-kubelet"

// mountPoints are the host paths runtimes make to mount volumes on (say /etc/mysqlop/tls),
// shared by every runtime on the machine: several run at once when test suites run in
// parallel. Removing a mount point on the host detaches the mounts on it in every mount
// namespace (Linux 3.18 and later), so a runtime that removed "its" paths at exit would take
// the volumes away from another runtime's running containers. So each runtime holds a shared
// lock from its first mount point until it exits, and only one that then gets the lock
// exclusively (no other runtime is running) removes the paths, every runtime's, that a
// runtime created; the others leave them to the last.
type mountPoints struct {
	// dir holds the lock and the list (mountPointsDir; a test's own directory in tests).
	dir  string
	mu   sync.Mutex
	lock *os.File
}

func (m *mountPoints) lockPath() string { return filepath.Join(m.dir, "lock") }
func (m *mountPoints) listPath() string { return filepath.Join(m.dir, "created") }

// ensure makes target on the host when it does not exist (a directory, or an empty file when
// isFile), recording it and each ancestor it made for removal by the last runtime to exit.
func (m *mountPoints) ensure(target string, isFile bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return fmt.Errorf("mount point registry: %w", err)
		}
		f, err := os.OpenFile(m.lockPath(), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return fmt.Errorf("mount point lock: %w", err)
		}
		// Blocks only while the last runtime of a previous generation removes the paths.
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
			f.Close()
			return fmt.Errorf("mount point lock: %w", err)
		}
		m.lock = f
	}
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	dir := target
	if isFile {
		dir = filepath.Dir(target)
	}
	var made []string
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		made = append(made, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if isFile {
		f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return err
		}
		f.Close()
		made = append(made, target)
	}
	if len(made) == 0 {
		return nil
	}
	list, err := os.OpenFile(m.listPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("mount point registry: %w", err)
	}
	defer list.Close()
	// One write: appends of several runtimes do not interleave.
	if _, err := list.WriteString(strings.Join(made, "\n") + "\n"); err != nil {
		return fmt.Errorf("mount point registry: %w", err)
	}
	return nil
}

// release ends this runtime's use of the mount points; when no other runtime holds them, it
// removes every recorded path that is empty, deepest first (a path the host also uses, or
// one something was written into, stays).
func (m *mountPoints) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil {
		return
	}
	defer func() { m.lock.Close(); m.lock = nil }()
	if err := unix.Flock(int(m.lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return // another runtime runs containers on them; the last one removes them
	}
	f, err := os.Open(m.listPath())
	if err != nil {
		return
	}
	var paths []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if p := s.Text(); filepath.IsAbs(p) {
			paths = append(paths, p)
		}
	}
	f.Close()
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	for _, p := range paths {
		_ = os.Remove(p) // fails when not empty: then it is no longer only ours
	}
	_ = os.Remove(m.listPath())
}
