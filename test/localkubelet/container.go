package localkubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// container is one container of a pod and its current process.
type container struct {
	w    *podWorker
	spec *corev1.Container
	init bool
	// next, when set, is the spec the next start uses (an in-place image change).
	next *corev1.Container

	mu       sync.Mutex
	proc     *os.Process
	exited   chan struct{}
	running  *corev1.ContainerStateRunning
	last     *corev1.ContainerStateTerminated
	waiting  string
	restarts int32
	// crashes counts the restarts since the container last ran for backoffReset; it sets the
	// backoff.
	crashes int32
	ready   bool
	started bool
	// done: an init container that succeeded, or a container that will not restart.
	done bool
	// runs are the container's last two runs in its log file (kubectl logs --previous reads
	// the last terminated one).
	runs []logRun
}

// PIDFile is where the runtime records the pid of a container's current process, for tests
// that kill it.
func PIDFile(stateDir string, podUID, container string) string {
	return filepath.Join(stateDir, "pods", podUID, container+".pid")
}

// LogFile is a container's log: all its runs appended, each line stamped with the time it was
// written (RFC 3339, then a space), as a kubelet's CRI log keeps them.
func LogFile(stateDir string, podUID, container string) string {
	return filepath.Join(stateDir, "pods", podUID, "logs", container+".log")
}

// execSpecPath is where a container's ExecSpec is kept: its start and kubectl exec read it.
func execSpecPath(podDir, container string) string {
	return filepath.Join(podDir, container+".exec.json")
}

// start launches the container's process through the exec-container helper.
func (c *container) start(ctx context.Context) error {
	w := c.w
	c.mu.Lock()
	if c.next != nil {
		c.spec, c.next = c.next, nil
	}
	c.mu.Unlock()
	env, vars, err := w.containerEnv(ctx, c.spec)
	if err != nil {
		return err
	}
	argv, err := w.r.argv(c.spec, vars)
	if err != nil {
		return err
	}
	w.mu.Lock()
	vols, pn := w.volumes, w.net
	w.mu.Unlock()
	spec := ExecSpec{Argv: argv, Env: env, Dir: c.spec.WorkingDir, Hostname: w.hostname()}
	spec.UID, spec.GID, spec.Groups = identity(w.pod, c.spec)
	for _, m := range c.spec.VolumeMounts {
		src, ok := vols[m.Name]
		if !ok {
			return fmt.Errorf("mount %s: no volume of that name", m.Name)
		}
		if m.SubPath != "" {
			src = filepath.Join(src, m.SubPath)
		}
		st, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("mount %s: %w", m.Name, err)
		}
		if err := w.r.mountPoints.ensure(m.MountPath, !st.IsDir()); err != nil {
			return fmt.Errorf("mount point %s: %w", m.MountPath, err)
		}
		spec.Mounts = append(spec.Mounts, Mount{Source: src, Target: m.MountPath, ReadOnly: m.ReadOnly})
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	specPath := execSpecPath(w.dir, c.spec.Name)
	if err := os.WriteFile(specPath, b, 0o600); err != nil {
		return err
	}
	logf, err := os.OpenFile(LogFile(w.r.opts.StateDir, string(w.pod.UID), c.spec.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	st, err := logf.Stat()
	if err != nil {
		logf.Close()
		return err
	}
	// A pipe of our own rather than an io.Writer, so that Wait does not wait for whatever the
	// container spawned and left holding its output.
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return err
	}
	cmd := exec.Command("ip", "netns", "exec", pn.Namespace, w.r.opts.Self, "exec-container", specPath)
	cmd.Stdout, cmd.Stderr = pw, pw
	// Its own process group, so that a stop reaches what the container spawned too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		logf.Close()
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	run := logRun{start: st.Size(), done: make(chan struct{})}
	go func() {
		defer close(run.done)
		defer logf.Close()
		defer pr.Close()
		stampLines(pr, logf, time.Now)
	}()
	_ = os.WriteFile(PIDFile(w.r.opts.StateDir, string(w.pod.UID), c.spec.Name), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	exited := make(chan struct{})
	c.mu.Lock()
	c.runs = append(c.runs[max(len(c.runs)-1, 0):], run)
	c.proc, c.exited = cmd.Process, exited
	c.running = &corev1.ContainerStateRunning{StartedAt: metav1.Now()}
	c.waiting, c.ready, c.started = "", false, c.spec.StartupProbe == nil
	if c.spec.ReadinessProbe == nil && c.started && !c.init {
		c.ready = true
	}
	c.mu.Unlock()
	w.kick()
	go func() {
		err := cmd.Wait()
		code := int32(0)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = int32(ee.ExitCode())
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int32(ws.Signal())
			}
		} else if err != nil {
			code = 128
		}
		c.mu.Lock()
		reason := "Completed"
		if code != 0 {
			reason = "Error"
		}
		started := metav1.Now()
		if c.running != nil {
			started = c.running.StartedAt
		}
		c.last = &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: metav1.Now(),
			ContainerID: containerID(cmd.Process.Pid)}
		c.running, c.proc, c.ready = nil, nil, false
		c.mu.Unlock()
		close(exited)
		w.kick()
	}()
	return nil
}

func containerID(pid int) string { return fmt.Sprintf("local://%d", pid) }

// identity is the uid, gid and groups a container runs as.
func identity(p *corev1.Pod, c *corev1.Container) (uid, gid int, groups []int) {
	ps := p.Spec.SecurityContext
	if ps == nil {
		ps = &corev1.PodSecurityContext{}
	}
	if ps.RunAsUser != nil {
		uid = int(*ps.RunAsUser)
	}
	if ps.RunAsGroup != nil {
		gid = int(*ps.RunAsGroup)
	}
	if cs := c.SecurityContext; cs != nil {
		if cs.RunAsUser != nil {
			uid = int(*cs.RunAsUser)
		}
		if cs.RunAsGroup != nil {
			gid = int(*cs.RunAsGroup)
		}
	}
	if ps.FSGroup != nil {
		groups = append(groups, int(*ps.FSGroup))
	}
	for _, g := range ps.SupplementalGroups {
		groups = append(groups, int(g))
	}
	return uid, gid, groups
}

// wait blocks until the current process exits; it answers its exit code.
func (c *container) wait() int32 {
	c.mu.Lock()
	exited := c.exited
	c.mu.Unlock()
	if exited != nil {
		<-exited
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		return 0
	}
	return c.last.ExitCode
}

// terminate sends SIGTERM to the process group and SIGKILL after grace.
func (c *container) terminate(grace time.Duration) {
	c.mu.Lock()
	p, exited := c.proc, c.exited
	c.mu.Unlock()
	if p == nil {
		return
	}
	sig := syscall.SIGTERM
	if grace <= 0 {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.Pid, sig)
	if sig == syscall.SIGKILL {
		return
	}
	go func() {
		select {
		case <-exited:
		case <-time.After(grace):
			_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		}
	}()
}

func (c *container) setWaiting(reason string) {
	c.mu.Lock()
	c.waiting = reason
	c.mu.Unlock()
	c.w.kick()
}

// backoff sleeps before restart number n; false when the pod stops meanwhile. The kubelet
// starts at 10 s; this runtime starts at 1 s, doubling to 16 s, to keep tests short. As the
// kubelet forgets a container's crashes once it ran for twice its longest backoff (10 min),
// this runtime does after backoffReset.
func (c *container) backoff(ctx context.Context, n int32) bool {
	d := time.Second << min(n, 4)
	c.setWaiting("CrashLoopBackOff")
	select {
	case <-time.After(d):
		return true
	case <-c.w.stopping:
		return false
	case <-ctx.Done():
		return false
	}
}

// backoffReset is how long a container must run for its earlier crashes to be forgotten.
const backoffReset = 32 * time.Second

// runInit runs an init container to success, retrying per the pod's restart policy; false
// when the pod cannot go on.
func (c *container) runInit(ctx context.Context) bool {
	for {
		if c.w.isStopping() || ctx.Err() != nil {
			return false
		}
		if err := c.start(ctx); err != nil {
			c.w.setMessage(fmt.Sprintf("init container %s: %v", c.spec.Name, err))
			c.setWaiting("CreateContainerError")
		} else if c.wait() == 0 {
			c.mu.Lock()
			c.done = true
			c.mu.Unlock()
			c.w.kick()
			return true
		}
		if c.w.pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			c.w.failPod()
			return false
		}
		c.mu.Lock()
		c.restarts++
		n := c.restarts
		c.mu.Unlock()
		if !c.backoff(ctx, n-1) {
			return false
		}
	}
}

// supervise runs a container, with its probes, restarting it per the restart policy.
func (c *container) supervise(ctx context.Context) {
	for {
		if c.w.isStopping() || ctx.Err() != nil {
			return
		}
		var code int32 = 1
		started := time.Now()
		if err := c.start(ctx); err != nil {
			c.w.setMessage(fmt.Sprintf("container %s: %v", c.spec.Name, err))
			c.setWaiting("CreateContainerError")
		} else {
			probeCtx, cancel := context.WithCancel(ctx)
			go c.probe(probeCtx)
			code = c.wait()
			cancel()
		}
		if c.w.isStopping() || ctx.Err() != nil {
			return
		}
		switch c.w.pod.Spec.RestartPolicy {
		case corev1.RestartPolicyNever:
			c.markDone()
			return
		case corev1.RestartPolicyOnFailure:
			if code == 0 {
				c.markDone()
				return
			}
		}
		c.mu.Lock()
		c.restarts++
		if time.Since(started) >= backoffReset {
			c.crashes = 0
		}
		c.crashes++
		n, replaced := c.crashes, c.next != nil
		c.mu.Unlock()
		// A container stopped for a new image restarts at once; a crash backs off.
		if !replaced && !c.backoff(ctx, n-1) {
			return
		}
	}
}

func (c *container) markDone() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
}

func (w *podWorker) setMessage(m string) {
	w.mu.Lock()
	w.message = m
	w.mu.Unlock()
	w.kick()
}

func (w *podWorker) failPod() {
	w.mu.Lock()
	w.phase = corev1.PodFailed
	w.mu.Unlock()
	w.kick()
}
