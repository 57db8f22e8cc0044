package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// Per-object series. Every gauge is set from the objects' current state at each sync, so an
// operator that restarts (or a new leader) reports the same values after its first pass over
// the informers; the counters start again from zero, as Prometheus' rate() expects.
var (
	clusterPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mysqlop", Subsystem: "cluster", Name: "phase",
		Help: "1 for the MySQLCluster's current status.phase, 0 for the others.",
	}, []string{"namespace", "cluster", "phase"})
	clusterMembers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mysqlop", Subsystem: "cluster", Name: "members",
		Help: "Members the MySQLCluster's spec asks for.",
	}, []string{"namespace", "cluster"})
	clusterReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mysqlop", Subsystem: "cluster", Name: "ready_members",
		Help: "Members playing their role correctly (status.readyMembers).",
	}, []string{"namespace", "cluster"})
	clusterWritable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mysqlop", Subsystem: "cluster", Name: "writable_primary",
		Help: "1 when the MySQLCluster's primary is ready (its readiness requires it to be writable).",
	}, []string{"namespace", "cluster"})
	primaryChanges = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "mysqlop", Subsystem: "cluster", Name: "primary_changes_total",
		Help: "Primary changes the operator made, by kind (failover, switchover) and reason (primary_unreachable, requested, restart, scale_in).",
	}, []string{"namespace", "cluster", "kind", "reason"})
	clusterErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "mysqlop", Subsystem: "cluster", Name: "reconcile_errors_total",
		Help: "Reconciles of the MySQLCluster that failed and are retried.",
	}, []string{"namespace", "cluster"})
	recoverableUntil = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mysqlop", Subsystem: "cluster", Name: "recoverable_until_timestamp_seconds",
		Help: "End of the point-in-time recoverable window (the newest archived transaction), in seconds since the epoch.",
	}, []string{"namespace", "cluster"})
	backupTime = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mysqlop", Subsystem: "cluster", Name: "last_successful_backup_timestamp_seconds",
		Help: "When the newest complete backup of the MySQLCluster completed, in seconds since the epoch.",
	}, []string{"namespace", "cluster"})
	backupSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mysqlop", Subsystem: "cluster", Name: "last_successful_backup_size_bytes",
		Help: "Size of the newest complete backup of the MySQLCluster.",
	}, []string{"namespace", "cluster"})
	backupDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mysqlop", Subsystem: "cluster", Name: "last_successful_backup_duration_seconds",
		Help: "How long the newest complete backup of the MySQLCluster took.",
	}, []string{"namespace", "cluster"})
	restoreFailed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mysqlop", Subsystem: "restore", Name: "failed",
		Help: "1 while the MySQLRestore is in phase Failed.",
	}, []string{"namespace", "restore", "cluster"})
	scheduleLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mysqlop", Subsystem: "backup_schedule", Name: "last_success_timestamp_seconds",
		Help: "When the schedule's newest complete backup completed (the schedule's creation while it has none), in seconds since the epoch.",
	}, []string{"namespace", "schedule", "cluster"})
	scheduleInterval = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "mysqlop", Subsystem: "backup_schedule", Name: "interval_seconds",
		Help: "Time between the schedule's next two runs; 0 while it is suspended.",
	}, []string{"namespace", "schedule", "cluster"})
)

func init() {
	Registry.MustRegister(clusterPhase, clusterMembers, clusterReady, clusterWritable, primaryChanges, clusterErrors,
		recoverableUntil, backupTime, backupSize, backupDuration, restoreFailed, scheduleLastSuccess, scheduleInterval)
}

// phases are the values of status.phase, each a series of mysqlop_cluster_phase.
var phases = []v1alpha1.ClusterPhase{v1alpha1.ClusterPending, v1alpha1.ClusterBootstrapping, v1alpha1.ClusterHealthy,
	v1alpha1.ClusterDegraded, v1alpha1.ClusterUpgrading, v1alpha1.ClusterFailingOver, v1alpha1.ClusterLost, v1alpha1.ClusterInvalid}

// ObserveCluster records the state of a MySQLCluster whose spec asks for members and whose
// status the operator just computed.
func ObserveCluster(namespace, name string, members int32, st *v1alpha1.MySQLClusterStatus) {
	for _, p := range phases {
		clusterPhase.WithLabelValues(namespace, name, string(p)).Set(b(st.Phase == p))
	}
	clusterMembers.WithLabelValues(namespace, name).Set(float64(members))
	clusterReady.WithLabelValues(namespace, name).Set(float64(st.ReadyMembers))
	writable := false
	for _, in := range st.Instances {
		writable = writable || in.Name == st.Primary && in.Ready
	}
	clusterWritable.WithLabelValues(namespace, name).Set(b(writable))
	// The failover series exists from the start at 0, so that increase() sees the first
	// failover after the operator started (a series born at 1 shows no increase).
	primaryChanges.WithLabelValues(namespace, name, "failover", "primary_unreachable")
	if st.RecoverableUntil != nil {
		recoverableUntil.WithLabelValues(namespace, name).Set(float64(st.RecoverableUntil.Unix()))
	} else {
		recoverableUntil.DeleteLabelValues(namespace, name)
	}
	if t := st.TLS; t != nil && t.ServerNotAfter != nil {
		certificateExpiry.WithLabelValues(namespace, name).Set(float64(t.ServerNotAfter.Unix()))
	} else {
		certificateExpiry.DeleteLabelValues(namespace, name)
	}
}

// PrimaryChanged counts a primary change of kind ("failover", "switchover") for reason.
func PrimaryChanged(namespace, name, kind, reason string) {
	primaryChanges.WithLabelValues(namespace, name, kind, reason).Inc()
}

// ClusterReconcileFailed counts a failed reconcile of the MySQLCluster.
func ClusterReconcileFailed(namespace, name string) {
	clusterErrors.WithLabelValues(namespace, name).Inc()
}

// backups keeps, per cluster, the completion time of the backup the backup series describe,
// so that syncs of older backups (at start-up, in any order) never replace a newer one's.
var backups = struct {
	sync.Mutex
	newest map[[2]string]time.Time
}{newest: map[[2]string]time.Time{}}

// ObserveBackup records a complete backup of cluster namespace/name if it is the newest seen.
func ObserveBackup(namespace, cluster string, started, completed time.Time, sizeBytes int64) {
	backups.Lock()
	defer backups.Unlock()
	k := [2]string{namespace, cluster}
	if !completed.After(backups.newest[k]) {
		return
	}
	backups.newest[k] = completed
	backupTime.WithLabelValues(namespace, cluster).Set(float64(completed.Unix()))
	backupSize.WithLabelValues(namespace, cluster).Set(float64(sizeBytes))
	backupDuration.WithLabelValues(namespace, cluster).Set(completed.Sub(started).Seconds())
}

// ObserveRestore records whether the MySQLRestore namespace/name of cluster has failed.
func ObserveRestore(namespace, name, cluster string, failed bool) {
	restoreFailed.WithLabelValues(namespace, name, cluster).Set(b(failed))
}

// ForgetRestore drops the series of a deleted MySQLRestore.
func ForgetRestore(namespace, name string) {
	restoreFailed.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "restore": name})
}

// ObserveSchedule records a MySQLBackupSchedule of cluster: lastSuccess as
// ObserveSchedule's metric says, and interval (0 when suspended).
func ObserveSchedule(namespace, name, cluster string, lastSuccess time.Time, interval time.Duration) {
	scheduleLastSuccess.WithLabelValues(namespace, name, cluster).Set(float64(lastSuccess.Unix()))
	scheduleInterval.WithLabelValues(namespace, name, cluster).Set(interval.Seconds())
}

// ForgetSchedule drops the series of a deleted MySQLBackupSchedule.
func ForgetSchedule(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "schedule": name}
	scheduleLastSuccess.DeletePartialMatch(l)
	scheduleInterval.DeletePartialMatch(l)
}

// ForgetCluster drops every per-cluster series of namespace/name: the cluster is gone.
func ForgetCluster(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "cluster": name}
	for _, v := range []*prometheus.GaugeVec{clusterPhase, clusterMembers, clusterReady, clusterWritable, recoverableUntil,
		backupTime, backupSize, backupDuration, certificateExpiry} {
		v.DeletePartialMatch(l)
	}
	primaryChanges.DeletePartialMatch(l)
	clusterErrors.DeletePartialMatch(l)
	backups.Lock()
	delete(backups.newest, [2]string{namespace, name})
	backups.Unlock()
}

func b(v bool) float64 {
	if v {
		return 1
	}
	return 0
}
