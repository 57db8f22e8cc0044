package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/test/localcluster"
)

// stampRE is the start of a line of `kubectl logs --timestamps`.
var stampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z `)

// kubectlJourney: what people debug with first works on the local cluster's real pods, through
// the API server and local-kubelet's kubelet API: kubectl logs (tail, timestamps, previous,
// follow), kubectl exec (in the container's namespaces and user, stdin, exit codes, a terminal) and
// kubectl port-forward.
func kubectlJourney(t *testing.T, primary string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := lc.Kubectl(ctx, append([]string{"-n", ns}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	mysqld := resources.ContainerMySQL

	// logs: MariaDB's own start-up lines, the last N, stamped when asked.
	if out := kubectl("logs", primary, "-c", mysqld); !strings.Contains(out, "ready for connections") {
		t.Errorf("kubectl logs %s -c %s lacks mysqld's start-up line:\n%s", primary, mysqld, tail(out, 10))
	}
	lines := strings.Split(strings.TrimSuffix(kubectl("logs", primary, "-c", mysqld, "--tail", "3", "--timestamps"), "\n"), "\n")
	if len(lines) != 3 {
		t.Errorf("--tail 3 gave %d lines", len(lines))
	}
	for _, l := range lines {
		if !stampRE.MatchString(l) {
			t.Errorf("--timestamps line without a timestamp: %q", l)
		}
	}
	// --previous: the run before the current one, whole; refused for a container that never
	// restarted. A replica's agent is SIGKILLed once for it (the member keeps serving).
	replica := otherThan(members(3), primary)[0]
	before := pod(t, replica)
	n := restarts(before.Status.ContainerStatuses, resources.ContainerAgent)
	if out, err := lc.Kubectl(ctx, "-n", ns, "logs", replica, "-c", resources.ContainerAgent, "--previous"); err == nil && n == 0 {
		t.Errorf("kubectl logs --previous of a container that never restarted answered: %q", tail(out, 3))
	}
	run := kubectl("logs", replica, "-c", resources.ContainerAgent, "--timestamps")
	pid, err := lc.PID(before, resources.ContainerAgent)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, replica+"'s agent restarted and ready", func(ctx context.Context) (bool, error) {
		p := pod(t, replica)
		return restarts(p.Status.ContainerStatuses, resources.ContainerAgent) > n && localcluster.PodReady(p), nil
	})
	if prev := kubectl("logs", replica, "-c", resources.ContainerAgent, "--previous", "--timestamps"); run == "" || !strings.HasPrefix(prev, run) {
		t.Errorf("kubectl logs --previous does not hold the killed run: %d bytes before the kill, --previous %d bytes starting %q",
			len(run), len(prev), tail(prev[:min(len(prev), 300)], 2))
	}
	if cur := kubectl("logs", replica, "-c", resources.ContainerAgent, "--timestamps"); strings.Contains(cur, strings.SplitN(run, "\n", 2)[0]) {
		t.Error("the current run's log holds the killed run's first line")
	}
	// -f: streams and stays open while the container runs.
	followLogs(ctx, t, primary, resources.ContainerAgent)

	// exec: the pod's hostname, the container's user and mounts, stdin, the exit code.
	if got := strings.TrimSpace(kubectl("exec", primary, "-c", mysqld, "--", "hostname")); got != primary {
		t.Errorf("hostname in the container: %q, want %q", got, primary)
	}
	p := pod(t, primary)
	if want := p.Spec.SecurityContext.RunAsUser; want != nil {
		if got := strings.TrimSpace(kubectl("exec", primary, "-c", mysqld, "--", "id", "-u")); got != strconv.FormatInt(*want, 10) {
			t.Errorf("id -u in the container: %q, want %d", got, *want)
		}
	}
	if out := kubectl("exec", primary, "-c", mysqld, "--", "ls", "/var/lib/mysql/data"); !strings.Contains(out, "ibdata1") {
		t.Errorf("the data volume is not mounted where exec runs: %q", out)
	}
	cmd := lc.KubectlCommand(ctx, "-n", ns, "exec", "-i", primary, "-c", mysqld, "--", "tr", "a-z", "A-Z")
	cmd.Stdin = strings.NewReader("through stdin\n")
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "THROUGH STDIN\n" {
		t.Errorf("kubectl exec -i: %q, %v", out, err)
	}
	_, err = lc.Kubectl(ctx, "-n", ns, "exec", primary, "-c", mysqld, "--", "sh", "-c", "exit 3")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("kubectl exec of `exit 3`: %v, want exit code 3", err)
	}

	// A terminal (kubectl -t needs one on its own stdin, which a test has not): client-go's
	// executor over WebSocket, as kubectl uses it.
	req := lc.CP.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(primary).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: mysqld, Command: []string{"tty"}, Stdout: true, TTY: true}, scheme.ParameterCodec)
	executor, err := remotecommand.NewWebSocketExecutor(lc.CP.Config, "GET", req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	var term strings.Builder
	if err := executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &term, Tty: true}); err != nil || !strings.HasPrefix(term.String(), "/dev/pts/") {
		t.Errorf("exec with a terminal: tty printed %q, %v", term.String(), err)
	}

	// port-forward: mysqld's greeting through a local port.
	pf := lc.KubectlCommand(ctx, "-n", ns, "port-forward", "pod/"+primary, ":3306")
	stdout, _ := pf.StdoutPipe()
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pf.Process.Kill(); _ = pf.Wait() }()
	// "Forwarding from 127.0.0.1:40123 -> 3306"
	local, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("kubectl port-forward: %v", err)
	}
	m := regexp.MustCompile(`127\.0\.0\.1:(\d+) ->`).FindStringSubmatch(local)
	if m == nil {
		t.Fatalf("kubectl port-forward printed %q", local)
	}
	greeting, err := readGreeting(ctx, "127.0.0.1:"+m[1])
	if err != nil || !strings.Contains(greeting, "MariaDB") {
		t.Errorf("mysqld's greeting through kubectl port-forward: %q, %v", greeting, err)
	}
}

// followLogs checks that kubectl logs -f delivers a line and is still streaming a moment later.
func followLogs(ctx context.Context, t *testing.T, podName, container string) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := lc.KubectlCommand(ctx, "-n", ns, "logs", "-f", "--tail", "1", podName, "-c", container)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	first := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- l
	}()
	select {
	case l := <-first:
		if l == "" {
			t.Error("kubectl logs -f: no line")
		}
	case <-time.After(20 * time.Second):
		t.Error("kubectl logs -f: no line within 20 s")
	}
	select {
	case <-exited:
		t.Error("kubectl logs -f returned while the container runs")
	case <-time.After(2 * time.Second):
	}
	cancel()
	<-exited
}

// readGreeting reads the first packet a MySQL server sends and returns its version string.
func readGreeting(ctx context.Context, addr string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	head := make([]byte, 4)
	if _, err := io.ReadFull(conn, head); err != nil {
		return "", fmt.Errorf("read packet header: %w", err)
	}
	body := make([]byte, int(head[0])|int(head[1])<<8|int(head[2])<<16)
	if _, err := io.ReadFull(conn, body); err != nil {
		return "", fmt.Errorf("read greeting: %w", err)
	}
	// Protocol version byte, then the NUL-terminated server version.
	version, _, _ := strings.Cut(string(body[1:]), "\x00")
	return version, nil
}

// restarts is the restart count of container name (-1: not found).
func restarts(statuses []corev1.ContainerStatus, name string) int32 {
	for _, cs := range statuses {
		if cs.Name == name {
			return cs.RestartCount
		}
	}
	return -1
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
