package agent

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/pki"
)

// TLS files of the mounted TLS Secret, as the server's my.cnf names them.
var tlsFiles = []string{"tls.crt", "tls.key", "ca.crt"}

// TLSReloader makes the server read its certificate, key and CA again when the mounted
// Secret's files change: the kubelet rewrites them when the operator (or cert-manager) renews
// the certificate, and the server otherwise serves the old one until it restarts. Reloading
// affects new connections only; no server restarts for a renewal.
type TLSReloader struct {
	Instance *mysql.Instance
	// Dir holds tls.crt, tls.key and ca.crt.
	Dir string
	// loaded is the hash of the files the server last read; zero until the first reload, which
	// is done once at start too (the files may have changed between the server's start and
	// the agent's).
	loaded [sha256.Size]byte
}

// Run checks the files every interval until ctx ends.
func (r *TLSReloader) Run(ctx context.Context, interval time.Duration) {
	logger := klog.FromContext(ctx)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if reloaded, err := r.Check(ctx); err != nil {
			logger.V(2).Info("TLS files not reloaded yet", "err", err)
		} else if reloaded {
			logger.Info("The server reloaded its TLS certificate", "dir", r.Dir)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check reloads the server's TLS files when they differ from those it last read; it reports
// whether it did. A pair that does not match (the kubelet is between two writes) waits for
// the next check.
func (r *TLSReloader) Check(ctx context.Context) (bool, error) {
	h := sha256.New()
	contents := make([][]byte, len(tlsFiles))
	for i, name := range tlsFiles {
		b, err := os.ReadFile(filepath.Join(r.Dir, name))
		if err != nil {
			return false, fmt.Errorf("read %s: %w", name, err)
		}
		contents[i] = b
		h.Write(b)
		h.Write([]byte{0})
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	if sum == r.loaded {
		return false, nil
	}
	if _, err := pki.ParseKeyPair(contents[0], contents[1]); err != nil {
		return false, fmt.Errorf("the mounted certificate and key: %w", err)
	}
	if err := r.Instance.ExecSQL(ctx, r.Instance.Flavor.ReloadTLS()); err != nil {
		return false, fmt.Errorf("reload TLS: %w", err)
	}
	r.loaded = sum
	return true, nil
}
