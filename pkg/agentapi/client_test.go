package agentapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The client sends the token, maps a 404 of a job to ErrBackupNotFound, carries the agent's
// message in other errors, and reports the status code of an agent that answered with one.
func TestClientAgainstAFakeAgent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/api/v1/backups/known":
			_, _ = w.Write([]byte(`{"id":"known","phase":"Complete","gtid":"0-1-5"}`))
		case "/api/v1/status":
			http.Error(w, "server down", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := &Client{BaseURL: srv.URL, Token: "tok"}
	if st, err := c.Backup(ctx, "known"); err != nil || st.Phase != BackupComplete || st.GTID != "0-1-5" {
		t.Fatalf("Backup: %+v %v", st, err)
	}
	if _, err := c.Restore(ctx, "unknown"); !errors.Is(err, ErrBackupNotFound) {
		t.Errorf("unknown restore: %v, want ErrBackupNotFound", err)
	}
	if _, code, err := c.Probe(ctx); code != http.StatusServiceUnavailable || err == nil || !strings.Contains(err.Error(), "server down") {
		t.Errorf("Probe: code %d, err %v", code, err)
	}
	bad := &Client{BaseURL: srv.URL, Token: "wrong"}
	if err := bad.KillServer(ctx); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token: %v", err)
	}
	gone := &Client{BaseURL: "http://127.0.0.1:1", Token: "tok"}
	if _, code, err := gone.Probe(ctx); code != 0 || err == nil {
		t.Errorf("nothing listening: code %d, err %v", code, err)
	}
}
