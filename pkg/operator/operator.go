// Package operator wires one operator process: clients, the shared informer factories, every
// controller, leader election, and the health and metrics endpoints. cmd/mysql-operator calls
// Run; the integration suite calls it too, so tests exercise the same wiring as production.
package operator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/backup"
	"github.com/mysqlop/mysql-operator/pkg/controllers/backupschedule"
	"github.com/mysqlop/mysql-operator/pkg/controllers/cluster"
	"github.com/mysqlop/mysql-operator/pkg/controllers/database"
	"github.com/mysqlop/mysql-operator/pkg/controllers/restore"
	"github.com/mysqlop/mysql-operator/pkg/controllers/user"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	mysqlscheme "github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned/scheme"
	"github.com/mysqlop/mysql-operator/pkg/httpserver"
	"github.com/mysqlop/mysql-operator/pkg/informerset"
	"github.com/mysqlop/mysql-operator/pkg/metrics"
	"github.com/mysqlop/mysql-operator/pkg/options"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/version"
)

func init() {
	// Events about MySQLClusters need the kinds in the scheme the recorder uses.
	utilruntime.Must(mysqlscheme.AddToScheme(scheme.Scheme))
}

// Run runs the operator until ctx is done. With leader election it campaigns first and returns
// an error when it loses the lease, so the process exits and a fresh one campaigns again.
func Run(ctx context.Context, o *options.Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	cfg, err := o.RESTConfig()
	if err != nil {
		return err
	}
	return RunWithConfig(ctx, o, cfg)
}

// RunWithConfig is Run with a ready client configuration.
func RunWithConfig(ctx context.Context, o *options.Options, cfg *rest.Config) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting mysql-operator", "version", version.Version, "commit", version.GitCommit, "namespaces", o.Namespaces)

	kube, err := kubernetes.NewForConfig(protobuf(cfg))
	if err != nil {
		return fmt.Errorf("build kubernetes client: %w", err)
	}
	mysql, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build mysqlop client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build dynamic client: %w", err)
	}

	var ready atomic.Bool
	if err := serve(ctx, o.HealthAddr, healthMux(&ready)); err != nil {
		return err
	}
	if err := serve(ctx, o.MetricsAddr, metricsMux(o.Profiling)); err != nil {
		return err
	}

	if !o.LeaderElect {
		return runControllers(ctx, o, kube, mysql, dyn, &ready)
	}
	identity := o.LeaderElectIdentity
	if identity == "" {
		identity, err = defaultIdentity()
		if err != nil {
			return err
		}
	}
	// A standby is healthy and ready: it only waits for the lease.
	ready.Store(true)
	started := make(chan struct{})
	done := make(chan error, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: o.LeaderElectNamespace, Name: o.LeaderElectID},
			Client:     kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            o.LeaderElectID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Became the leader", "identity", identity)
				ready.Store(false)
				close(started)
				done <- runControllers(ctx, o, kube, mysql, dyn, &ready)
			},
			OnStoppedLeading: func() { logger.Info("Stopped leading", "identity", identity) },
			OnNewLeader: func(id string) {
				if id != identity {
					logger.Info("Another instance leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("set up leader election: %w", err)
	}
	le.Run(ctx)
	var runErr error
	select {
	case <-started:
		// Leadership ends by cancelling the controllers' context: wait for them to stop.
		runErr = <-done
	default:
	}
	if ctx.Err() == nil {
		return errors.Join(errors.New("lost the leader election lease"), runErr)
	}
	return runErr
}

// runControllers builds the informer factories and every controller, starts the factories
// once all controllers registered their informers, and runs the controllers until ctx is done.
func runControllers(ctx context.Context, o *options.Options, kube kubernetes.Interface, mysql versioned.Interface, dyn dynamic.Interface, ready *atomic.Bool) error {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(4)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "mysql-operator"})

	set := informerset.New(kube, mysql, o.Namespaces, o.ResyncPeriod, v1alpha1.LabelManagedBy+"="+v1alpha1.ManagedBy, o.TargetSelector)
	runs, err := newControllers(o, kube, mysql, dyn, set, recorder)
	if err != nil {
		return err
	}

	set.Start(ctx.Done())
	defer set.Shutdown()
	if err := set.WaitForCacheSync(ctx.Done()); err != nil {
		return err
	}
	ready.Store(true)

	// Every controller runs until ctx is done; the first to fail stops the others.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(runs))
	for _, run := range runs {
		go func() { errc <- run(ctx) }()
	}
	var errs []error
	for range runs {
		if err := <-errc; err != nil {
			errs = append(errs, err)
			cancel()
		}
	}
	return errors.Join(errs...)
}

// newControllers builds every controller on set and returns their runs (each until its context
// is done). They share set's informers and the indexes they add to them: all of it must be
// registered before set starts.
func newControllers(o *options.Options, kube kubernetes.Interface, mysql versioned.Interface, dyn dynamic.Interface, set *informerset.Set,
	recorder record.EventRecorder) ([]func(context.Context) error, error) {
	netpol, err := o.NetworkPolicy()
	if err != nil {
		return nil, err
	}
	cfg := cluster.Config{
		Images:             cluster.Images{MySQL: o.MySQLImage, MariaDB: o.MariaDBImage, Agent: o.AgentImage},
		OperatorVersion:    o.OperatorVersion,
		Clustering:         o.Clustering,
		ClusteringInterval: o.ClusteringInterval,
		FailoverAfter:      o.FailoverAfter,
		NetworkPolicy:      netpol,
		Dynamic:            dyn,
	}
	cfg.Resolve = resolver(o.MemberAddress)
	agentAddress := resolver(o.AgentAddress)
	cfg.AgentResolve = agentAddress
	clusters, err := cluster.New(kube, mysql, set, recorder, cfg)
	if err != nil {
		return nil, fmt.Errorf("set up cluster controller: %w", err)
	}
	users, err := user.New(kube, mysql, set, recorder, cfg.Resolve)
	if err != nil {
		return nil, fmt.Errorf("set up user controller: %w", err)
	}
	databases, err := database.New(mysql, set, recorder, cfg.Resolve)
	if err != nil {
		return nil, fmt.Errorf("set up database controller: %w", err)
	}
	backups, err := backup.New(kube, mysql, set, recorder, agentAddress)
	if err != nil {
		return nil, fmt.Errorf("set up backup controller: %w", err)
	}
	schedules, err := backupschedule.New(mysql, set, recorder)
	if err != nil {
		return nil, fmt.Errorf("set up backup schedule controller: %w", err)
	}
	restores, err := restore.New(kube, mysql, set, recorder, agentAddress)
	if err != nil {
		return nil, fmt.Errorf("set up restore controller: %w", err)
	}
	return []func(context.Context) error{
		func(ctx context.Context) error { return clusters.Run(ctx, o.ClusterWorkers) },
		func(ctx context.Context) error { return users.Run(ctx, o.UserWorkers) },
		func(ctx context.Context) error { return databases.Run(ctx, o.DatabaseWorkers) },
		func(ctx context.Context) error { return backups.Run(ctx, o.BackupWorkers) },
		func(ctx context.Context) error { return schedules.Run(ctx, 1) },
		func(ctx context.Context) error { return restores.Run(ctx, 1) },
	}, nil
}

// protobuf returns a copy of cfg that speaks protobuf, for built-in kinds only (custom resources
// are served as JSON). Decoding lists and watch events of Pods, StatefulSets and Secrets from
// protobuf costs a fraction of the CPU and garbage of JSON, which is most of what an operator
// with many clusters spends at start-up and while they are created.
func protobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c.ContentType = runtime.ContentTypeProtobuf
	return c
}

// resolver adapts an address hook of the options to a resources.Resolver; nil stays nil, so
// that each controller uses its DNS default.
func resolver(f func(namespace, cluster, pod string) (string, int)) resources.Resolver {
	if f == nil {
		return nil
	}
	return func(c *v1alpha1.MySQLCluster, pod string) (string, int) { return f(c.Namespace, c.Name, pod) }
}

func healthMux(ready *atomic.Bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "informer caches are not synced yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}

func metricsMux(profiling bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler())
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// serve listens on addr ("0" or empty: disabled) and serves h until ctx is done.
func serve(ctx context.Context, addr string, h http.Handler) error {
	if addr == "" || addr == "0" {
		return nil
	}
	ln, err := httpserver.Listen(addr, httpserver.MaxConnections)
	if err != nil {
		return err
	}
	srv := httpserver.New(h)
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "HTTP server stopped", "addr", addr)
		}
	}()
	return nil
}

// defaultIdentity is the pod's name in a pod (POD_NAME, from the downward API): pod names are
// unique, and a container restarted in the same pod (its old process is gone) then takes its
// own lease back at once instead of leaving the cluster without an operator until it
// expires (15 s, seen in the middle of a failover). Elsewhere, two processes may share a
// host name: the host name plus a random suffix.
func defaultIdentity() (string, error) {
	if pod := os.Getenv("POD_NAME"); pod != "" {
		return pod, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("leader election identity: %w", err)
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("leader election identity: %w", err)
	}
	return host + "_" + hex.EncodeToString(b), nil
}
