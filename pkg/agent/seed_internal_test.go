package agent

import "testing"

func TestChooseDonor(t *testing.T) {
	primary := &StatusJSON{Executed: "0-100-5", Ready: true}
	replica := &StatusJSON{Executed: "0-100-5", ReadOnly: true, Ready: true, Replica: &ReplicaJSON{IORunning: true, SQLRunning: true}}
	broken := &StatusJSON{Executed: "0-100-3", ReadOnly: true, Replica: &ReplicaJSON{}}
	fenced := &StatusJSON{Executed: "0-100-5", ReadOnly: true}
	empty := &StatusJSON{ReadOnly: true}
	for _, tc := range []struct {
		name  string
		peers []peer
		donor string
		seed  bool
		err   bool
	}{
		{"new cluster: nobody answers", []peer{{Addr: "a"}, {Addr: "b"}}, "", false, false},
		{"new cluster: peers without data", []peer{{Addr: "a", Answered: true, Status: empty}, {Addr: "b"}}, "", false, false},
		{"a ready replica before the primary", []peer{{Addr: "p", Answered: true, Status: primary}, {Addr: "r", Answered: true, Status: replica}}, "r", true, false},
		{"the primary when no replica is ready", []peer{{Addr: "p", Answered: true, Status: primary}, {Addr: "b", Answered: true, Status: broken}}, "p", true, false},
		{"data but nobody ready: wait", []peer{{Addr: "f", Answered: true, Status: fenced}, {Addr: "b", Answered: true, Status: broken}}, "", true, true},
		{"an agent whose server is down may hold data: wait", []peer{{Addr: "d", Answered: true}, {Addr: "e", Answered: true, Status: empty}}, "", true, true},
		{"unreachable peers are left out", []peer{{Addr: "x"}, {Addr: "r", Answered: true, Status: replica}}, "r", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			donor, seed, err := chooseDonor(tc.peers)
			if donor != tc.donor || seed != tc.seed || (err != nil) != tc.err {
				t.Errorf("chooseDonor = %q, %v, %v; want %q, %v, error %v", donor, seed, err, tc.donor, tc.seed, tc.err)
			}
		})
	}
}
