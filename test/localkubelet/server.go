package localkubelet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"

	"github.com/mysqlop/mysql-operator/pkg/pki"
)

// Stream timeouts, the kubelet's defaults.
const (
	streamIdleTimeout     = 4 * time.Hour
	streamCreationTimeout = 30 * time.Second
)

// listenAPI opens the kubelet API's listener on the pod network's gateway, which the API
// server (on this machine) reaches and which the nodes report as their InternalIP.
func (r *Runtime) listenAPI() (net.Listener, error) {
	if r.opts.ClientCAFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(r.opts.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("read client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("client CA %s holds no certificate", r.opts.ClientCAFile)
	}
	// A serving certificate of its own: the API server does not verify kubelets unless told
	// to (--kubelet-certificate-authority), and the local cluster does not tell it.
	ca, err := pki.NewCA("local-kubelet", time.Now(), 10*365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	kp, err := pki.Issue(ca, pki.Request{CommonName: "local-kubelet", IPs: []net.IP{r.gateway}, Lifetime: 10 * 365 * 24 * time.Hour}, time.Now())
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(r.gateway.String(), strconv.Itoa(r.opts.APIPort)))
	if err != nil {
		return nil, fmt.Errorf("listen for the kubelet API: %w", err)
	}
	r.apiPort = int32(l.Addr().(*net.TCPAddr).Port)
	// Only the API server's client certificate is let in: exec is a root shell on this machine.
	return tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}), nil
}

// serveAPI serves the part of the kubelet API that kubectl logs, exec and port-forward go
// through (the API server proxies them) until ctx ends.
func (r *Runtime) serveAPI(ctx context.Context, l net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", r.handleLogs)
	mux.HandleFunc("/exec/{ns}/{pod}/{container}", r.handleExec)
	mux.HandleFunc("/portForward/{ns}/{pod}", r.handlePortForward)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		klog.ErrorS(err, "Kubelet API server stopped")
	}
}

// worker finds the running pod ns/name.
func (r *Runtime) worker(ns, name string) (*podWorker, error) {
	if r.pods == nil {
		return nil, fmt.Errorf("pod %s/%s: not synced yet", ns, name)
	}
	p, err := r.pods.Pods(ns).Get(name)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", ns, name, err)
	}
	r.mu.Lock()
	w := r.workers[p.UID]
	r.mu.Unlock()
	if w == nil {
		return nil, fmt.Errorf("pod %s/%s does not run on this kubelet", ns, name)
	}
	return w, nil
}

// container finds the container ns/pod/name.
func (r *Runtime) container(ns, pod, name string) (*podWorker, *container, error) {
	w, err := r.worker(ns, pod)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range w.all() {
		if c.spec.Name == name {
			return w, c, nil
		}
	}
	return nil, nil, fmt.Errorf("container %s is not valid for pod %s/%s", name, ns, pod)
}

func (r *Runtime) handleLogs(rw http.ResponseWriter, req *http.Request) {
	ns, pod, name := req.PathValue("ns"), req.PathValue("pod"), req.PathValue("container")
	o, err := parseLogOptions(req.URL.Query(), time.Now())
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w, c, err := r.container(ns, pod, name)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusNotFound)
		return
	}
	c.mu.Lock()
	runs := append([]logRun(nil), c.runs...)
	restarting := c.running == nil && !c.done && c.last != nil
	c.mu.Unlock()
	start, end, done := int64(0), int64(-1), (<-chan struct{})(nil)
	switch {
	// As a kubelet's, --previous is the last termination's run (lastState): the latest while
	// the container waits to restart, else the one before the latest.
	case o.previous && !restarting && len(runs) == 2:
		start, end = runs[0].start, runs[1].start
	case o.previous && restarting:
		last := runs[len(runs)-1]
		start = last.start
		// Its process is gone; its last lines may still be on their way to the file.
		select {
		case <-last.done:
		case <-time.After(time.Second):
		}
	case o.previous:
		http.Error(rw, fmt.Sprintf("previous terminated container %q in pod %q not found", name, pod), http.StatusBadRequest)
		return
	case len(runs) == 0:
		http.Error(rw, fmt.Sprintf("container %q in pod %q is waiting to start", name, pod), http.StatusBadRequest)
		return
	default:
		start, done = runs[len(runs)-1].start, runs[len(runs)-1].done
	}
	rw.Header().Set("Content-Type", "text/plain")
	flush := func() {
		if f, ok := rw.(http.Flusher); ok {
			f.Flush()
		}
	}
	path := LogFile(r.opts.StateDir, string(w.pod.UID), name)
	if err := writeLogs(req.Context(), rw, flush, path, start, end, done, o); err != nil && req.Context().Err() == nil {
		klog.ErrorS(err, "Serve container logs", "pod", klog.KObj(w.pod), "container", name)
	}
}

func (r *Runtime) handleExec(rw http.ResponseWriter, req *http.Request) {
	opts, err := remotecommand.NewOptions(req)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	ns, pod, name := req.PathValue("ns"), req.PathValue("pod"), req.PathValue("container")
	if _, _, err := r.container(ns, pod, name); err != nil {
		http.Error(rw, err.Error(), http.StatusNotFound)
		return
	}
	remotecommand.ServeExec(rw, req, streams{r}, ns+"/"+pod, "", name, req.URL.Query()["command"], opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (r *Runtime) handlePortForward(rw http.ResponseWriter, req *http.Request) {
	opts, err := portforward.NewV4Options(req)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	ns, pod := req.PathValue("ns"), req.PathValue("pod")
	if _, err := r.worker(ns, pod); err != nil {
		http.Error(rw, err.Error(), http.StatusNotFound)
		return
	}
	portforward.ServePortForward(rw, req, streams{r}, ns+"/"+pod, "", opts, streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// streams runs exec and port-forward sessions for the streaming server; pod names are ns/name.
type streams struct{ r *Runtime }

// ExecInContainer runs cmd in the container's namespaces (mount, UTS, network), as its user
// and with its environment, through nsenter(1): a Go process cannot join a mount namespace.
func (s streams) ExecInContainer(ctx context.Context, podName, _, name string, argv []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if len(argv) == 0 {
		return errors.New("no command")
	}
	ns, pod, _ := strings.Cut(podName, "/")
	w, c, err := s.r.container(ns, pod, name)
	if err != nil {
		return err
	}
	c.mu.Lock()
	proc := c.proc
	c.mu.Unlock()
	if proc == nil {
		return fmt.Errorf("container %s is not running", name)
	}
	spec, err := readExecSpec(execSpecPath(w.dir, name))
	if err != nil {
		return err
	}
	args := []string{"--target", strconv.Itoa(proc.Pid), "--mount", "--uts", "--net"}
	if spec.UID != 0 || spec.GID != 0 {
		args = append(args, "--setuid", strconv.Itoa(spec.UID), "--setgid", strconv.Itoa(spec.GID))
	}
	if spec.Dir != "" {
		args = append(args, "--wd="+spec.Dir)
	}
	if bin, ok := s.r.opts.Commands[argv[0]]; ok {
		argv = append([]string{bin}, argv[1:]...)
	}
	cmd := exec.CommandContext(ctx, "nsenter", append(append(args, "--"), argv...)...)
	cmd.Env = spec.Env
	if tty {
		err = runTTY(cmd, in, out, resize)
	} else {
		err = runPiped(cmd, in, out, errOut)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		return utilexec.CodeExitError{Err: err, Code: code}
	}
	return err
}

// runPiped runs cmd with the session's streams. Stdin is copied by a goroutine not waited
// for: a client that sends nothing more must not keep the session open after cmd exits.
func runPiped(cmd *exec.Cmd, in io.Reader, out, errOut io.Writer) error {
	if out != nil {
		cmd.Stdout = out
	}
	if errOut != nil {
		cmd.Stderr = errOut
	}
	var stdin io.WriteCloser
	if in != nil {
		var err error
		if stdin, err = cmd.StdinPipe(); err != nil {
			return err
		}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if stdin != nil {
		go func() {
			_, _ = io.Copy(stdin, in)
			_ = stdin.Close()
		}()
	}
	return cmd.Wait()
}

// runTTY runs cmd on a new terminal whose size follows the client's.
func runTTY(cmd *exec.Cmd, in io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize) error {
	f, err := pty.Start(cmd)
	if err != nil {
		return err
	}
	defer f.Close()
	go func() {
		for sz := range resize {
			_ = pty.Setsize(f, &pty.Winsize{Rows: sz.Height, Cols: sz.Width})
		}
	}()
	if in != nil {
		go func() { _, _ = io.Copy(f, in) }()
	}
	if out != nil {
		// Ends with EIO once the command and everything holding the terminal exited.
		_, _ = io.Copy(out, f)
	}
	return cmd.Wait()
}

// PortForward connects stream to port on the pod's address (this machine routes to the pod
// network through the bridge).
func (s streams) PortForward(ctx context.Context, podName, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	ns, pod, _ := strings.Cut(podName, "/")
	w, err := s.r.worker(ns, pod)
	if err != nil {
		return err
	}
	w.mu.Lock()
	pn := w.net
	w.mu.Unlock()
	if pn == nil {
		return fmt.Errorf("pod %s has no network yet", podName)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(pn.IP.String(), strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("dial port %d of pod %s: %w", port, podName, err)
	}
	defer conn.Close()
	errc := make(chan error, 2)
	go func() { _, err := io.Copy(conn, stream); errc <- err }()
	go func() { _, err := io.Copy(stream, conn); errc <- err }()
	return <-errc
}
