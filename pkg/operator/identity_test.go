package operator

import (
	"os"
	"strings"
	"testing"
)

// In a pod the identity is the pod's name, so that a restarted container takes its own lease
// back at once; elsewhere it is the host name with a random suffix, so that two processes on
// one host never share one.
func TestDefaultIdentity(t *testing.T) {
	t.Setenv("POD_NAME", "mysql-operator-7c9f-abcde")
	if id, err := defaultIdentity(); err != nil || id != "mysql-operator-7c9f-abcde" {
		t.Errorf("in a pod: %q %v", id, err)
	}
	t.Setenv("POD_NAME", "")
	host, _ := os.Hostname()
	a, err := defaultIdentity()
	b, _ := defaultIdentity()
	if err != nil || !strings.HasPrefix(a, host+"_") || a == b {
		t.Errorf("outside a pod: %q and %q (%v), want %s_<random>", a, b, err, host)
	}
}
