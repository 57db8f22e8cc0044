// Package httpserver builds the operator's and the agents' HTTP servers with bounds that no
// client can hold open: a few thousand idle TLS connections once took an agent from 17 to
// 135 MB, enough for a memory limit to kill it and take its member out of service.
package httpserver

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// MaxConnections bounds the connections one server holds at once; more wait in the listen
// backlog until one closes.
const MaxConnections = 256

// New returns a server for h. Headers must arrive within 5 s and fit 16 KiB, and a whole
// request within 30 s (every request body here is small); a keep-alive connection is closed
// after 30 s idle. Nothing bounds writing: a seed streams a datadir for as long as it takes.
func New(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
}

// Listen listens on TCP addr and accepts at most limit connections at once.
func Listen(addr string, limit int) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return netutil.LimitListener(ln, limit), nil
}
