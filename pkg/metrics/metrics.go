// Package metrics holds the operator's Prometheus metrics and the registry they are served from.
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"
)

// Registry is the registry every operator metric is registered with.
var Registry = prometheus.NewRegistry()

var (
	reconcileTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "mysqlop", Name: "reconcile_total",
		Help: "Reconciles by controller and result (success, error).",
	}, []string{"controller", "result"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "mysqlop", Name: "reconcile_duration_seconds",
		Help:    "Time spent in one reconcile, by controller.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"controller"})
)

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		reconcileTotal, reconcileDuration, apiRequests, certificateExpiry,
	)
	workqueue.SetProvider(queueMetrics{})
	clientmetrics.Register(clientmetrics.RegisterOpts{RequestResult: requestResult{}})
}

// apiRequests counts the operator's requests to the API server, by verb and status code.
var apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "mysqlop", Name: "api_requests_total",
	Help: "Requests to the Kubernetes API server by method and HTTP status code.",
}, []string{"method", "code"})

type requestResult struct{}

func (requestResult) Increment(_ context.Context, code, method, _ string) {
	apiRequests.WithLabelValues(method, code).Inc()
}

// ObserveReconcile records one reconcile of controller that took d and ended with err.
func ObserveReconcile(controller string, d time.Duration, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	reconcileTotal.WithLabelValues(controller, result).Inc()
	reconcileDuration.WithLabelValues(controller).Observe(d.Seconds())
}

// certificateExpiry is when each cluster's servers' certificate expires: an alert compares it
// with time() (docs/tls.md).
var certificateExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: "mysqlop", Subsystem: "cluster", Name: "tls_certificate_expiry_timestamp_seconds",
	Help: "When the servers' TLS certificate of a MySQLCluster expires, in seconds since the epoch.",
}, []string{"namespace", "cluster"})

// Handler serves the registry in the Prometheus text format.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{Registry: Registry})
}

// queueMetrics exposes client-go workqueue metrics (depth, adds, latency, retries) per queue name.
type queueMetrics struct{}

var (
	queueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "mysqlop", Subsystem: "workqueue",
		Name: "depth", Help: "Current depth of the workqueue."}, []string{"name"})
	queueAdds = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mysqlop", Subsystem: "workqueue",
		Name: "adds_total", Help: "Items added to the workqueue."}, []string{"name"})
	queueLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "mysqlop", Subsystem: "workqueue",
		Name: "queue_duration_seconds", Help: "Time an item waits in the workqueue.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"name"})
	queueWork = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "mysqlop", Subsystem: "workqueue",
		Name: "work_duration_seconds", Help: "Time spent processing an item.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"name"})
	queueUnfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "mysqlop", Subsystem: "workqueue",
		Name: "unfinished_work_seconds", Help: "Seconds of work in progress."}, []string{"name"})
	queueLongest = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "mysqlop", Subsystem: "workqueue",
		Name: "longest_running_processor_seconds", Help: "Longest running processor."}, []string{"name"})
	queueRetries = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "mysqlop", Subsystem: "workqueue",
		Name: "retries_total", Help: "Rate-limited re-adds."}, []string{"name"})
)

func init() {
	Registry.MustRegister(queueDepth, queueAdds, queueLatency, queueWork, queueUnfinished, queueLongest, queueRetries)
}

func (queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return queueDepth.WithLabelValues(name)
}
func (queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return queueAdds.WithLabelValues(name)
}
func (queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return queueLatency.WithLabelValues(name)
}
func (queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return queueWork.WithLabelValues(name)
}
func (queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return queueUnfinished.WithLabelValues(name)
}
func (queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return queueLongest.WithLabelValues(name)
}
func (queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return queueRetries.WithLabelValues(name)
}
