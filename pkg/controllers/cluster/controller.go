// Package cluster is the MySQLCluster controller. It turns a MySQLCluster into its children
// (credentials Secret, my.cnf ConfigMap, three Services, PodDisruptionBudget, StatefulSet),
// keeps them in step with the spec, restarts members one at a time when the pod template
// changes, moves running pods to a new agent image in place, and writes the cluster's status.
//
// The controller runs on the shared runtime (pkg/controllers/internal/ctrl): a rate-limited
// queue of cluster keys, Forget on success, AddRateLimited on error, and nil (no retry) for
// objects that are gone and for permanent user errors, which get a condition and an event. Reads come
// from informer caches and are never modified in place; decisions are pure functions in
// decide.go.
package cluster

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/clustering"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/agents"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ctrl"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/objects"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/ownwrites"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned"
	mysqlinformers "github.com/mysqlop/mysql-operator/pkg/generated/informers/externalversions"
	listers "github.com/mysqlop/mysql-operator/pkg/generated/listers/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/informerset"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/networkpolicy"
)

// Name is the controller's name in logs, metrics and its workqueue.
const Name = "cluster"

// Images are the default images the operator deploys.
type Images struct {
	// MySQL is the server image repository (no tag) for flavor mysql.
	MySQL string
	// MariaDB is the server image repository (no tag) for flavor mariadb.
	MariaDB string
	// Agent is the full agent image reference; its tag is normally the operator version.
	Agent string
}

// Config configures the controller.
type Config struct {
	// Images are the default images.
	Images Images
	// OperatorVersion is the operator build version, as stamped into status and labels.
	OperatorVersion string
	// Clustering runs a clustering manager per cluster (replication, roles, failover). Off
	// only where pods run no MySQL (kwok).
	Clustering bool
	// ClusteringInterval is the time between clustering rounds of one cluster.
	ClusteringInterval time.Duration
	// FailoverAfter is how long a primary must fail every probe before it is failed over;
	// default clustering.DefaultFailoverAfter.
	FailoverAfter time.Duration
	// Resolve maps a member pod to the address the operator dials; default resources.DNSResolver.
	Resolve resources.Resolver
	// AgentResolve maps a member pod to its agent's address; nil means agents.DNSResolver
	// (agents.TLSDialer's default).
	AgentResolve resources.Resolver
	// NetworkPolicy, when set, gives every cluster a NetworkPolicy (pkg/resources/networkpolicy)
	// letting only these operator pods and the cluster's members reach the agents.
	NetworkPolicy *networkpolicy.Operator
	// Dynamic creates cert-manager Certificates (spec.tls.certManager); nil refuses that mode.
	Dynamic dynamic.Interface
}

// Controller reconciles MySQLClusters.
type Controller struct {
	kube  kubernetes.Interface
	mysql versioned.Interface

	clusters     listers.MySQLClusterLister
	restores     listers.MySQLRestoreLister
	statefulSets appslisters.StatefulSetLister
	services     corelisters.ServiceLister
	configMaps   corelisters.ConfigMapLister
	secrets      corelisters.SecretLister
	pdbs         policylisters.PodDisruptionBudgetLister
	// netpols is nil unless cfg.NetworkPolicy is set (no watch, and no RBAC, needed then).
	netpols networkinglisters.NetworkPolicyLister
	pods    corelisters.PodLister
	// podIndex holds the pods by cluster (podsByCluster).
	podIndex cache.Indexer
	// backupIndex holds the MySQLBackups by cluster (ctrl.BackupsByCluster).
	backupIndex cache.Indexer

	loop     *ctrl.Loop
	recorder record.EventRecorder
	cfg      Config
	// rand is the source of generated passwords: crypto/rand outside tests.
	rand io.Reader
	// now is the clock certificates are issued and renewed by: time.Now outside tests.
	now func() time.Time
	// dial makes clients of the members' agents.
	dial agents.Dialer
	// clusterings drive each cluster's clustering manager.
	clusterings clusterings
	// written holds the clusters and children this controller wrote until its caches show
	// them (a burst of new clusters outruns the watch).
	written *ownwrites.Tracker
	// statusWrites holds when each cluster's status was last written (cache.ObjectName to
	// time.Time), to coalesce the writes of members coming up.
	statusWrites sync.Map
	// heldChanges holds, per new cluster (cache.ObjectName to []string), the children its
	// first reconcile created: they are named in the Created event of the next reconcile,
	// which creates the rest, so a new cluster costs one event, not two (an operator that
	// restarts in between loses them: events are best effort, the objects are there).
	heldChanges sync.Map
}

// New registers the controller's informers with set and returns the controller. Call it for
// every controller before set.Start.
func New(kube kubernetes.Interface, mysql versioned.Interface, set *informerset.Set, recorder record.EventRecorder, cfg Config) (*Controller, error) {
	clusterInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLClusters().Informer()
	})
	// A running restore stops its cluster's writes; its steps change what clustering may do.
	restoreInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLRestores().Informer()
	})
	// Completed backups bound the recoverable window (status.recoverableFrom).
	backupInf := set.MySQL(func(f mysqlinformers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Mysqlop().V1alpha1().MySQLBackups().Informer()
	})
	kinds := map[string]informerset.Informers{
		"statefulsets": set.Kube(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Apps().V1().StatefulSets().Informer()
		}),
		"services": set.Kube(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().Services().Informer()
		}),
		"configmaps": set.Kube(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().ConfigMaps().Informer()
		}),
		"secrets": set.Kube(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().Secrets().Informer()
		}),
		"pdbs": set.Kube(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Policy().V1().PodDisruptionBudgets().Informer()
		}),
		"pods": set.Kube(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().Pods().Informer()
		}),
	}
	if cfg.NetworkPolicy != nil {
		kinds["networkpolicies"] = set.Kube(func(f kubeinformers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Networking().V1().NetworkPolicies().Informer()
		})
	}
	// A sync reads its cluster's pods through an index: a selector over the namespace's pods
	// looked at every pod of every cluster there, for each sync of each of them.
	err := ctrl.AddIndex(kinds["pods"], podsByCluster, func(obj any) (string, string) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Labels[v1alpha1.LabelName] != v1alpha1.AppName {
			return "", ""
		}
		return p.Namespace, p.Labels[v1alpha1.LabelCluster]
	})
	if err != nil {
		return nil, err
	}
	// The recoverable window reads the cluster's backups on every sync and archive check of a
	// cluster with a binlog archive: through an index, not a scan of the namespace's backups.
	if err := ctrl.IndexBackupsByCluster(backupInf); err != nil {
		return nil, err
	}
	if cfg.Resolve == nil {
		cfg.Resolve = resources.DNSResolver
	}
	if cfg.ClusteringInterval <= 0 {
		cfg.ClusteringInterval = 500 * time.Millisecond
	}
	if cfg.FailoverAfter <= 0 {
		cfg.FailoverAfter = clustering.DefaultFailoverAfter
	}
	c := &Controller{
		kube:         kube,
		mysql:        mysql,
		clusters:     listers.NewMySQLClusterLister(clusterInf.Indexer()),
		restores:     listers.NewMySQLRestoreLister(restoreInf.Indexer()),
		backupIndex:  backupInf.Indexer(),
		statefulSets: appslisters.NewStatefulSetLister(kinds["statefulsets"].Indexer()),
		services:     corelisters.NewServiceLister(kinds["services"].Indexer()),
		configMaps:   corelisters.NewConfigMapLister(kinds["configmaps"].Indexer()),
		secrets:      corelisters.NewSecretLister(kinds["secrets"].Indexer()),
		pdbs:         policylisters.NewPodDisruptionBudgetLister(kinds["pdbs"].Indexer()),
		pods:         corelisters.NewPodLister(kinds["pods"].Indexer()),
		podIndex:     kinds["pods"].Indexer(),
		recorder:     recorder,
		cfg:          cfg,
		rand:         rand.Reader,
		now:          time.Now,
		written:      ownwrites.New(time.Minute),
	}
	c.clusterings = &runners{c: c}
	c.dial = agents.TLSDialer(c.secrets, cfg.AgentResolve)
	c.loop = ctrl.New(Name, "mysqlcluster", c.Sync)
	c.loop.WaitFor(clusterInf.HasSynced, restoreInf.HasSynced, backupInf.HasSynced)
	if inf, ok := kinds["networkpolicies"]; ok {
		c.netpols = networkinglisters.NewNetworkPolicyLister(inf.Indexer())
	}
	if err := clusterInf.AddEventHandler(c.written.Handler()); err != nil {
		return nil, fmt.Errorf("watch clusters: %w", err)
	}
	if err := clusterInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.loop.Enqueue,
		UpdateFunc: func(_, obj any) { c.loop.Enqueue(obj) },
		DeleteFunc: c.loop.Enqueue,
	}); err != nil {
		return nil, fmt.Errorf("watch clusters: %w", err)
	}
	enqueueRestoreCluster := func(obj any) {
		if r, ok := objects.FromEvent[*v1alpha1.MySQLRestore](obj); ok {
			c.loop.Add(cache.ObjectName{Namespace: r.Namespace, Name: r.Spec.ClusterRef.Name})
		}
	}
	if err := restoreInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueueRestoreCluster,
		UpdateFunc: func(old, obj any) {
			o, n := old.(*v1alpha1.MySQLRestore).Status, obj.(*v1alpha1.MySQLRestore).Status
			if o.Phase != n.Phase || o.Step != n.Step {
				enqueueRestoreCluster(obj)
			}
		},
		DeleteFunc: enqueueRestoreCluster,
	}); err != nil {
		return nil, fmt.Errorf("watch restores: %w", err)
	}
	enqueueBackupCluster := func(obj any) {
		if b, ok := objects.FromEvent[*v1alpha1.MySQLBackup](obj); ok {
			c.loop.Add(cache.ObjectName{Namespace: b.Namespace, Name: b.Spec.ClusterRef.Name})
		}
	}
	if err := backupInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, obj any) {
			if old.(*v1alpha1.MySQLBackup).Status.Phase != obj.(*v1alpha1.MySQLBackup).Status.Phase {
				enqueueBackupCluster(obj)
			}
		},
		DeleteFunc: enqueueBackupCluster,
	}); err != nil {
		return nil, fmt.Errorf("watch backups: %w", err)
	}
	for kind, inf := range kinds {
		if err := inf.AddEventHandler(c.written.Handler()); err != nil {
			return nil, fmt.Errorf("watch %s: %w", kind, err)
		}
		if err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: c.handleChild,
			UpdateFunc: func(old, obj any) {
				if resourceVersion(old) != resourceVersion(obj) {
					c.handleChild(obj)
				}
			},
			DeleteFunc: c.handleChild,
		}); err != nil {
			return nil, fmt.Errorf("watch %s: %w", kind, err)
		}
		c.loop.WaitFor(inf.HasSynced)
	}
	return c, nil
}

func resourceVersion(obj any) string {
	if o, ok := obj.(interface{ GetResourceVersion() string }); ok {
		return o.GetResourceVersion()
	}
	return ""
}

// handleChild enqueues the cluster a child belongs to: its controller owner, or for pods
// (owned by the StatefulSet) the cluster named by their mysqlop.io/cluster label.
func (c *Controller) handleChild(obj any) {
	o, ok := objects.FromEvent[metav1.Object](obj)
	if !ok {
		return
	}
	name := ""
	if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "MySQLCluster" && ref.APIVersion == v1alpha1.SchemeGroupVersion.String() {
		name = ref.Name
	} else {
		// Pods are the StatefulSet's; the servers' certificate Secret in cert-manager mode is
		// cert-manager's, labelled through the Certificate's secretTemplate.
		switch o.(type) {
		case *corev1.Pod, *corev1.Secret:
			name = o.GetLabels()[v1alpha1.LabelCluster]
		}
	}
	if name == "" {
		return
	}
	c.loop.Add(cache.ObjectName{Namespace: o.GetNamespace(), Name: name})
}

// Run runs workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) error { return c.loop.Run(ctx, workers) }
