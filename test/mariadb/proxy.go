package mariadb

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP to a server until Silence, then behaves as a network that drops every
// packet: open connections stay open and carry nothing, and new ones are accepted by the
// kernel and never answered. (A refused connection would be a different, faster fault.)
type Proxy struct {
	// Port is where the proxy listens on 127.0.0.1.
	Port int

	mu     sync.Mutex
	silent bool
	held   []net.Conn
}

// StartProxy starts a proxy to target (host:port), closed when the test ends.
func StartProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Port: ln.Addr().(*net.TCPAddr).Port}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.held {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !p.hold(c) {
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.hold(up)
			go p.pipe(up, c)
			go p.pipe(c, up)
		}
	}()
	return p
}

// Silence stops all traffic for good.
func (p *Proxy) Silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.silent = true
}

// hold keeps c open until the test ends; false when the proxy is silent (c is held, unanswered).
func (p *Proxy) hold(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = append(p.held, c)
	return !p.silent
}

func (p *Proxy) isSilent() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.silent
}

// pipe copies src to dst until an error, dropping everything once the proxy is silent. It
// never closes either side: a silent network sends no FIN either.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if p.isSilent() {
			if err != nil {
				return
			}
			continue
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
