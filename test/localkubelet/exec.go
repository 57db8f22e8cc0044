package localkubelet

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExecSpec is what the runtime hands the helper that becomes a container's process. The
// helper runs as root inside the pod's network namespace and a fresh mount namespace (made by
// `ip netns exec`, which also binds /etc/netns/<ns>/hosts over /etc/hosts); it mounts the
// volumes, takes the pod's hostname and the container's user, and execs the command.
type ExecSpec struct {
	Argv     []string `json:"argv"`
	Env      []string `json:"env"`
	Dir      string   `json:"dir,omitempty"`
	Hostname string   `json:"hostname"`
	UID      int      `json:"uid"`
	GID      int      `json:"gid"`
	Groups   []int    `json:"groups,omitempty"`
	Mounts   []Mount  `json:"mounts"`
}

// Mount binds Source (a host path) at Target inside the container.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

func readExecSpec(path string) (ExecSpec, error) {
	var s ExecSpec
	b, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("read exec spec: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("parse exec spec %s: %w", path, err)
	}
	return s, nil
}

// ExecContainer is the helper's body (the binary's exec-container subcommand). It only
// returns on error.
func ExecContainer(specPath string) error {
	// The UTS namespace is per thread until exec: stay on one thread from unshare to exec.
	runtime.LockOSThread()
	s, err := readExecSpec(specPath)
	if err != nil {
		return err
	}
	// Open the command before mounting when it exists on the host: a volume at /tmp may hide
	// it. A command inside a volume is found after mounting.
	var before os.FileInfo
	bin, err := openCommand(s.Argv[0], s.Env)
	if err == nil {
		defer bin.Close()
		if before, err = bin.Stat(); err != nil {
			return err
		}
	}
	// Parents first, so that a mount inside another volume's path lands on top of it.
	sort.SliceStable(s.Mounts, func(i, j int) bool { return len(s.Mounts[i].Target) < len(s.Mounts[j].Target) })
	// Open every source before mounting anything: a volume mounted at /tmp must not hide the
	// sources of the others when the runtime's state lives under /tmp.
	fds := make([]int, len(s.Mounts))
	for i, m := range s.Mounts {
		fd, err := unix.Open(m.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open volume source %s: %w", m.Source, err)
		}
		fds[i] = fd
	}
	for i, m := range s.Mounts {
		src := fmt.Sprintf("/proc/self/fd/%d", fds[i])
		if err := unix.Mount(src, m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s at %s: %w", m.Source, m.Target, err)
		}
		if m.ReadOnly {
			if err := unix.Mount("", m.Target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("make %s read-only: %w", m.Target, err)
			}
		}
		_ = unix.Close(fds[i])
	}
	if err := unix.Unshare(unix.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("unshare uts: %w", err)
	}
	if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
		return fmt.Errorf("set hostname: %w", err)
	}
	dir := s.Dir
	if dir == "" {
		dir = "/"
	}
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("chdir %s: %w", dir, err)
	}
	path, err := lookPath(s.Argv[0], s.Env)
	if before != nil {
		if after, statErr := os.Stat(path); err != nil || statErr != nil || !os.SameFile(before, after) {
			// Hidden by a mount: run the file opened before, through its descriptor.
			path, err = fmt.Sprintf("/proc/self/fd/%d", bin.Fd()), nil
		}
	}
	if err != nil {
		return err
	}
	if err := syscall.Setgroups(s.Groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(s.GID); err != nil {
		return fmt.Errorf("setgid %d: %w", s.GID, err)
	}
	if err := syscall.Setuid(s.UID); err != nil {
		return fmt.Errorf("setuid %d: %w", s.UID, err)
	}
	return fmt.Errorf("exec %s: %w", path, syscall.Exec(path, s.Argv, s.Env))
}

func openCommand(name string, env []string) (*os.File, error) {
	path, err := lookPath(name, env)
	if err != nil {
		return nil, err
	}
	return os.Open(path)
}

// lookPath resolves name against the container's PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}
