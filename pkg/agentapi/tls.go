package agentapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
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

// ServerTLS is the TLS configuration of an agent serving with the certificate and key files.
func ServerTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load the agent certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
