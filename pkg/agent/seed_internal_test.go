package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
)

func TestChooseDonor(t *testing.T) {
	primary := &agentapi.StatusJSON{Executed: "0-100-5", Ready: true}
	replica := &agentapi.StatusJSON{Executed: "0-100-5", ReadOnly: true, Ready: true, Replica: &agentapi.ReplicaJSON{IORunning: true, SQLRunning: true}}
	broken := &agentapi.StatusJSON{Executed: "0-100-3", ReadOnly: true, Replica: &agentapi.ReplicaJSON{}}
	fenced := &agentapi.StatusJSON{Executed: "0-100-5", ReadOnly: true}
	empty := &agentapi.StatusJSON{ReadOnly: true}
	for _, tc := range []struct {
		name      string
		peers     []peer
		holdsData bool
		donor     string
		seed      bool
		err       bool
	}{
		{"new cluster: nobody answers", []peer{{Addr: "a"}, {Addr: "b"}}, false, "", false, false},
		{"new cluster: peers without data", []peer{{Addr: "a", Answered: true, Status: empty}, {Addr: "b"}}, false, "", false, false},
		{"a ready replica before the primary", []peer{{Addr: "p", Answered: true, Status: primary}, {Addr: "r", Answered: true, Status: replica}}, false, "r", true, false},
		{"the primary when no replica is ready", []peer{{Addr: "p", Answered: true, Status: primary}, {Addr: "b", Answered: true, Status: broken}}, false, "p", true, false},
		{"data but nobody ready: wait", []peer{{Addr: "f", Answered: true, Status: fenced}, {Addr: "b", Answered: true, Status: broken}}, false, "", true, true},
		{"an agent whose server is down may hold data: wait", []peer{{Addr: "d", Answered: true}, {Addr: "e", Answered: true, Status: empty}}, false, "", true, true},
		{"unreachable peers are left out", []peer{{Addr: "x"}, {Addr: "r", Answered: true, Status: replica}}, false, "r", true, false},
		// Once the operator recorded that the cluster holds data, a peer that does not answer
		// may hold it: a member whose peers are briefly down waits instead of starting empty.
		{"holds data: nobody answers, wait", []peer{{Addr: "a"}, {Addr: "b"}}, true, "", true, true},
		{"holds data: an unreachable peer and one without data, wait", []peer{{Addr: "x"}, {Addr: "e", Answered: true, Status: empty}}, true, "", true, true},
		{"holds data: every peer answered without data, start empty", []peer{{Addr: "e", Answered: true, Status: empty}, {Addr: "f", Answered: true, Status: empty}}, true, "", false, false},
		{"holds data: a ready replica is copied", []peer{{Addr: "x"}, {Addr: "r", Answered: true, Status: replica}}, true, "r", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			donor, seed, err := chooseDonor(tc.peers, tc.holdsData)
			if donor != tc.donor || seed != tc.seed || (err != nil) != tc.err {
				t.Errorf("chooseDonor = %q, %v, %v; want %q, %v, error %v", donor, seed, err, tc.donor, tc.seed, tc.err)
			}
		})
	}
}

func TestClusterHoldsData(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, agentapi.FileHoldsData)
	if got, err := ClusterHoldsData(path); got || err != nil {
		t.Fatalf("absent file: %v, %v; want false, nil", got, err)
	}
	for content, want := range map[string]bool{"true": true, "true\n": true, "false": false, "": false} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := ClusterHoldsData(path); got != want || err != nil {
			t.Errorf("file %q: %v, %v; want %v, nil", content, got, err, want)
		}
	}
	if _, err := ClusterHoldsData(dir); err == nil {
		t.Error("a directory in place of the file: want an error")
	}
}
