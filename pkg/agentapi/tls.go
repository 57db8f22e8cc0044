package agentapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// ServerName is the name the agents' certificate is issued to and their clients verify. Pods
// are reached at changing addresses, so the certificate names none; clients trust no other
// certificate than their cluster's (it is pinned), so the name identifies nothing by itself.
const ServerName = "mysqlop-agent"

// ClientTLS is the TLS configuration of a client of a cluster's agents: certPEM, the cluster's
// agent certificate, is the only one trusted.
func ClientTLS(certPEM []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		return nil, errors.New("the agent certificate is not a PEM certificate")
	}
	return &tls.Config{RootCAs: pool, ServerName: ServerName, MinVersion: tls.VersionTLS12}, nil
}

// ClientTLSFromFile is ClientTLS with the certificate read from a file of the mounted
// credentials Secret.
func ClientTLSFromFile(path string) (*tls.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the agent certificate: %w", err)
	}
	return ClientTLS(b)
}

// ClientTLSFromCA is the TLS configuration of a client of agents that serve the cluster's TLS
// certificate (spec.tls on): the CAs of caPEM are trusted and the agent must hold serverName,
// or, when it is empty, the host name the client dials (a member's DNS name).
func ClientTLSFromCA(caPEM []byte, serverName string) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("the CA bundle is not PEM")
	}
	return &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}

// ServerTLS is the TLS configuration of an agent serving with the certificate and key files.
// The files are read again when they change (the cluster's certificate is renewed), checked at
// most every few seconds; a pair that cannot be loaded keeps the last good one in service.
func ServerTLS(certFile, keyFile string) (*tls.Config, error) {
	cfg, _, err := serverTLS(certFile, keyFile)
	return cfg, err
}

func serverTLS(certFile, keyFile string) (*tls.Config, *certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if err := r.load(); err != nil {
		return nil, nil, fmt.Errorf("load the agent certificate: %w", err)
	}
	return &tls.Config{GetCertificate: r.get, MinVersion: tls.VersionTLS12}, r, nil
}

// reloadCheck bounds how often the certificate files are looked at.
const reloadCheck = 5 * time.Second

// certReloader serves the certificate of two files, read again when their modification times
// change.
type certReloader struct {
	certFile, keyFile string

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string
	checked time.Time
}

func (r *certReloader) fileStamp() string {
	var b strings.Builder
	for _, f := range []string{r.certFile, r.keyFile} {
		if fi, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%d/%d;", fi.ModTime().UnixNano(), fi.Size())
		}
	}
	return b.String()
}

// load reads the pair; r.mu must be held or r unshared.
func (r *certReloader) load() error {
	stamp := r.fileStamp()
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return err
	}
	r.cert, r.stamp = &cert, stamp
	return nil
}

func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) >= reloadCheck {
		r.checked = time.Now()
		if r.fileStamp() != r.stamp {
			_ = r.load() // half-written by the kubelet: the next check loads the pair
		}
	}
	return r.cert, nil
}
