package agentapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls an agent's API for the operator.
type Client struct {
	// BaseURL is https://host:port of the agent (http:// in tests of the API alone).
	BaseURL string
	// Token is the cluster's agent token.
	Token string
	// TLS is the client's TLS configuration (ClientTLS); nil for plain HTTP.
	TLS *tls.Config
	// HTTP is the client to use; nil means HTTPClient(TLS, 10 s).
	HTTP *http.Client
}

// HTTPClient returns an HTTP client of agents with tlsConfig (nil: plain HTTP) and timeout (0:
// none). It keeps no idle connection: agent calls are few and far between.
func HTTPClient(tlsConfig *tls.Config, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true}}
}

func (c *Client) do(ctx context.Context, method, path string, body any, out any) (int, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(b)
	}
	resp, err := c.call(ctx, method, path, r)
	if err != nil {
		code := 0
		if resp != nil {
			code = resp.StatusCode
		}
		return code, err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
}

// call sends an authenticated request and returns the response of a success, whose body the
// caller closes. For an error status it returns the response (body closed) and an error with
// the agent's message; nil and the error when nothing answered.
func (c *Client) call(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = HTTPClient(c.TLS, 10*time.Second)
	}
	resp, err := hc.Do(req)
	if err != nil {
		// url.Error names the URL, never the body (which can hold storage credentials).
		return nil, fmt.Errorf("agent %s: %w", c.BaseURL, err)
	}
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return resp, fmt.Errorf("agent %s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}

// StartBackup asks the agent to start req; it returns the backup's state (also when the agent
// already runs or ran the same ID).
func (c *Client) StartBackup(ctx context.Context, req BackupRequest) (*BackupState, error) {
	return c.startJob(ctx, "/api/v1/backups", req)
}

// startJob posts req to path and returns the job's state.
func (c *Client) startJob(ctx context.Context, path string, req any) (*BackupState, error) {
	var st BackupState
	if _, err := c.do(ctx, http.MethodPost, path, req, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Backup returns the state of backup id; ErrBackupNotFound when the agent does not know it.
func (c *Client) Backup(ctx context.Context, id string) (*BackupState, error) {
	return c.state(ctx, http.MethodGet, "/api/v1/backups/"+url.PathEscape(id))
}

// state calls path for a job's state; ErrBackupNotFound when the agent does not know the job.
func (c *Client) state(ctx context.Context, method, path string) (*BackupState, error) {
	var st BackupState
	code, err := c.do(ctx, method, path, nil, &st)
	if code == http.StatusNotFound {
		return nil, ErrBackupNotFound
	}
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// StartChecksum asks the agent to checksum the server's tables; it returns the job's state
// (also when the agent already runs or ran the same ID).
func (c *Client) StartChecksum(ctx context.Context, req ChecksumRequest) (*BackupState, error) {
	return c.startJob(ctx, "/api/v1/checksums", req)
}

// Checksum returns the state of checksum job id, with the checksums once Complete;
// ErrBackupNotFound when the agent does not know it.
func (c *Client) Checksum(ctx context.Context, id string) (*BackupState, error) {
	return c.state(ctx, http.MethodGet, "/api/v1/checksums/"+url.PathEscape(id))
}

// StartRestore asks the agent to load a logical backup; it returns the restore's state.
func (c *Client) StartRestore(ctx context.Context, req BackupRequest) (*BackupState, error) {
	return c.startJob(ctx, "/api/v1/restores", req)
}

// Restore returns the state of restore id: Running, Failed, Complete (logical), or for a
// physical restore Staged, Committed or Applied. ErrBackupNotFound when the agent knows
// nothing of it.
func (c *Client) Restore(ctx context.Context, id string) (*BackupState, error) {
	return c.state(ctx, http.MethodGet, "/api/v1/restores/"+url.PathEscape(id))
}

// CommitRestore commits a staged physical restore: it is put in place at the pod's next start.
// ErrBackupNotFound when nothing of that ID is staged.
func (c *Client) CommitRestore(ctx context.Context, id string) (*BackupState, error) {
	return c.state(ctx, http.MethodPost, "/api/v1/restores/"+url.PathEscape(id)+"/commit")
}

// DiscardRestore stops staging restore id and removes what it unpacked.
func (c *Client) DiscardRestore(ctx context.Context, id string) error {
	_, err := c.do(ctx, http.MethodDelete, "/api/v1/restores/"+url.PathEscape(id), nil, nil)
	return err
}

// Status returns the member's state as its agent reads it.
func (c *Client) Status(ctx context.Context) (*StatusJSON, error) {
	st, _, err := c.Probe(ctx)
	return st, err
}

// Probe is Status with the HTTP status code (0 when nothing answered): an agent that answers
// with an error still shows that its pod runs.
func (c *Client) Probe(ctx context.Context) (*StatusJSON, int, error) {
	var st StatusJSON
	code, err := c.do(ctx, http.MethodGet, "/api/v1/status", nil, &st)
	if err != nil {
		return nil, code, err
	}
	return &st, code, nil
}

// Seed asks the agent for a physical copy of its server (GET /api/v1/seed). The caller reads
// the body to its end, then checks the donor's failure in the trailer Mysqlop-Seed-Error, and
// closes it.
func (c *Client) Seed(ctx context.Context) (*http.Response, error) {
	return c.call(ctx, http.MethodGet, "/api/v1/seed", nil)
}

// KillServer asks the agent to SIGKILL its server (POST /api/v1/server/kill).
func (c *Client) KillServer(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodPost, "/api/v1/server/kill", struct{}{}, nil)
	return err
}

// Reseed asks the agent to have its member re-seeded from a peer at its next start
// (POST /api/v1/reseed); the caller then restarts the member's pod.
func (c *Client) Reseed(ctx context.Context, reason string) error {
	_, err := c.do(ctx, http.MethodPost, "/api/v1/reseed", ReseedRequest{Reason: reason}, nil)
	return err
}

// ConfigureArchive sets the agent's binary log archiving (PUT /api/v1/archive); the same
// request again changes nothing.
func (c *Client) ConfigureArchive(ctx context.Context, req ArchiveRequest) (*ArchiveState, error) {
	var st ArchiveState
	if _, err := c.do(ctx, http.MethodPut, "/api/v1/archive", req, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Archive returns the state of the agent's archiving.
func (c *Client) Archive(ctx context.Context) (*ArchiveState, error) {
	var st ArchiveState
	if _, err := c.do(ctx, http.MethodGet, "/api/v1/archive", nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// StopArchive stops the agent's archiving.
func (c *Client) StopArchive(ctx context.Context) error {
	_, err := c.do(ctx, http.MethodDelete, "/api/v1/archive", nil, nil)
	return err
}
