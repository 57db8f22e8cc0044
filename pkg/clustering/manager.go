package clustering

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Manager runs one cluster: each Step gathers every instance's state, decides, and runs at
// most one operation. It keeps a Record between steps (the operator stores all of it but the
// errant members in the cluster's status, and resumes from it) and counts failed probes of the
// primary, so that one lost probe never causes a failover.
type Manager struct {
	Operator *Operator
	Members  int
	// FailoverAfter is how long the primary must fail every probe before it is failed over:
	// at least two probes fail, and the last ends FailoverAfter (less roundJitter) or more
	// after the first began. It is a time, not a count of steps, so that steps can come often
	// (a dead primary is seen sooner) while a server that restarts in place within it keeps
	// its role.
	FailoverAfter time.Duration
	// ProbeTimeout bounds reading one instance's state.
	ProbeTimeout time.Duration
	// Reseed says which diverged members are re-seeded without a person.
	Reseed ReseedPolicy

	primary int
	// published is primary for readers on other goroutines (Primary).
	published atomic.Int64
	errant    []int
	epoch     int64
	replaced  []int
	// outage is the primary's current run of failed probes; probeBegan is when the latest
	// probe of the primary began.
	outage       outage
	probeBegan   time.Time
	switchoverTo int
	// reseedRequested are the requests not carried out yet; reseedDone those carried out.
	reseedRequested []int
	reseedDone      []int
	fence           string
	observed        []Instance
}

// Observed returns what the last Step gathered (nil before the first). Callers must not change it.
func (m *Manager) Observed() []Instance { return m.observed }

// DefaultFailoverAfter is the confirmation window a new manager starts with.
const DefaultFailoverAfter = time.Second

// Record is what a manager keeps between steps, and resumes from.
type Record struct {
	// Primary is the recorded primary, -1 for none.
	Primary int
	// Epoch counts the changes of primary (Spec.Epoch).
	Epoch int64
	// Replaced are former primaries that have not rejoined (Spec.Replaced).
	Replaced []int
	// Errant are members found errant (Spec.Errant). The operator keeps them in memory only:
	// a restarted operator finds them again while the primary lives.
	Errant []int
}

// NewManager returns a manager for a cluster with no recorded primary.
func NewManager(op *Operator, members int) *Manager {
	return Resume(op, members, Record{Primary: -1})
}

// Resume returns a manager that starts from rec, as stored in the cluster's status or kept
// across a change of members.
func Resume(op *Operator, members int, rec Record) *Manager {
	m := &Manager{Operator: op, Members: members, FailoverAfter: DefaultFailoverAfter, ProbeTimeout: 2 * time.Second,
		primary: rec.Primary, errant: slices.Clone(rec.Errant), epoch: rec.Epoch, replaced: slices.Clone(rec.Replaced), switchoverTo: -1}
	m.published.Store(int64(rec.Primary))
	return m
}

// Record returns what the manager keeps between steps. Not safe beside Step.
func (m *Manager) Record() Record {
	return Record{Primary: m.primary, Epoch: m.epoch, Replaced: slices.Clone(m.replaced), Errant: slices.Clone(m.errant)}
}

// Errant returns the instances known to be errant.
func (m *Manager) Errant() []int { return slices.Clone(m.errant) }

// Primary is the recorded primary, -1 if none. Safe to call while Step runs.
func (m *Manager) Primary() int { return int(m.published.Load()) }

// RequestSwitchover asks for to to become the primary at the next steps.
func (m *Manager) RequestSwitchover(to int) { m.switchoverTo = to }

// RequestReseed sets the members a person asked to re-seed (Spec.ReseedRequested). Each
// request is carried out once: a member re-seeded for it is not re-seeded again while the
// request stands; a request withdrawn and made again is carried out again.
func (m *Manager) RequestReseed(members []int) {
	m.reseedDone = slices.DeleteFunc(m.reseedDone, func(i int) bool { return !slices.Contains(members, i) })
	m.reseedRequested = slices.DeleteFunc(slices.Clone(members), func(i int) bool { return slices.Contains(m.reseedDone, i) })
}

// SetFence stops writes from the next step on, for the reason given ("" lifts the fence; see
// Spec.Fence).
func (m *Manager) SetFence(reason string) { m.fence = reason }

// ClearErrant forgets the errant instances: every member was re-filled from one backup, so
// none holds transactions of its own any more.
func (m *Manager) ClearErrant() { m.errant = nil }

// Gather reads every instance's state, each bounded by ProbeTimeout. The recorded primary is
// read last: a replica read after the primary could show transactions committed in between
// and look errant, while a primary read after its replicas holds everything they showed.
// The others are read at once, so that unreachable members cost one timeout, not one each.
func (m *Manager) Gather(ctx context.Context) []Instance {
	n := len(m.Operator.Instances)
	out := make([]Instance, n)
	probe := func(i int) {
		e := m.Operator.Endpoints[i]
		out[i] = Instance{Index: i, Host: e.Host, Port: e.Port, TLS: replicationTLS(e, e, m.Operator.TLSCAFile)}
		pctx, cancel := context.WithTimeout(ctx, m.ProbeTimeout)
		out[i].Status, out[i].Err = m.Operator.Instances[i].Status(pctx)
		cancel()
		// Not for the primary: an unreachable primary is failed over whatever the cause,
		// and asking would only delay that.
		if out[i].Status == nil && i != m.primary && m.Operator.Agents != nil {
			actx, cancel := context.WithTimeout(ctx, m.ProbeTimeout)
			out[i].Corrupt = m.Operator.Agents.DataCorrupt(actx, i)
			cancel()
		}
	}
	var wg sync.WaitGroup
	for i := range n {
		if i != m.primary {
			wg.Go(func() { probe(i) })
		}
	}
	wg.Wait()
	if m.primary >= 0 && m.primary < n {
		m.probeBegan = time.Now()
		probe(m.primary)
	}
	return out
}

// Step gathers, decides and runs the decided operation. When the operation fails, the
// decision returned keeps the recorded primary, epoch and replaced members: a promotion
// that did not happen is not reported as done.
func (m *Manager) Step(ctx context.Context) (Decision, error) {
	instances := m.Gather(ctx)
	defer func() { m.observed = instances }()
	failed := m.primary >= 0 && instances[m.primary].Status == nil
	down := m.outage.observe(failed, m.probeBegan, time.Now(), m.FailoverAfter)
	d := Decide(Spec{
		Members: m.Members, SemiSync: m.Operator.SemiSync, Primary: m.primary,
		PrimaryDown: down, SwitchoverTo: m.switchoverTo, Errant: m.errant,
		Fence: m.fence, Epoch: m.epoch, Replaced: m.replaced, Reseed: m.Reseed, ReseedRequested: m.reseedRequested,
	}, instances)
	m.errant = d.Errant
	if err := m.Operator.Run(ctx, d.Op); err != nil {
		if d.Op.Kind == OpFailover || d.Op.Kind == OpSwitchover {
			d.Primary = m.primary
		}
		d.Epoch, d.Replaced = m.epoch, slices.Clone(m.replaced)
		return d, err
	}
	if d.Op.Kind == OpReseed {
		// Its data is being replaced with a healthy peer's: nothing of its own is left.
		for _, t := range d.Op.Targets {
			d.Errant = slices.DeleteFunc(d.Errant, func(i int) bool { return i == t })
			d.Replaced = slices.DeleteFunc(d.Replaced, func(i int) bool { return i == t })
			if slices.Contains(m.reseedRequested, t) {
				m.reseedRequested = slices.DeleteFunc(m.reseedRequested, func(i int) bool { return i == t })
				m.reseedDone = append(m.reseedDone, t)
			}
		}
		m.errant = d.Errant
	}
	m.epoch, m.replaced = d.Epoch, slices.Clone(d.Replaced)
	if d.Primary >= 0 {
		m.primary = d.Primary
		m.published.Store(int64(d.Primary))
	}
	if d.Op.Kind == OpSwitchover || m.switchoverTo == m.primary {
		m.switchoverTo = -1
	}
	if d.Op.Kind == OpFailover {
		m.outage = outage{}
	}
	return d, nil
}

// outage follows a run of failed probes of the primary.
type outage struct {
	failures int
	// since is when the run's first probe began.
	since time.Time
}

// roundJitter is how far a run of failed probes may fall short of the window and still count:
// rounds come on a ticker whose window is a whole number of intervals (1 s of 500 ms rounds),
// and a few milliseconds of scheduling either way must not cost another round.
const roundJitter = 50 * time.Millisecond

// observe records a probe of the primary that began at began and ended at ended, and says
// whether the primary is down: at least two probes failed in a row, and the last ended window
// (less roundJitter) or more after the first began. Two probes, so that one slow or lost probe
// never is an outage however long it took; a time, not a count, so that the window does not
// shrink when probes come more often.
func (o *outage) observe(failed bool, began, ended time.Time, window time.Duration) bool {
	if !failed {
		*o = outage{}
		return false
	}
	if o.failures == 0 {
		o.since = began
	}
	o.failures++
	return o.failures >= 2 && ended.Sub(o.since) >= window-roundJitter
}
