package clustering_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/test/mariadb"
)

// BenchmarkGatherOnMariaDB is the cost of one clustering round's probes of a healthy
// three-member cluster (a primary and two semi-sync replicas, real servers on loopback, with
// the operator's my.cnf): wall time per round, and cpu-ms/op, this process's own CPU per round
// (user and system: the client side of every query, which is what each round of each cluster
// costs the operator; the servers' share is not in it). A runner does one round every
// --clustering-interval.
func BenchmarkGatherOnMariaDB(b *testing.B) {
	c := newClusterWith(b, 3, mariadb.Options{MyCnf: mariaDBConfig()})
	c.converge("bootstrap", 30*time.Second, healthy(0))
	createApp(b, c, 0)
	c.converge("replicas follow", 30*time.Second, healthy(0))
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	before := cpuTime()
	for b.Loop() {
		for _, in := range c.m.Gather(ctx) {
			if in.Status == nil {
				b.Fatalf("member %d: %v", in.Index, in.Err)
			}
		}
	}
	b.ReportMetric(float64(cpuTime()-before)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
