package agent_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/resources/secret"
)

// A client of the agents trusts its cluster's certificate and nothing else: not another
// cluster's, not the system's roots, and a plain HTTP client gets nothing from a TLS agent.
func TestClientsPinTheClusterCertificate(t *testing.T) {
	cert, key, err := secret.AgentCertificate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := secret.AgentCertificate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	_ = os.WriteFile(certFile, cert, 0o600)
	_ = os.WriteFile(keyFile, key, 0o600)
	serverTLS, err := agentapi.ServerTLS(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(agent.NewServer(nil, "token").Handler())
	srv.TLS = serverTLS
	srv.StartTLS()
	defer srv.Close()

	get := func(c *http.Client) error {
		resp, err := c.Get(srv.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	pinned, err := agentapi.ClientTLSFromFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(agentapi.HTTPClient(pinned, 5*time.Second)); err != nil {
		t.Errorf("the cluster's certificate: %v", err)
	}
	wrong, err := agentapi.ClientTLS(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(agentapi.HTTPClient(wrong, 5*time.Second)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("another cluster's certificate: %v", err)
	}
	if err := get(agentapi.HTTPClient(nil, 5*time.Second)); err == nil {
		t.Error("a client without the pinned certificate was answered")
	}
	if _, err := agentapi.ClientTLS([]byte("not pem")); err == nil {
		t.Error("ClientTLS accepted a non-PEM certificate")
	}
}
