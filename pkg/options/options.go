// Package options holds the mysql-operator's command-line options, their defaults and checks.
package options

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mysqlop/mysql-operator/pkg/clustering"
	"github.com/mysqlop/mysql-operator/pkg/resources/networkpolicy"
	"github.com/mysqlop/mysql-operator/pkg/version"
)

// Options configure one operator process.
type Options struct {
	// Kubeconfig is a kubeconfig path; empty means in-cluster (or the default loading rules).
	Kubeconfig string
	// Master overrides the API server address of the kubeconfig.
	Master string
	// Namespaces to watch; empty means all.
	Namespaces []string
	// KubeAPIQPS and KubeAPIBurst limit the client's request rate; a QPS of 0 sets no
	// client-side limit and leaves the pacing to the API server's Priority and Fairness
	// (client-go waits out a 429's Retry-After and retries).
	KubeAPIQPS   float32
	KubeAPIBurst int
	// KubeAPICompression asks the API server for gzip-compressed responses, watch streams
	// included. Off by default: in a cluster the bytes are cheap and the API server's CPU is
	// not, and compressing every watch event costs it more than it saves.
	KubeAPICompression bool
	// ClusterWorkers is the number of MySQLCluster reconciles that run at once.
	ClusterWorkers int
	// UserWorkers is the number of MySQLUser reconciles that run at once.
	UserWorkers int
	// DatabaseWorkers is the number of MySQLDatabase reconciles that run at once.
	DatabaseWorkers int
	// BackupWorkers is the number of MySQLBackup reconciles that run at once.
	BackupWorkers int
	// TargetSelector is a label selector: only custom resources whose labels match are
	// handled. Empty: all.
	TargetSelector string
	// ResyncPeriod is how often every object is re-queued even without changes.
	ResyncPeriod time.Duration
	// Clustering runs the clustering manager (replication, roles, failover) for every cluster.
	Clustering bool
	// ClusteringInterval is the time between clustering rounds of one cluster.
	ClusteringInterval time.Duration
	// FailoverAfter is how long a primary must fail every probe before it is failed over.
	FailoverAfter time.Duration

	// MySQLImage and MariaDBImage are the default server image repositories (no tag).
	MySQLImage   string
	MariaDBImage string
	// AgentImage is the agent image, tagged with the operator version by default.
	AgentImage string

	// LeaderElect turns on leader election through a Lease.
	LeaderElect bool
	// LeaderElectNamespace and LeaderElectID name the Lease.
	LeaderElectNamespace string
	LeaderElectID        string
	// LeaderElectIdentity is this process's holder identity; default the pod's name
	// (POD_NAME), else the host name plus a random suffix.
	LeaderElectIdentity string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration

	// NetworkPolicyOperatorLabels, when set, makes the operator give every cluster a
	// NetworkPolicy whose agent port answers only the cluster's members and the operator's pods:
	// those with these labels (a selector of k=v pairs) in OperatorNamespace.
	NetworkPolicyOperatorLabels string
	// OperatorNamespace is the operator's namespace (default $POD_NAMESPACE).
	OperatorNamespace string
	// NetworkPolicyMetricsFrom is a label selector of the namespaces that may scrape the
	// members' metrics port under those policies; empty: any.
	NetworkPolicyMetricsFrom string

	// MetricsAddr serves /metrics; HealthAddr serves /healthz and /readyz. "0" disables.
	MetricsAddr string
	HealthAddr  string
	// Profiling adds Go's /debug/pprof handlers to the metrics endpoint.
	Profiling bool

	// ShowVersion prints the version and exits.
	ShowVersion bool

	// OperatorVersion is the build version stamped on clusters and their children. It is the
	// linker-stamped version.Version and has no flag; tests set it to act as another build.
	OperatorVersion string
	// MemberAddress, when set, replaces the member DNS names the operator dials (no flag; tests
	// point members at local servers).
	MemberAddress func(namespace, cluster, pod string) (host string, port int)
	// AgentAddress, when set, replaces the member DNS names and port of the agents' API the
	// operator calls (no flag; tests run agents on loopback).
	AgentAddress func(namespace, cluster, pod string) (host string, port int)
}

// DefaultAgentImageRepository is the agent image repository; the tag is the operator version.
const DefaultAgentImageRepository = "docker.io/mysqlop/mysql-agent"

// New returns Options with their defaults.
func New() *Options {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "default"
	}
	return &Options{
		KubeAPIQPS:           0,
		KubeAPIBurst:         40,
		ClusterWorkers:       4,
		UserWorkers:          2,
		DatabaseWorkers:      2,
		BackupWorkers:        2,
		ResyncPeriod:         10 * time.Minute,
		Clustering:           true,
		ClusteringInterval:   500 * time.Millisecond,
		FailoverAfter:        clustering.DefaultFailoverAfter,
		MySQLImage:           "docker.io/library/mysql",
		MariaDBImage:         "docker.io/library/mariadb",
		AgentImage:           DefaultAgentImageRepository + ":" + version.Version,
		LeaderElect:          true,
		LeaderElectNamespace: ns,
		OperatorNamespace:    ns,
		LeaderElectID:        "mysql-operator",
		LeaseDuration:        15 * time.Second,
		RenewDeadline:        10 * time.Second,
		RetryPeriod:          2 * time.Second,
		MetricsAddr:          ":8080",
		HealthAddr:           ":8081",
		OperatorVersion:      version.Version,
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig. Empty: in-cluster configuration.")
	fs.StringVar(&o.Master, "master", o.Master, "Address of the Kubernetes API server; overrides the kubeconfig.")
	fs.StringArrayVar(&o.Namespaces, "namespace", o.Namespaces, "Namespace to watch; repeat for several. Empty: all namespaces.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Sustained requests per second to the API server; 0: no client-side limit (the API server's Priority and Fairness paces the operator).")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of requests to the API server, with a positive --kube-api-qps.")
	fs.BoolVar(&o.KubeAPICompression, "kube-api-compression", o.KubeAPICompression, "Ask the API server for gzip-compressed responses and watch streams: less network, more CPU on both ends. For an operator far from its API server.")
	fs.IntVar(&o.ClusterWorkers, "cluster-workers", o.ClusterWorkers, "MySQLClusters reconciled at once.")
	fs.IntVar(&o.UserWorkers, "user-workers", o.UserWorkers, "MySQLUsers reconciled at once.")
	fs.IntVar(&o.DatabaseWorkers, "database-workers", o.DatabaseWorkers, "MySQLDatabases reconciled at once.")
	fs.IntVar(&o.BackupWorkers, "backup-workers", o.BackupWorkers, "MySQLBackups reconciled at once.")
	fs.StringVar(&o.TargetSelector, "target-selector", o.TargetSelector, "Label selector: handle only custom resources (of every kind) whose labels match. Empty: all. Operators with disjoint selectors split the work.")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", o.ResyncPeriod, "How often every object is reconciled even without changes.")
	fs.BoolVar(&o.Clustering, "clustering", o.Clustering, "Manage replication, roles and failover of every cluster. Turn off only where pods run no MySQL (kwok).")
	fs.DurationVar(&o.ClusteringInterval, "clustering-interval", o.ClusteringInterval, "Time between clustering rounds of one cluster: a dead primary is seen within it.")
	fs.DurationVar(&o.FailoverAfter, "failover-after", o.FailoverAfter, "How long the primary must fail every probe (at least two) before it is failed over; a server that restarts in place within it keeps its role.")
	fs.StringVar(&o.MySQLImage, "mysql-image", o.MySQLImage, "Default image repository (no tag) for flavor mysql.")
	fs.StringVar(&o.MariaDBImage, "mariadb-image", o.MariaDBImage, "Default image repository (no tag) for flavor mariadb.")
	fs.StringVar(&o.AgentImage, "agent-image", o.AgentImage, "Agent image run beside every server.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader through a Lease so that only one instance reconciles.")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-namespace", o.LeaderElectNamespace, "Namespace of the leader election Lease.")
	fs.StringVar(&o.LeaderElectID, "leader-elect-id", o.LeaderElectID, "Name of the leader election Lease.")
	fs.StringVar(&o.LeaderElectIdentity, "leader-elect-identity", o.LeaderElectIdentity, "Holder identity of this instance. Empty: hostname and a random suffix.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a lease is valid without renewal.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader retries renewing before it gives up.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "Interval between leader election attempts.")
	fs.StringVar(&o.NetworkPolicyOperatorLabels, "network-policy-operator-labels", o.NetworkPolicyOperatorLabels, "Labels (k=v,...) of the operator's pods. Set: every cluster gets a NetworkPolicy whose agent port answers only its members and these pods in --operator-namespace. Empty: no NetworkPolicies.")
	fs.StringVar(&o.OperatorNamespace, "operator-namespace", o.OperatorNamespace, "The operator's namespace (default $POD_NAMESPACE), for the NetworkPolicies.")
	fs.StringVar(&o.NetworkPolicyMetricsFrom, "network-policy-metrics-from", o.NetworkPolicyMetricsFrom, "Label selector of the namespaces that may scrape the members' metrics under the NetworkPolicies. Empty: any.")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "Address of the /metrics endpoint; 0 disables it.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go's /debug/pprof profiles on the metrics address.")
	fs.StringVar(&o.HealthAddr, "health-addr", o.HealthAddr, "Address of the /healthz and /readyz endpoints; 0 disables them.")
	fs.BoolVar(&o.ShowVersion, "version", o.ShowVersion, "Print the version and exit.")
}

// Validate reports every option that cannot work.
func (o *Options) Validate() error {
	var errs []error
	if o.KubeAPIQPS < 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be 0 (no client-side limit) or positive, got %v", o.KubeAPIQPS))
	}
	if o.KubeAPIBurst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must be at least 1, got %d", o.KubeAPIBurst))
	}
	for _, w := range []struct {
		flag string
		n    int
	}{{"--cluster-workers", o.ClusterWorkers}, {"--user-workers", o.UserWorkers}, {"--database-workers", o.DatabaseWorkers}, {"--backup-workers", o.BackupWorkers}} {
		if w.n < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", w.flag, w.n))
		}
	}
	if _, err := labels.Parse(o.TargetSelector); err != nil {
		errs = append(errs, fmt.Errorf("--target-selector: %w", err))
	}
	if _, err := o.NetworkPolicy(); err != nil {
		errs = append(errs, err)
	}
	if o.Clustering && o.ClusteringInterval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--clustering-interval must be at least 100ms, got %v", o.ClusteringInterval))
	}
	if o.Clustering && o.FailoverAfter < o.ClusteringInterval {
		errs = append(errs, fmt.Errorf("--failover-after must be at least --clustering-interval (%v), got %v", o.ClusteringInterval, o.FailoverAfter))
	}
	if o.ResyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("--resync-period must not be negative, got %v", o.ResyncPeriod))
	}
	for name, v := range map[string]string{"--mysql-image": o.MySQLImage, "--mariadb-image": o.MariaDBImage, "--agent-image": o.AgentImage} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s must not be empty", name))
		}
	}
	if o.LeaderElect {
		if o.LeaderElectNamespace == "" || o.LeaderElectID == "" {
			errs = append(errs, errors.New("--leader-elect-namespace and --leader-elect-id must be set with --leader-elect"))
		}
		if o.RenewDeadline >= o.LeaseDuration || o.RetryPeriod >= o.RenewDeadline {
			errs = append(errs, errors.New("leader election needs retry-period < renew-deadline < lease-duration"))
		}
	}
	return errors.Join(errs...)
}

// NetworkPolicy returns where the operator runs for the clusters' NetworkPolicies, or nil when
// --network-policy-operator-labels is empty (no NetworkPolicies).
func (o *Options) NetworkPolicy() (*networkpolicy.Operator, error) {
	if o.NetworkPolicyOperatorLabels == "" {
		return nil, nil
	}
	podLabels, err := labels.ConvertSelectorToLabelsMap(o.NetworkPolicyOperatorLabels)
	if err != nil {
		return nil, fmt.Errorf("--network-policy-operator-labels must be k=v pairs: %w", err)
	}
	if o.OperatorNamespace == "" {
		return nil, errors.New("--operator-namespace must be set with --network-policy-operator-labels")
	}
	op := &networkpolicy.Operator{Namespace: o.OperatorNamespace, PodLabels: podLabels}
	if o.NetworkPolicyMetricsFrom != "" {
		sel, err := metav1.ParseToLabelSelector(o.NetworkPolicyMetricsFrom)
		if err != nil {
			return nil, fmt.Errorf("--network-policy-metrics-from: %w", err)
		}
		op.MetricsFrom = sel
	}
	return op, nil
}

// RESTConfig builds the client configuration from --kubeconfig and --master, or in-cluster.
func (o *Options) RESTConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.Kubeconfig == "" && o.Master == "" {
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
		}
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags(o.Master, o.Kubeconfig)
	}
	if err != nil {
		return nil, fmt.Errorf("build client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	if o.KubeAPIQPS == 0 {
		// client-go reads a QPS of 0 as "its default, 5"; a negative one as "no limiter".
		cfg.QPS = -1
	}
	cfg.DisableCompression = !o.KubeAPICompression
	cfg.UserAgent = "mysql-operator/" + version.Version
	return cfg, nil
}
