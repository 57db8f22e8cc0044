package agent_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/agent"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// A member the operator found diverged is re-seeded on real servers: its agent marks the
// datadir, and the next init sets the diverged data aside, never serves it again (not even
// when no donor can be had: init fails and the pod retries), and replaces it with a copy of a
// peer; only then are the diverged datadir and the marker removed.
func TestReseedOnMariaDB(t *testing.T) {
	ctx := context.Background()
	cr := maps.Clone(creds)
	cr[agent.FileAgentToken] = "token"
	donor := runMember(t, "db-0", cr)
	for _, q := range []string{mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v TEXT)",
		"INSERT INTO shop.t VALUES (1, 'one'), (2, 'two')"} {
		if _, err := donor.op(t).Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := checksumOf(t, donor.op(t))

	// The diverged member: data of its own that the donor never had.
	m := runMember(t, "db-1", cr)
	for _, q := range []string{mysql.MariaDB.SetReadOnly(false), "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY, v TEXT)",
		"INSERT INTO shop.t VALUES (1, 'one'), (2, 'diverged tail')", "CREATE DATABASE mine"} {
		if _, err := m.op(t).Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := m.client.Reseed(ctx, "diverged from db-0"); err != nil {
		t.Fatalf("reseed: %v", err)
	}
	marker := filepath.Join(filepath.Dir(m.opts.DataDir), "reseed.json")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no marker: %v", err)
	}
	m.stop()

	// No donor answers: init fails, and neither an empty datadir nor the diverged one is left
	// in place.
	m.opts.Peers = []string{"127.0.0.1:1"}
	if err := agent.Init(ctx, m.opts); err == nil || !strings.Contains(err.Error(), "re-seeding needs a peer") {
		t.Fatalf("init without a donor: %v", err)
	}
	if _, err := os.Stat(m.opts.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a datadir is in place after a failed re-seed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(m.opts.DataDir), "diverged", "mine")); err != nil {
		t.Fatalf("the diverged datadir is not kept aside until the copy is in: %v", err)
	}

	m.opts.Peers = []string{strings.TrimPrefix(donor.client.BaseURL, "http://")}
	if err := agent.Init(ctx, m.opts); err != nil {
		t.Fatalf("init with a donor: %v", err)
	}
	for _, p := range []string{marker, filepath.Join(filepath.Dir(m.opts.DataDir), "diverged")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after the re-seed: %v", filepath.Base(p), err)
		}
	}
	m.serve(t)
	db := m.op(t)
	if got := checksumOf(t, db); got != want {
		t.Fatalf("re-seeded checksum %d, donor %d", got, want)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'mine'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the diverged schema survived the re-seed: %d %v", n, err)
	}
	// A later restart keeps the copy: the marker is gone.
	m.restart(t)
	if got := checksumOf(t, m.op(t)); got != want {
		t.Fatalf("checksum after a restart %d, want %d", got, want)
	}
}
