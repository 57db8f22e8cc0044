package localkubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probe runs the container's startup, then readiness and liveness probes until ctx ends (the
// process exited). A failed startup or liveness probe restarts the container.
func (c *container) probe(ctx context.Context) {
	if p := c.spec.StartupProbe; p != nil {
		if !c.loop(ctx, p, startup) {
			return
		}
		c.mu.Lock()
		c.started = true
		if c.spec.ReadinessProbe == nil {
			c.ready = true
		}
		c.mu.Unlock()
		c.w.kick()
	}
	if p := c.spec.ReadinessProbe; p != nil {
		go c.loop(ctx, p, readiness)
	}
	if p := c.spec.LivenessProbe; p != nil {
		c.loop(ctx, p, liveness)
	}
}

type probeKind int

const (
	startup probeKind = iota
	readiness
	liveness
)

// loop probes every period and acts on settled results (successThreshold successes or
// failureThreshold failures in a row): a startup probe returns true on success; readiness
// sets the container's readiness; startup and liveness failures restart the container and
// return false.
func (c *container) loop(ctx context.Context, p *corev1.Probe, kind probeKind) bool {
	select {
	case <-time.After(time.Duration(p.InitialDelaySeconds) * time.Second):
	case <-ctx.Done():
		return false
	}
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	succ, fail := int32(0), int32(0)
	for {
		err := c.check(ctx, p)
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			succ, fail = succ+1, 0
		} else {
			succ, fail = 0, fail+1
		}
		switch {
		case succ >= max(p.SuccessThreshold, 1):
			if kind == startup {
				return true
			}
			if kind == readiness {
				c.setReady(true)
			}
		case fail >= max(p.FailureThreshold, 1):
			if kind == readiness {
				c.setReady(false)
				break
			}
			c.w.log().Info("Probe failed: restarting container", "container", c.spec.Name, "err", err)
			c.terminate(time.Duration(c.w.graceSeconds()) * time.Second)
			return false
		}
		select {
		case <-time.After(period):
		case <-ctx.Done():
			return false
		}
	}
}

func (c *container) setReady(ok bool) {
	c.mu.Lock()
	changed := c.ready != ok
	c.ready = ok
	c.mu.Unlock()
	if changed {
		c.w.kick()
	}
}

func (w *podWorker) graceSeconds() int64 {
	if g := w.pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return 30
}

// check runs one probe.
func (c *container) check(ctx context.Context, p *corev1.Probe) error {
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c.w.mu.Lock()
	podIP := c.w.net.IP.String()
	c.w.mu.Unlock()
	switch {
	case p.HTTPGet != nil:
		g := p.HTTPGet
		port, err := c.port(g.Port)
		if err != nil {
			return err
		}
		host := g.Host
		if host == "" {
			host = podIP
		}
		scheme := strings.ToLower(string(g.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), g.Path), nil)
		if err != nil {
			return err
		}
		for _, h := range g.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		resp, err := probeClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe answered %s", resp.Status)
		}
		return nil
	case p.TCPSocket != nil:
		port, err := c.port(p.TCPSocket.Port)
		if err != nil {
			return err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case p.Exec != nil:
		c.mu.Lock()
		proc := c.proc
		c.mu.Unlock()
		if proc == nil {
			return fmt.Errorf("container is not running")
		}
		uid, gid, _ := identity(c.w.pod, c.spec)
		args := append([]string{"-t", strconv.Itoa(proc.Pid), "-m", "-n", "-u", "-S", strconv.Itoa(uid), "-G", strconv.Itoa(gid), "--"}, p.Exec.Command...)
		if out, err := exec.CommandContext(ctx, "nsenter", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("exec probe: %w: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	return fmt.Errorf("unsupported probe handler")
}

// probeClient does what the kubelet does: HTTPS probes do not verify the certificate.
var probeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // as the kubelet

// port resolves a numeric or named container port.
func (c *container) port(p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.spec.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %s", c.spec.Name, p.StrVal)
}
