package clustering

import (
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// Manager runs one cluster: each Step gathers every instance's state, decides, and runs at
// most one operation. It remembers the primary and errant replicas between steps (the
// operator stores them in the cluster's status) and counts failed probes of the primary, so
// that one lost probe never causes a failover.
type Manager struct {
	Operator *Operator
	Members  int
	// FailoverAfter is how many consecutive steps must find the primary unreachable.
	FailoverAfter int
	// ProbeTimeout bounds reading one instance's state.
	ProbeTimeout time.Duration

	primary int
	// published is primary for readers on other goroutines (Primary).
	published       atomic.Int64
	errant          []int
	primaryFailures int
	switchoverTo    int
	fence           string
	observed        []Instance
}

// Observed returns what the last Step gathered (nil before the first). Callers must not change it.
func (m *Manager) Observed() []Instance { return m.observed }

// NewManager returns a manager for a cluster with no recorded primary.
func NewManager(op *Operator, members int) *Manager {
	return Resume(op, members, -1, nil)
}

// Resume returns a manager that starts from a recorded primary (-1 for none) and errant
// instances, as stored in the cluster's status or kept across a change of members.
func Resume(op *Operator, members, primary int, errant []int) *Manager {
	m := &Manager{Operator: op, Members: members, FailoverAfter: 2, ProbeTimeout: 2 * time.Second,
		primary: primary, errant: slices.Clone(errant), switchoverTo: -1}
	m.published.Store(int64(primary))
	return m
}

// Errant returns the instances known to be errant.
func (m *Manager) Errant() []int { return slices.Clone(m.errant) }

// Primary is the recorded primary, -1 if none. Safe to call while Step runs.
func (m *Manager) Primary() int { return int(m.published.Load()) }

// RequestSwitchover asks for to to become the primary at the next steps.
func (m *Manager) RequestSwitchover(to int) { m.switchoverTo = to }

// SetFence stops writes from the next step on, for the reason given ("" lifts the fence; see
// Spec.Fence).
func (m *Manager) SetFence(reason string) { m.fence = reason }

// ClearErrant forgets the errant instances: every member was re-filled from one backup, so
// none holds transactions of its own any more.
func (m *Manager) ClearErrant() { m.errant = nil }

// Gather reads every instance's state, each bounded by ProbeTimeout. The recorded primary is
// read last: a replica read after the primary could show transactions committed in between
// and look errant, while a primary read after its replicas holds everything they showed.
func (m *Manager) Gather(ctx context.Context) []Instance {
	n := len(m.Operator.Instances)
	out := make([]Instance, n)
	order := make([]int, 0, n)
	for i := range n {
		if i != m.primary {
			order = append(order, i)
		}
	}
	if m.primary >= 0 && m.primary < n {
		order = append(order, m.primary)
	}
	for _, i := range order {
		out[i] = Instance{Index: i, Host: m.Operator.Endpoints[i].Host, Port: m.Operator.Endpoints[i].Port}
		pctx, cancel := context.WithTimeout(ctx, m.ProbeTimeout)
		out[i].Status, out[i].Err = m.Operator.Instances[i].Status(pctx)
		cancel()
	}
	return out
}

// Step gathers, decides and runs the decided operation.
func (m *Manager) Step(ctx context.Context) (Decision, error) {
	instances := m.Gather(ctx)
	defer func() { m.observed = instances }()
	if m.primary >= 0 && instances[m.primary].Status == nil {
		m.primaryFailures++
	} else {
		m.primaryFailures = 0
	}
	d := Decide(Spec{
		Members: m.Members, SemiSync: m.Operator.SemiSync, Primary: m.primary,
		PrimaryDown: m.primaryFailures >= m.FailoverAfter, SwitchoverTo: m.switchoverTo, Errant: m.errant,
		Fence: m.fence,
	}, instances)
	m.errant = d.Errant
	if err := m.Operator.Run(ctx, d.Op); err != nil {
		return d, err
	}
	if d.Primary >= 0 {
		m.primary = d.Primary
		m.published.Store(int64(d.Primary))
	}
	if d.Op.Kind == OpSwitchover || m.switchoverTo == m.primary {
		m.switchoverTo = -1
	}
	if d.Op.Kind == OpFailover {
		m.primaryFailures = 0
	}
	return d, nil
}
