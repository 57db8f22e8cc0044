package mariadb

import (
	"context"
	"os"
	"path/filepath"

	"github.com/mysqlop/mysql-operator/pkg/toolbox"
)

// Toolbox serves the installed backup tools the way a pod's toolbox container does, on a unix
// socket, until the test ends; the returned client runs them there.
func Toolbox(t T) toolbox.Runner {
	t.Helper()
	// A short directory: a unix socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "toolbox-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "toolbox.sock")
	l, err := toolbox.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&toolbox.Server{Allowed: toolbox.Tools}).Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	})
	return toolbox.Client{Socket: sock}
}
