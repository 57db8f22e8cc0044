package clustering

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// Operator runs operations on a cluster's instances. It is the only part of the package with
// side effects, and it only talks SQL.
type Operator struct {
	Flavor mysql.Flavor
	// Instances holds one connection per member index.
	Instances []*mysql.Instance
	// Endpoints are where members reach each other, by index.
	Endpoints []Endpoint
	// ReplUser and ReplPassword are the replication account.
	ReplUser, ReplPassword string
	// SemiSync turns loss-less semi-sync on for primaries and replicas.
	SemiSync bool
	// ProtectedUsers keep their connections when a primary is fenced (the operator's own).
	ProtectedUsers []string
	// ApplyTimeout bounds waiting for a replica to apply what it received.
	ApplyTimeout time.Duration
	// Agents does what SQL cannot: nil where nothing can (OpReseed then fails, and stray
	// writable members are fenced with SQL alone).
	Agents Agents
	// TLSCAFile is the CA bundle's path on the members. Replication between two members that
	// both serve TLS (Endpoint.TLS) uses it and verifies the source's certificate and name.
	TLSCAFile string
}

// replicationTLS reports whether a replica at endpoint replica replicates from source over TLS.
func replicationTLS(source, replica Endpoint, caFile string) bool {
	return caFile != "" && source.TLS && replica.TLS
}

// ConnTimeout bounds connecting, each read and each write on the operator's connections to
// the members (mysql.ConnConfig.Timeout): a statement of an operation that outlasts it fails
// the operation, which a later round retries.
const ConnTimeout = 2 * time.Second

// Agents acts on members through their agents.
type Agents interface {
	// Reseed replaces member i's data with a copy of a healthy peer. It returns once the
	// member's old data can no longer be served (the copy itself may still be running): in
	// the operator, the member's agent marks its datadir for re-seeding and its pod is
	// deleted, and init sets the old datadir aside and seeds the member before its server
	// starts. why says what made the decision (Operation.Why).
	Reseed(ctx context.Context, i int, why string) error
	// KillServer SIGKILLs member i's server; its container restarts it, read-only.
	KillServer(ctx context.Context, i int) error
	// DataCorrupt reports whether member i, unreachable, is so because its server stops at
	// every start on data InnoDB reports corrupt (in the operator: its container crashed
	// twice in a row saying so in its log). False when that cannot be told.
	DataCorrupt(ctx context.Context, i int) bool
}

// Endpoint is a member's address as other members see it.
type Endpoint struct {
	Host string
	Port int
	// TLS is whether the member serves TLS with a certificate for Host (and, as a replica,
	// holds the CA file to verify its source's).
	TLS bool
}

// Run performs op. Each step is idempotent, so an operation cut short is completed by the next
// decision rather than undone.
func (o *Operator) Run(ctx context.Context, op Operation) error {
	switch op.Kind {
	case OpNone:
		return nil
	case OpBootstrapPrimary, OpConfigurePrimary:
		return o.configurePrimary(ctx, op.Primary, op.ReadOnly)
	case OpConfigureReplicas:
		return o.configureReplicas(ctx, op.Primary, op.Targets)
	case OpFenceWritable:
		for _, t := range op.Targets {
			fence := o.fenceStray
			if t == op.Primary {
				fence = o.fence
			}
			if err := fence(ctx, t); err != nil {
				return err
			}
		}
		return nil
	case OpSwitchover:
		return o.switchover(ctx, op)
	case OpFailover:
		return o.failover(ctx, op)
	case OpReseed:
		if o.Agents == nil {
			return errors.New("re-seeding is not available")
		}
		for _, t := range op.Targets {
			if err := o.Agents.Reseed(ctx, t, op.Why); err != nil {
				return fmt.Errorf("re-seed %d: %w", t, err)
			}
		}
		return nil
	}
	return fmt.Errorf("unknown operation %q", op.Kind)
}

func (o *Operator) timeout() time.Duration {
	if o.ApplyTimeout > 0 {
		return o.ApplyTimeout
	}
	return 60 * time.Second
}

// configurePrimary forgets any replication source, sets semi-sync per mode and makes the
// instance writable, in that order: semi-sync is on before the first write is accepted. A
// fenced primary (readOnly) is configured the same way but stays read-only.
func (o *Operator) configurePrimary(ctx context.Context, i int, readOnly bool) error {
	f := o.Flavor
	err := o.Instances[i].Exec(ctx,
		mysql.Statement{Query: f.StopReplica()},
		mysql.Statement{Query: f.ResetReplicaAll()},
		mysql.Statement{Query: f.SemiSyncReplica(false)},
		f.SemiSyncSource(o.SemiSync, 1),
		mysql.Statement{Query: f.SetReadOnly(readOnly)},
	)
	if err != nil {
		return fmt.Errorf("configure primary %d: %w", i, err)
	}
	return nil
}

// configureReplicas makes each target a read-only replica of primary.
func (o *Operator) configureReplicas(ctx context.Context, primary int, targets []int) error {
	f := o.Flavor
	src := mysql.Source{Host: o.Endpoints[primary].Host, Port: o.Endpoints[primary].Port, User: o.ReplUser, Password: o.ReplPassword, ConnectRetry: 1}
	var errs []error
	for _, t := range targets {
		// A writable target (a former primary that came back) may have commits waiting for
		// an acknowledgement, behind which a plain SET GLOBAL read_only would wait: it is
		// fenced (fenceStray), and a later round, seeing it read-only, configures it.
		// Read-only ones keep their readers' connections.
		if w, err := o.Instances[t].Writable(ctx); err == nil && w {
			if err := o.fenceStray(ctx, t); err != nil {
				errs = append(errs, fmt.Errorf("configure replica %d of %d: %w", t, primary, err))
			}
			continue
		}
		src := src
		if replicationTLS(o.Endpoints[primary], o.Endpoints[t], o.TLSCAFile) {
			src.TLSCAFile = o.TLSCAFile
		}
		err := o.Instances[t].Exec(ctx,
			mysql.Statement{Query: f.SetReadOnly(true)},
			mysql.Statement{Query: f.StopReplica()},
			f.SemiSyncSource(false, 0),
			mysql.Statement{Query: f.SemiSyncReplica(o.SemiSync)},
			f.ChangeSource(src),
			mysql.Statement{Query: f.StartReplica()},
		)
		if err != nil {
			errs = append(errs, fmt.Errorf("configure replica %d of %d: %w", t, primary, err))
		}
	}
	return errors.Join(errs...)
}

// fenceStray fences a writable member that is not the primary: a former primary back from a
// partition, typically, whose commits wait for acknowledgements no replica will send. Ending
// their connections cannot make sure none is answered OK: MariaDB's binlog group commit has
// one leader wait for the whole group, and a killed leader commits the group, whose other
// members may answer OK before their own kill arrives. So its server is killed instead
// (through its agent): a commit waiting after its binlog sync (AFTER_SYNC) is only prepared,
// no client is answered, and crash recovery (init_rpl_role = SLAVE, docs/clustering.md)
// truncates that tail from the binlog. Without agents, or when the kill fails, the
// connections are ended as for the primary.
func (o *Operator) fenceStray(ctx context.Context, i int) error {
	if o.Agents != nil {
		if err := o.Agents.KillServer(ctx, i); err == nil {
			return nil
		}
	}
	return o.fence(ctx, i)
}

// fenceKillInterval is how often a fence ends client connections while read_only is pending;
// fenceAttempts is how often it tries to set read_only in one round.
const (
	fenceKillInterval = 100 * time.Millisecond
	fenceAttempts     = 3
)

// fence makes an instance read-only and ends its client connections (the primary, for a
// switchover or a restore: a commit answered OK as its connection is ended still reaches the
// next primary, which waits for all the old one executed). SET GLOBAL read_only
// waits for the commits in flight, and on a primary that no replica acknowledges (cut off
// from them) those wait for an acknowledgement that never comes, so the statement alone
// would block until the semi-sync timeout. The client connections are therefore ended
// while it waits, every fenceKillInterval (clients that reconnect meanwhile too): a killed
// commit answers its client with an error, never an OK, so no write the new primary lacks is
// acknowledged. Once read-only, the connections are ended once more.
func (o *Operator) fence(ctx context.Context, i int) error {
	in := o.Instances[i]
	done := make(chan error, 1)
	setReadOnly := func() { done <- in.ExecSQL(ctx, o.Flavor.SetReadOnly(true)) }
	go setReadOnly()
	tick := time.NewTicker(fenceKillInterval)
	defer tick.Stop()
	for attempt := 1; ; {
		// Errors here are retried at the next tick; the final pass below reports them.
		_, _ = in.KillClientConnections(ctx, o.ProtectedUsers...)
		select {
		case err := <-done:
			// A connection lost meanwhile (under load, or as connections are ended) is
			// retried a few times; the next round retries the rest.
			if err != nil && ctx.Err() == nil && attempt < fenceAttempts {
				attempt++
				go setReadOnly()
				continue
			}
			if err != nil {
				return fmt.Errorf("fence %d: %w", i, err)
			}
			if _, err := in.KillClientConnections(ctx, o.ProtectedUsers...); err != nil {
				return fmt.Errorf("fence %d: %w", i, err)
			}
			return nil
		case <-tick.C:
		}
	}
}

// switchover moves the primary role from op.From to op.Primary without losing a write: the old
// primary stops accepting writes, the new one applies everything the old one has, and only then
// becomes writable. If the new one cannot catch up in time, the old one is made writable again.
func (o *Operator) switchover(ctx context.Context, op Operation) error {
	from, to := op.From, op.Primary
	if err := o.fence(ctx, from); err != nil {
		return err
	}
	st, err := o.Instances[from].Status(ctx)
	if err != nil {
		return fmt.Errorf("switchover: read old primary: %w", err)
	}
	if err := o.Instances[to].WaitForGTID(ctx, st.Executed, o.timeout()); err != nil {
		if undo := o.Instances[from].ExecSQL(ctx, o.Flavor.SetReadOnly(false)); undo != nil {
			return errors.Join(fmt.Errorf("switchover to %d: %w", to, err), fmt.Errorf("make %d writable again: %w", from, undo))
		}
		return fmt.Errorf("switchover to %d: %w; %d stays primary", to, err, from)
	}
	if err := o.configurePrimary(ctx, to, false); err != nil {
		return err
	}
	return o.configureReplicas(ctx, to, op.Targets)
}

// candidateHoldsAll checks, once every replica stopped receiving, that the candidate (status
// st) received all that the other reachable replicas did. The candidate was chosen from what
// they had received when the cluster's state was read, but a primary that only the operator
// cannot reach still serves its clients and sends them on until each replica's receiving
// stops: a replica that stopped later may hold a commit the candidate lacks, acknowledged to
// its client. Promoting the candidate then would lose it and leave that replica errant. The
// failover gives up instead, receiving stays stopped, and the next round decides on the
// replicas' final positions, which no longer move.
func (o *Operator) candidateHoldsAll(ctx context.Context, candidate int, st *mysql.Status, others []int) error {
	got := st.Executed
	if st.Replica != nil && st.Replica.Retrieved != nil {
		got = got.Union(st.Replica.Retrieved)
	}
	for _, i := range others {
		rs, err := o.Instances[i].Status(ctx)
		if err != nil || rs.Replica == nil || rs.Replica.Retrieved == nil {
			continue // unreachable now: the decision does not count it either
		}
		if missing := rs.Replica.Retrieved.Subtract(got); !missing.IsEmpty() {
			return fmt.Errorf("failover: candidate %d lacks %s that replica %d received after the decision; deciding again", candidate, missing, i)
		}
	}
	return nil
}

// failover promotes op.Primary after the old primary died: every reachable replica stops
// receiving (so a primary that is only cut off from us gets no more acknowledgements and
// cannot commit), the candidate applies everything it received, then it is promoted and the
// other reachable replicas follow it. Unreachable targets are left to later decisions.
func (o *Operator) failover(ctx context.Context, op Operation) error {
	// All at once: against a source whose packets are dropped (a cut network), each stop
	// waits out rpl_semi_sync_slave_kill_conn_timeout (1 s, the operator's my.cnf).
	var targets []int
	for _, t := range append([]int{op.Primary}, op.Targets...) {
		if t != op.From {
			targets = append(targets, t)
		}
	}
	begin := time.Now()
	stopped := make([]error, len(targets))
	var wg sync.WaitGroup
	for k, t := range targets {
		wg.Go(func() { stopped[k] = o.Instances[t].ExecSQL(ctx, o.Flavor.StopReplicaIO()) })
	}
	wg.Wait()
	var reachable []int
	for k, t := range targets {
		switch {
		case t == op.Primary && stopped[k] != nil:
			return fmt.Errorf("failover: stop receiving on candidate %d: %w", t, stopped[k])
		case t != op.Primary && stopped[k] == nil:
			reachable = append(reachable, t)
		}
	}
	stoppedAt := time.Now()
	cand := o.Instances[op.Primary]
	st, err := cand.Status(ctx)
	if err != nil {
		return fmt.Errorf("failover: read candidate %d: %w", op.Primary, err)
	}
	if err := o.candidateHoldsAll(ctx, op.Primary, st, reachable); err != nil {
		return err
	}
	// Wait for what it received: the GTID wait functions compare against the replica's
	// applied position (MariaDB) or executed set (MySQL), both of which the relay log feeds.
	if st.Replica != nil && st.Replica.Retrieved != nil && !st.Replica.Retrieved.IsEmpty() {
		if err := cand.WaitForGTID(ctx, st.Replica.Retrieved, o.timeout()); err != nil {
			return fmt.Errorf("failover: candidate %d applying what it received: %w", op.Primary, err)
		}
	}
	appliedAt := time.Now()
	if err := o.configurePrimary(ctx, op.Primary, false); err != nil {
		return err
	}
	// The stages' times tell where a slow failover spent its time.
	klog.FromContext(ctx).Info("Promoted", "candidate", op.Primary, "stopReceiving", stoppedAt.Sub(begin),
		"apply", appliedAt.Sub(stoppedAt), "promote", time.Since(appliedAt))
	return o.configureReplicas(ctx, op.Primary, reachable)
}
