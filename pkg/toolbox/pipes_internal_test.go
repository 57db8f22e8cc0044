package toolbox

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A piped header must carry the tool's pipes, one for its output and one more for an input:
// otherwise the request is refused and nothing runs.
func TestPipedHeaderWithoutItsPipesIsRefused(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "t.sock")
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Server{Allowed: []string{"sh"}}).Serve(ctx, l) }()
	defer func() {
		cancel()
		<-done
	}()
	marker := filepath.Join(t.TempDir(), "ran")
	h := header{Name: "sh", Args: []string{"-c", "touch " + marker}, Stdin: true}
	for name, passed := range map[string]int{"none": 0, "output only, with an input": 1} {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		var files []*os.File
		for range passed {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			files = append(files, w)
		}
		if passed > 0 {
			err = sendWithFiles(conn, framePipedHeader, h, files)
		} else {
			err = (&frameWriter{w: conn}).json(framePipedHeader, h)
		}
		closeFiles(files)
		if err != nil {
			t.Fatal(err)
		}
		typ, p, err := newFrameReader(conn).read()
		conn.Close()
		var e exit
		if err == nil {
			err = json.Unmarshal(p, &e)
		}
		if err != nil || typ != frameExit || !strings.Contains(e.Error, "bad request") || !strings.Contains(e.Error, "descriptors passed, want 2") {
			t.Errorf("%s: frame %q %+v, %v", name, typ, e, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the tool ran")
	}
}
