// Package clustering is the MySQL brain: it gathers the state of every instance of a cluster,
// decides in a pure function what the cluster is and which single operation would move it
// towards health, and runs that operation. Invariants are in docs/clustering.md and asserted by
// the tests. No Kubernetes type is imported here.
package clustering

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// State is what Decide concludes the cluster is.
type State string

// States.
const (
	// Bootstrapping: no primary was ever chosen and every instance is empty.
	Bootstrapping State = "Bootstrapping"
	// Healthy: one writable primary, every member replicates from it correctly.
	Healthy State = "Healthy"
	// Degraded: the primary serves, but a member is unreachable, broken, errant or not yet set up.
	Degraded State = "Degraded"
	// FailingOver: the primary is down and a safe candidate takes its place.
	FailingOver State = "FailingOver"
	// Lost: no instance can safely be the primary; a person has to look.
	Lost State = "Lost"
	// Fenced: writes are stopped on request (a restore runs): the primary is read-only and
	// every replica follows it; nothing fails over.
	Fenced State = "Fenced"
)

// OpKind is the kind of the one operation a decision asks for.
type OpKind string

// Operations.
const (
	OpNone              OpKind = ""
	OpBootstrapPrimary  OpKind = "BootstrapPrimary"
	OpConfigurePrimary  OpKind = "ConfigurePrimary"
	OpConfigureReplicas OpKind = "ConfigureReplicas"
	OpSwitchover        OpKind = "Switchover"
	OpFailover          OpKind = "Failover"
	OpFenceWritable     OpKind = "FenceWritable"
	// OpReseed replaces a diverged member's data with a copy of a healthy peer (Agents.Reseed).
	OpReseed OpKind = "Reseed"
)

// ReseedPolicy says which diverged members are re-seeded without a person.
type ReseedPolicy string

// Re-seed policies.
const (
	// ReseedFailedPrimaries (the default) re-seeds a member that diverged after a failover
	// replaced it as the primary. What it holds beyond its replacement's history is its
	// unacknowledged tail: with loss-less semi-sync no client was told those commits
	// succeeded (docs/clustering.md).
	ReseedFailedPrimaries ReseedPolicy = ""
	// ReseedDiverged also re-seeds replicas that diverged for other reasons (someone wrote
	// to them): their own transactions are discarded.
	ReseedDiverged ReseedPolicy = "Diverged"
	// ReseedNever leaves every diverged member to a person.
	ReseedNever ReseedPolicy = "Never"
)

// Operation is what Operate runs.
type Operation struct {
	Kind OpKind
	// Primary is the instance that is (or becomes) the primary.
	Primary int
	// From is the old primary of a switchover.
	From int
	// Targets are the instances the operation changes (replicas to configure, writables to fence).
	Targets []int
	// ReadOnly, for BootstrapPrimary and ConfigurePrimary, configures the primary but leaves it
	// read-only: the cluster is fenced.
	ReadOnly bool
	// Why, for Reseed, says in a few words why the targets' data is replaced; the agents keep
	// it with the data they set aside, for whoever looks at that data later.
	Why string
}

// Instance is what gathering learned about one member.
type Instance struct {
	Index int
	// Host and Port are where other members reach it.
	Host string
	Port int
	// TLS: it serves TLS, and replicates over TLS from a source that does too.
	TLS bool
	// Status is nil when the instance could not be reached; Err says why.
	Status *mysql.Status
	Err    error
	// Corrupt, for an unreachable instance, says its server stops at every start because
	// InnoDB finds its data corrupt (Agents.DataCorrupt): waiting does not bring it back.
	Corrupt bool
}

// Spec is what Decide needs from the cluster's definition and its recorded status.
type Spec struct {
	// Members is the desired number of instances.
	Members int
	// SemiSync is loss-less semi-sync replication (spec.replication.mode semisync).
	SemiSync bool
	// Primary is the primary recorded by the last decision, -1 if none.
	Primary int
	// PrimaryDown is set by the manager once the recorded primary was unreachable long enough
	// to fail over (one failed probe is not enough).
	PrimaryDown bool
	// SwitchoverTo requests a new primary, -1 if none.
	SwitchoverTo int
	// Errant are instances found with errant transactions earlier; they stay errant until a
	// person re-seeds them, even when the primary that showed it is gone.
	Errant []int
	// Fence, when not empty, stops writes and says why (a restore runs): the primary is kept
	// read-only and is not ready, nothing fails over or switches over, and no new errant
	// instance is recorded (members are being re-filled on purpose). Replicas are still set
	// up to follow the primary.
	Fence string
	// Epoch counts the changes of primary so far (failovers and switchovers).
	Epoch int64
	// Replaced are members that were the primary when a failover replaced them and have not
	// followed a primary since: never promoted, and re-seeded when they diverged.
	Replaced []int
	// Reseed says which diverged members are re-seeded without a person.
	Reseed ReseedPolicy
	// ReseedRequested are members a person asked to re-seed (their data is replaced with a
	// healthy peer's whether they diverged or not); never the primary, one at a time, and only
	// while every other member is reachable, as for the policy's re-seeds.
	ReseedRequested []int
}

// Decision is the outcome of Decide.
type Decision struct {
	State State
	// Primary is the primary once Op is done, -1 if none.
	Primary int
	Op      Operation
	// Ready says per instance whether it plays its role correctly (readiness and Services).
	Ready []bool
	// Errant lists instances with transactions the primary does not have.
	Errant []int
	// Reason explains the state in one sentence, for conditions and events.
	Reason string
	// Fence is the fence the decision was made under ("" for none): once a decision made
	// under a fence has been carried out, the primary takes no more writes.
	Fence string
	// Epoch and Replaced are Spec's once Op is done: a failover or a switchover starts a new
	// epoch, a failover adds the old primary to Replaced, and a member that follows the
	// primary again leaves it.
	Epoch    int64
	Replaced []int
}

func reachable(in Instance) bool { return in.Status != nil }

func writable(in Instance) bool { return in.Status != nil && !in.Status.ReadOnly }

// Decide is pure: same input, same decision, no I/O.
func Decide(spec Spec, instances []Instance) Decision {
	fenced := spec.Fence != ""
	d := Decision{Primary: -1, Ready: make([]bool, len(instances)), Errant: slices.Clone(spec.Errant), Fence: spec.Fence,
		Epoch: spec.Epoch, Replaced: slices.Clone(spec.Replaced)}
	up := 0
	for _, in := range instances {
		if reachable(in) {
			up++
		}
	}
	if up == 0 {
		d.State, d.Reason = Lost, "no instance is reachable"
		d.Primary = spec.Primary
		return d
	}

	primary := spec.Primary
	if primary < 0 || primary >= len(instances) {
		return decideWithoutPrimary(spec, instances, d)
	}

	// The recorded primary is down: fail over to the most advanced safe replica.
	if !reachable(instances[primary]) {
		if fenced {
			d.State, d.Primary = Degraded, primary
			d.Reason = fmt.Sprintf("primary %d is unreachable; writes are stopped (%s), so it does not fail over", primary, spec.Fence)
			return d
		}
		if !spec.PrimaryDown {
			d.State, d.Primary = Degraded, primary
			d.Reason = fmt.Sprintf("primary %d is unreachable; waiting before failing over", primary)
			return d
		}
		return decideFailover(spec, instances, d)
	}
	d.Primary = primary

	// At most one writable instance: fence any other first.
	var extra []int
	for _, in := range instances {
		if in.Index != primary && writable(in) {
			extra = append(extra, in.Index)
		}
	}
	if len(extra) > 0 {
		d.State = Degraded
		d.Op = Operation{Kind: OpFenceWritable, Primary: primary, Targets: extra}
		d.Reason = fmt.Sprintf("instances %v are writable besides the primary %d: making them read-only", extra, primary)
		return d
	}

	p := instances[primary]
	// A restarted primary (read-only until configured) whose crash recovery truncated a tail
	// its replicas had already received (init_rpl_role = SLAVE) lacks transactions they hold:
	// making it writable again would fork the history. The replica that received most takes
	// over instead, and the old primary follows it and gets the tail back.
	if !fenced && !writable(p) && replicaAhead(spec, instances, p) {
		spec.PrimaryDown = true
		return decideFailover(spec, instances, d)
	}
	// Errant transactions: anything a replica executed that the primary does not have. Not
	// while fenced: a restore replaces data on purpose, and no application can write meanwhile.
	for _, in := range instances {
		if fenced || in.Index == primary || !reachable(in) || slices.Contains(d.Errant, in.Index) {
			continue
		}
		if !in.Status.Executed.Subtract(p.Status.Executed).IsEmpty() {
			d.Errant = append(d.Errant, in.Index)
		}
	}
	slices.Sort(d.Errant)

	switch {
	case fenced && writable(p):
		d.State = Degraded
		d.Op = Operation{Kind: OpFenceWritable, Primary: primary, Targets: []int{primary}}
		d.Reason = fmt.Sprintf("stopping writes on primary %d: %s", primary, spec.Fence)
		return d
	case !spec.SemiSync && p.Status.SemiSyncSource || (!fenced && !writable(p)):
		d.State = Degraded
		d.Op = Operation{Kind: OpConfigurePrimary, Primary: primary, ReadOnly: fenced}
		d.Reason = fmt.Sprintf("configuring primary %d", primary)
		return d
	}
	// A fenced primary takes no writes, so it does not play its role: not ready.
	d.Ready[primary] = !fenced

	var toConfigure, broken, missing []int
	for _, in := range instances {
		if in.Index == primary {
			continue
		}
		switch {
		case !reachable(in):
			missing = append(missing, in.Index)
		case slices.Contains(d.Errant, in.Index):
		case replicaBroken(in):
			broken = append(broken, in.Index)
		case !replicaFollows(in, p, spec.SemiSync):
			toConfigure = append(toConfigure, in.Index)
		default:
			d.Ready[in.Index] = true
		}
	}
	// A member that follows the primary again has rejoined.
	d.Replaced = slices.DeleteFunc(d.Replaced, func(i int) bool { return i < len(d.Ready) && d.Ready[i] })

	// Semi-sync is turned on once a replica follows: before that nothing could acknowledge,
	// so commits would block (a cluster growing from one member would take no write until
	// its new members were seeded, and seeding from the primary would wait behind those
	// commits). It is never turned off in semisync mode (commits may be waiting).
	if spec.SemiSync && !p.Status.SemiSyncSource && slices.ContainsFunc(others(instances, primary), func(i int) bool { return d.Ready[i] }) {
		d.State = Degraded
		d.Op = Operation{Kind: OpConfigurePrimary, Primary: primary, ReadOnly: fenced}
		d.Reason = fmt.Sprintf("turning semi-sync on at primary %d: a replica follows it", primary)
		return d
	}

	if t := spec.SwitchoverTo; !fenced && t >= 0 && t != primary && t < len(instances) {
		if d.Ready[t] {
			d.State = Degraded
			d.Op = Operation{Kind: OpSwitchover, From: primary, Primary: t, Targets: others(instances, t)}
			d.Primary = t
			d.Epoch++
			d.Reason = fmt.Sprintf("switching over from %d to %d", primary, t)
			return d
		}
	}
	if len(toConfigure) > 0 {
		d.State = Degraded
		d.Op = Operation{Kind: OpConfigureReplicas, Primary: primary, Targets: toConfigure}
		d.Reason = fmt.Sprintf("configuring replicas %v to follow %d", toConfigure, primary)
		return d
	}

	// One diverged member at a time is re-seeded, and only while every other member is
	// reachable: at most one member is down by the operator's doing.
	if r := requestedReseed(spec, d); r >= 0 && len(missing) == 0 && !fenced {
		d.State = Degraded
		d.Op = Operation{Kind: OpReseed, Primary: primary, Targets: []int{r}, Why: "re-seed requested"}
		d.Reason = fmt.Sprintf("re-seeding %d from a healthy peer: requested", r)
		return d
	}
	if r := reseedCandidate(spec, d, broken); r >= 0 && len(missing) == 0 && !fenced {
		d.State = Degraded
		d.Op = Operation{Kind: OpReseed, Primary: primary, Targets: []int{r}, Why: "diverged from the primary"}
		d.Reason = fmt.Sprintf("re-seeding %d from a healthy peer: it diverged from primary %d", r, primary)
		return d
	}
	// A member whose server stops at start on corrupt data is re-seeded while it is the one
	// member down. It is not the primary, so it holds nothing the primary lacks that a client
	// was told is committed (the primary holds every commit it acknowledged).
	corrupt := slices.DeleteFunc(slices.Clone(missing), func(i int) bool { return !instances[i].Corrupt })
	if len(corrupt) > 0 && len(missing) == 1 && spec.Reseed != ReseedNever && !fenced {
		r := corrupt[0]
		d.State = Degraded
		d.Op = Operation{Kind: OpReseed, Primary: primary, Targets: []int{r}, Why: "the server stops at start on corrupt data"}
		d.Reason = fmt.Sprintf("re-seeding %d from a healthy peer: its server stops at start on corrupt data", r)
		return d
	}

	var problems []string
	if !p.Status.SemiSyncSourceActive && spec.SemiSync && len(instances) > 1 {
		problems = append(problems, "semi-sync is not active on the primary")
	}
	if len(d.Errant) > 0 {
		problems = append(problems, fmt.Sprintf("errant transactions on %v", d.Errant))
	}
	if len(broken) > 0 {
		problems = append(problems, fmt.Sprintf("replication stopped with an error on %v (re-seed a member that diverged; see docs/clustering.md)", broken))
	}
	if len(corrupt) > 0 {
		problems = append(problems, fmt.Sprintf("the server of %v stops at start on corrupt data (re-seed it; see docs/clustering.md)", corrupt))
		missing = slices.DeleteFunc(missing, func(i int) bool { return slices.Contains(corrupt, i) })
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("unreachable: %v", missing))
	}
	if len(instances) < spec.Members {
		problems = append(problems, fmt.Sprintf("%d of %d members exist", len(instances), spec.Members))
	}
	switch {
	case len(problems) > 0 && fenced:
		d.State, d.Reason = Degraded, strings.Join(problems, "; ")+"; writes are stopped ("+spec.Fence+")"
	case len(problems) > 0:
		d.State, d.Reason = Degraded, strings.Join(problems, "; ")
	case fenced:
		d.State, d.Reason = Fenced, fmt.Sprintf("writes are stopped (%s): primary %d is read-only and every replica follows it", spec.Fence, primary)
	default:
		d.State, d.Reason = Healthy, fmt.Sprintf("primary %d and every replica are healthy", primary)
	}
	return d
}

// replicaAhead: a promotable replica received transactions the primary p has not executed.
func replicaAhead(spec Spec, instances []Instance, p Instance) bool {
	for _, in := range instances {
		if in.Index != p.Index && reachable(in) && promotable(spec, instances, in) &&
			!received(in, true).Subtract(p.Status.Executed).IsEmpty() {
			return true
		}
	}
	return false
}

// reseedCandidate is the diverged member (errant, or broken: its source refuses it) that
// spec.Reseed allows re-seeding, lowest index first; -1 for none.
// requestedReseed is the first member a person asked to re-seed that may be: not the
// primary, and one of the cluster's members; -1 if none.
func requestedReseed(spec Spec, d Decision) int {
	for _, i := range slices.Sorted(slices.Values(spec.ReseedRequested)) {
		if i >= 0 && i != d.Primary && i < len(d.Ready) {
			return i
		}
	}
	return -1
}

func reseedCandidate(spec Spec, d Decision, broken []int) int {
	if spec.Reseed == ReseedNever {
		return -1
	}
	diverged := slices.Sorted(slices.Values(append(slices.Clone(d.Errant), broken...)))
	for _, i := range diverged {
		if i == d.Primary || i >= len(d.Ready) {
			continue
		}
		if spec.Reseed == ReseedDiverged || slices.Contains(spec.Replaced, i) {
			return i
		}
	}
	return -1
}

// replicaBroken: a replication thread stopped with an error that reconfiguring cannot fix: an
// SQL error, or the source refusing the replica's position (error 1236: it diverged, as a
// crashed primary that kept a commit no replica acknowledged does, or needs purged binlogs).
// Such a member needs re-seeding; repointing it every round would change nothing.
func replicaBroken(in Instance) bool {
	r := in.Status.Replica
	return r != nil && (!r.SQLRunning && r.LastSQLError != "" || !r.IORunning && strings.Contains(r.LastIOError, "1236"))
}

// replicaFollows: replicating from the primary with both threads running, acknowledging
// when semi-sync is on, and over TLS when both serve it (a member restarted with TLS is
// repointed to use it).
func replicaFollows(in, primary Instance, semiSync bool) bool {
	r := in.Status.Replica
	return r != nil && r.SourceHost == primary.Host && r.SourcePort == primary.Port &&
		r.IORunning && r.SQLRunning && in.Status.SemiSyncReplica == semiSync && r.TLS == (in.TLS && primary.TLS)
}

func others(instances []Instance, except int) []int {
	var out []int
	for _, in := range instances {
		if in.Index != except {
			out = append(out, in.Index)
		}
	}
	return out
}

// decideWithoutPrimary handles a cluster with no recorded primary: a new cluster, or one whose
// status was lost.
func decideWithoutPrimary(spec Spec, instances []Instance, d Decision) Decision {
	var writables []int
	for _, in := range instances {
		if writable(in) {
			writables = append(writables, in.Index)
		}
	}
	if len(writables) == 1 {
		// One writable instance is the primary someone (or an earlier decision) made.
		spec.Primary = writables[0]
		return Decide(spec, instances)
	}
	if len(writables) > 1 {
		d.State, d.Reason = Lost, fmt.Sprintf("instances %v are all writable and none is recorded as primary", writables)
		return d
	}
	empty := true
	for _, in := range instances {
		if !reachable(in) {
			d.State, d.Reason = Bootstrapping, fmt.Sprintf("waiting for instance %d before bootstrapping", in.Index)
			return d
		}
		empty = empty && in.Status.Executed.IsEmpty()
	}
	if len(instances) < spec.Members {
		d.State, d.Reason = Bootstrapping, fmt.Sprintf("waiting for %d members before bootstrapping", spec.Members)
		return d
	}
	if empty {
		d.State, d.Primary = Bootstrapping, 0
		d.Op = Operation{Kind: OpBootstrapPrimary, Primary: 0, ReadOnly: spec.Fence != ""}
		d.Reason = "bootstrapping instance 0 as the first primary"
		return d
	}
	// Data but no primary: the instance that has everything the others have takes the role.
	for _, in := range instances {
		if containsAll(in.Status.Executed, instances) {
			spec.Primary = in.Index
			return Decide(spec, instances)
		}
	}
	d.State, d.Reason = Lost, "instances hold diverging data and none is recorded as primary"
	return d
}

func containsAll(set mysql.GTIDSet, instances []Instance) bool {
	for _, in := range instances {
		if reachable(in) && !set.Contains(in.Status.Executed) {
			return false
		}
	}
	return true
}

// decideFailover picks the replica that received the most. With loss-less semi-sync every
// acknowledged transaction reached at least one replica, so the candidate must hold everything
// any reachable replica received from the primary, ineligible ones included (their own
// executed transactions aside: an errant replica's or a former primary's may be writes no
// replica acknowledged). Only eligible instances are candidates (promotable). If no candidate
// holds it all, promoting any would lose acknowledged writes: the cluster is Lost.
func decideFailover(spec Spec, instances []Instance, d Decision) Decision {
	var need mysql.GTIDSet
	var candidates []Instance
	for _, in := range instances {
		if in.Index == spec.Primary || !reachable(in) {
			continue
		}
		ok := promotable(spec, instances, in)
		got := received(in, ok)
		if need == nil {
			need = got
		} else {
			need = need.Union(got)
		}
		if ok {
			candidates = append(candidates, in)
		}
	}
	if len(candidates) == 0 {
		d.State, d.Primary = Lost, spec.Primary
		d.Reason = fmt.Sprintf("primary %d is down and no healthy replica can take over", spec.Primary)
		return d
	}
	for _, c := range candidates {
		if received(c, true).Contains(need) {
			d.State, d.Primary = FailingOver, c.Index
			d.Op = Operation{Kind: OpFailover, From: spec.Primary, Primary: c.Index, Targets: others(instances, c.Index)}
			d.Epoch++
			if !slices.Contains(d.Replaced, spec.Primary) {
				d.Replaced = append(d.Replaced, spec.Primary)
			}
			d.Reason = fmt.Sprintf("primary %d is down: promoting %d, which received every transaction the replicas did", spec.Primary, c.Index)
			return d
		}
	}
	d.State, d.Primary = Lost, spec.Primary
	d.Reason = fmt.Sprintf("primary %d is down and no promotable replica holds every received transaction (%s)", spec.Primary, need)
	return d
}

// promotable: in may replace the recorded primary. It must not be errant, broken (unless only
// because it is ahead of its source) or a replaced former primary that has not followed a
// primary since, and it
// must be a read-only replica of the recorded primary, or writable (promoted by a failover
// whose outcome was not recorded yet, as when the operator stopped in the middle). A
// read-only instance that follows no one, or someone else, is a former primary fenced after
// it came back, or a member not yet set up: its data is not known to be the recorded
// primary's history, so it is never chosen over the members that follow it.
func promotable(spec Spec, instances []Instance, in Instance) bool {
	if slices.Contains(spec.Errant, in.Index) || slices.Contains(spec.Replaced, in.Index) {
		return false
	}
	p := instances[spec.Primary]
	// A replica refused by a source it is strictly ahead of did not diverge: the source lost
	// a tail the replica had received (a restarted primary whose crash recovery truncated it).
	if replicaBroken(in) && !(reachable(p) && in.Status.Executed.Contains(p.Status.Executed)) {
		return false
	}
	if writable(in) {
		return true
	}
	r := in.Status.Replica
	return r != nil && r.SourceHost == p.Host && r.SourcePort == p.Port
}

// received is what an instance got from the primary: its relay position, plus what it executed
// when it is promotable (an errant replica's or a former primary's executed set may hold
// transactions no replica acknowledged).
func received(in Instance, withExecuted bool) mysql.GTIDSet {
	var set mysql.GTIDSet
	if withExecuted {
		set = in.Status.Executed
	}
	if r := in.Status.Replica; r != nil && r.Retrieved != nil {
		if set == nil {
			return r.Retrieved
		}
		set = set.Union(r.Retrieved)
	}
	if set == nil {
		return in.Status.Executed.Subtract(in.Status.Executed) // empty, of the right flavor
	}
	return set
}
