package localkubelet

import (
	"os"
	"path/filepath"
	"testing"
)

// A runtime that exits while another still runs containers leaves the mount points it made;
// the last one removes them, and never a path that existed before or holds something.
func TestMountPointsGoWithTheLastRuntime(t *testing.T) {
	root := t.TempDir()
	registry := filepath.Join(root, "registry")
	host := func(p string) string { return filepath.Join(root, "host", p) }
	if err := os.MkdirAll(host("etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	a, b := &mountPoints{dir: registry}, &mountPoints{dir: registry}
	for _, step := range []struct {
		m      *mountPoints
		target string
		isFile bool
	}{
		{a, host("etc/mysqlop/tls"), false},
		{a, host("etc/mysqlop/conf/my.cnf"), true},
		{b, host("etc/mysqlop/tls"), false},
		{b, host("var/lib/mysql"), false},
	} {
		if err := step.m.ensure(step.target, step.isFile); err != nil {
			t.Fatal(err)
		}
		if !exists(step.target) {
			t.Fatalf("%s not made", step.target)
		}
	}
	if err := os.WriteFile(host("var/lib/mysql/ibdata1"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}

	a.release()
	for _, p := range []string{host("etc/mysqlop/tls"), host("etc/mysqlop/conf/my.cnf")} {
		if !exists(p) {
			t.Fatalf("%s removed while another runtime runs", p)
		}
	}
	b.release()
	if exists(host("etc/mysqlop")) {
		t.Error("the mount points stayed after the last runtime")
	}
	if !exists(host("etc")) {
		t.Error("a path that existed before was removed")
	}
	if !exists(host("var/lib/mysql/ibdata1")) {
		t.Error("a mount point holding a file was removed")
	}
	// A later runtime starts afresh: nothing recorded is left over.
	if exists(filepath.Join(registry, "created")) {
		t.Error("the list of made paths outlived the last runtime")
	}
	c := &mountPoints{dir: registry}
	if err := c.ensure(host("etc/mysqlop/tls"), false); err != nil || !exists(host("etc/mysqlop/tls")) {
		t.Fatalf("made again: %v", err)
	}
	c.release()
	if exists(host("etc/mysqlop")) {
		t.Error("the next runtime's mount point stayed")
	}
}
