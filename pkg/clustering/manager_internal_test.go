package clustering

import (
	"testing"
	"time"
)

// probe is one probe of the primary in an outage table: when it began and ended (offsets
// from t0) and whether it failed.
type probe struct {
	failed       bool
	began, ended time.Duration
}

func TestOutageNeedsTwoFailedProbesSpanningTheWindow(t *testing.T) {
	const window = time.Second
	t0 := time.Unix(1_800_000_000, 0)
	fast := func(at time.Duration) probe { return probe{failed: true, began: at, ended: at + 2*time.Millisecond} }
	silent := func(at time.Duration) probe { return probe{failed: true, began: at, ended: at + time.Second} }
	ok := func(at time.Duration) probe { return probe{began: at, ended: at + time.Millisecond} }
	cases := []struct {
		name   string
		probes []probe
		// down is the index of the first probe after which the primary is down, -1 for never.
		down int
	}{
		{"a refused probe every 500ms: down at the third, 1s after the first", []probe{fast(0), fast(500 * time.Millisecond), fast(time.Second)}, 2},
		{"a refused probe every second: down at the second", []probe{fast(0), fast(time.Second)}, 1},
		{"a round a few ms early still completes the window", []probe{fast(5 * time.Millisecond), fast(500 * time.Millisecond), fast(997 * time.Millisecond)}, 2},
		{"but a run 100ms short of it does not", []probe{fast(0), fast(450 * time.Millisecond), fast(900 * time.Millisecond)}, -1},
		{"probes every 100ms: down once the run spans the window", []probe{fast(0), fast(300 * time.Millisecond), fast(600 * time.Millisecond), fast(900 * time.Millisecond), fast(time.Second)}, 4},
		{"one probe that timed out after the whole window is not enough", []probe{{failed: true, began: 0, ended: 3 * time.Second}}, -1},
		{"a cut network: the second timed-out probe", []probe{silent(0), silent(time.Second)}, 1},
		{"a restart within the window: a success ends the run", []probe{fast(0), fast(500 * time.Millisecond), ok(time.Second), fast(1500 * time.Millisecond), fast(2 * time.Second)}, -1},
		{"a new run counts from its own first probe", []probe{fast(0), ok(500 * time.Millisecond), fast(time.Second), fast(1500 * time.Millisecond), fast(2 * time.Second)}, 4},
		{"a reachable primary is never down", []probe{ok(0), ok(time.Second), ok(2 * time.Second)}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var o outage
			got := -1
			for i, p := range tc.probes {
				if o.observe(p.failed, t0.Add(p.began), t0.Add(p.ended), window) && got < 0 {
					got = i
				}
			}
			if got != tc.down {
				t.Errorf("down after probe %d, want %d", got, tc.down)
			}
		})
	}
}
