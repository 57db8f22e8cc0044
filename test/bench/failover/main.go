// Command failover measures failover on real MariaDB servers. Each run starts three fresh
// servers, lets pkg/clustering bootstrap them into a semi-sync primary and two replicas,
// starts a writer that commits continuously through an application account, SIGKILLs the
// primary, and keeps stepping the clustering manager at the given interval. It reports the time
// from the SIGKILL to the first write acknowledged by the new primary (p50, p99, max over the
// runs) and the acknowledged writes missing on the new primary (which must be 0).
//
// With -tls the servers serve TLS, replicate over it and the clustering manager and the writer
// connect over it, each verifying the server, as in a cluster with spec.tls on.
//
// The manager fails over once the primary failed every probe for -failover-after (the
// operator's --failover-after; 1 s by default).
//
// Usage: go run ./test/bench/failover -runs 20 -interval 500ms [-failover-after 1s] [-tls]   (or make bench-failover)
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/clustering"
	"github.com/mysqlop/mysql-operator/test/bench/benchutil"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

func main() {
	runs := flag.Int("runs", 20, "failovers to measure")
	interval := flag.Duration("interval", 500*time.Millisecond, "time between clustering rounds")
	window := flag.Duration("failover-after", clustering.DefaultFailoverAfter, "how long the primary must fail every probe before it is failed over")
	withTLS := flag.Bool("tls", false, "serve, replicate and connect (the operator and the writer) over TLS that verifies the servers")
	flag.Parse()

	var times []time.Duration
	lostTotal, ackedTotal := 0, 0
	for i := range *runs {
		took, acked, lost, err := runOnce(*interval, *window, *withTLS)
		if err != nil {
			fmt.Fprintf(os.Stderr, "run %d: %v\n", i+1, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "run %2d: first acknowledged write on the new primary %v after SIGKILL; %d acknowledged, %d lost\n",
			i+1, took.Round(time.Millisecond), acked, lost)
		times = append(times, took)
		lostTotal += lost
		ackedTotal += acked
	}
	slices.Sort(times)
	pct := func(p float64) time.Duration { return times[min(len(times)-1, int(p*float64(len(times))))] }
	fmt.Printf("\n| runs | TLS | round interval | failover after | p50 | p99 | max | acknowledged writes | lost |\n|---|---|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %d | %v | %v | failed probes for %v | %v | %v | %v | %d | %d |\n", len(times), *withTLS, *interval, *window,
		pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond), ackedTotal, lostTotal)
	if lostTotal > 0 {
		os.Exit(1)
	}
}

func runOnce(interval, window time.Duration, withTLS bool) (took time.Duration, acked, lost int, err error) {
	err = benchutil.Run(func(t *benchutil.T) error {
		var err error
		took, acked, lost, err = measure(t, interval, window, withTLS)
		return err
	})
	return took, acked, lost, err
}

func measure(t *benchutil.T, interval, window time.Duration, withTLS bool) (took time.Duration, acked, lost int, err error) {
	ctx := context.Background()
	var o mariadb.Options
	if withTLS {
		o.TLS = mariadb.NewTLSFiles(t)
	}
	servers := mariadb.Start(t, 3, o)
	op := mariadb.Operator(servers)
	m := clustering.NewManager(op, 3)
	m.ProbeTimeout, m.FailoverAfter = time.Second, window

	step := func(until func(clustering.Decision) bool, limit time.Duration) error {
		deadline := time.Now().Add(limit)
		for {
			d, err := m.Step(ctx)
			if err == nil && d.Op.Kind == clustering.OpNone && until(d) {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("not within %v: %s %q", limit, d.State, d.Reason)
			}
			time.Sleep(interval)
		}
	}
	if err := step(func(d clustering.Decision) bool { return d.State == clustering.Healthy }, 30*time.Second); err != nil {
		return 0, 0, 0, fmt.Errorf("bootstrap: %w", err)
	}
	old := m.Primary()
	if err := mariadb.CreateApp(ctx, servers[old].Admin().DB); err != nil {
		return 0, 0, 0, err
	}
	w, err := mariadb.StartWriter(servers, m.Primary)
	if err != nil {
		return 0, 0, 0, err
	}
	for w.Acked() < 50 {
		time.Sleep(5 * time.Millisecond)
	}
	killed := time.Now()
	servers[old].Kill()
	if err := step(func(d clustering.Decision) bool { return d.Primary != old && d.Primary >= 0 && d.Ready[d.Primary] }, 60*time.Second); err != nil {
		w.Stop()
		return 0, 0, 0, fmt.Errorf("failover: %w", err)
	}
	np := m.Primary()
	for w.FirstAckOn(np).IsZero() && time.Since(killed) < 30*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	ids := w.Stop()
	first := w.FirstAckOn(np)
	if first.IsZero() {
		return 0, 0, 0, fmt.Errorf("no write acknowledged by the new primary %d", np)
	}
	missing, err := mariadb.Lost(ctx, servers[np].Admin().DB, ids)
	if err != nil {
		return 0, 0, 0, err
	}
	return first.Sub(killed), len(ids), len(missing), nil
}
