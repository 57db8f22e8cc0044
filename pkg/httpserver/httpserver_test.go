package httpserver

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Connections beyond the limit wait until one closes; they are then served.
func TestListenBoundsConnections(t *testing.T) {
	ln, err := Listen("127.0.0.1:0", 2)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	addr := ln.Addr().String()
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	answered := make(chan string, 1)
	go func() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			answered <- err.Error()
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			answered <- err.Error()
			return
		}
		answered <- line
	}()
	select {
	case got := <-answered:
		t.Fatalf("a third connection was served while two were held: %q", got)
	case <-time.After(300 * time.Millisecond):
	}
	idle[0].Close()
	select {
	case got := <-answered:
		if !strings.HasPrefix(got, "HTTP/1.1 200") {
			t.Errorf("after a slot freed: %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not served after a connection closed")
	}
}

// A client that sends headers too slowly, or too many, is cut off.
func TestServerBoundsRequests(t *testing.T) {
	srv := New(http.NotFoundHandler())
	if srv.ReadHeaderTimeout == 0 || srv.ReadTimeout == 0 || srv.IdleTimeout == 0 || srv.MaxHeaderBytes == 0 {
		t.Errorf("unbounded server: %+v", srv)
	}
	if srv.WriteTimeout != 0 {
		t.Error("a write timeout would cut a seed's datadir stream short")
	}
}
