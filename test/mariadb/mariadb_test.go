package mariadb

import (
	"net"
	"testing"
)

// A server whose port was taken between picking and binding starts on another port, and
// readiness is not fooled by the process holding the old one.
func TestStartMovesOffATakenPort(t *testing.T) {
	s := Start(t, 1, Options{})[0]
	s.Stop()
	l, err := net.Listen("tcp", s.Addr())
	if err != nil {
		t.Fatalf("hold port: %v", err)
	}
	defer l.Close()
	taken := s.Port
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	s.start(bin, true)
	if s.Port == taken {
		t.Fatalf("server still on taken port %d", taken)
	}
	var one int
	if err := s.Admin().DB.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatalf("query over TCP on new port %d: %v", s.Port, err)
	}
}
