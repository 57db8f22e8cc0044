package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	fx "github.com/mysqlop/mysql-operator/pkg/controllers/internal/fixture"
	mysqlfake "github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned/fake"
	"github.com/mysqlop/mysql-operator/pkg/informerset"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/configmap"
	"github.com/mysqlop/mysql-operator/pkg/resources/networkpolicy"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

const ns = "ns"

var key = cache.ObjectName{Namespace: ns, Name: "db"}

type fixture struct {
	t        *testing.T
	kube     *kubefake.Clientset
	mysql    *mysqlfake.Clientset
	recorder *record.FakeRecorder
	ctrl     *Controller
	// primary is the ordinal runPods labels primary.
	primary int
	// agentOnly says the change under test concerns only the agent: no sync may delete a pod.
	agentOnly bool
}

func config(agentTag string) Config {
	return Config{Images: Images{MySQL: "mysql", MariaDB: "mariadb", Agent: "agent:" + agentTag}, OperatorVersion: agentTag}
}

// newFixture starts a controller on fake clientsets holding objs. Informers filter children
// by the managed-by label as in production, so objects made by others are invisible to them.
func newFixture(t *testing.T, cfg Config, objs ...runtime.Object) *fixture {
	t.Helper()
	var kubeObjs, mysqlObjs []runtime.Object
	for _, o := range objs {
		switch o.(type) {
		case *v1alpha1.MySQLCluster, *v1alpha1.MySQLRestore:
			mysqlObjs = append(mysqlObjs, o)
		default:
			kubeObjs = append(kubeObjs, o)
		}
	}
	return startFixture(t, cfg, kubefake.NewClientset(kubeObjs...), mysqlfake.NewSimpleClientset(mysqlObjs...))
}

func startFixture(t *testing.T, cfg Config, kube *kubefake.Clientset, mysql *mysqlfake.Clientset) *fixture {
	t.Helper()
	copyingWatches(&kube.Fake, kube.Tracker())
	set := informerset.New(kube, mysql, nil, 0, v1alpha1.LabelManagedBy+"="+v1alpha1.ManagedBy, "")
	rec := record.NewFakeRecorder(100)
	ctrl, err := New(kube, mysql, set, rec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); set.Shutdown() })
	set.Start(ctx.Done())
	if err := set.WaitForCacheSync(ctx.Done()); err != nil {
		t.Fatal(err)
	}
	kube.ClearActions()
	mysql.ClearActions()
	return &fixture{t: t, kube: kube, mysql: mysql, recorder: rec, ctrl: ctrl}
}

// copyingWatches makes the fake's watches deliver copies. Its tracker hands a new watch the
// very objects it stores (client-go 0.37: the objects that exist when the watch starts), and
// the caches' transform (informerset.Trim) changes what it receives in place, as it may with
// the objects a real API server's watch decodes: the race detector then reports the tracker's
// own reads of them.
func copyingWatches(f *core.Fake, tracker core.ObjectTracker) {
	f.PrependWatchReactor("*", func(a core.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(core.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := tracker.Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			if e.Object != nil {
				e.Object = e.Object.DeepCopyObject()
			}
			return e, true
		}), nil
	})
}

// syncNew runs the first two syncs of a new cluster: the first creates what the pods mount and
// the StatefulSet, and nothing else; the second the rest. It checks that order and returns the
// kube actions of both.
func (f *fixture) syncNew() []core.Action {
	f.t.Helper()
	before := len(f.kube.Actions())
	f.sync()
	first := slices.Clone(f.kube.Actions()[before:])
	var created []string
	for _, a := range first {
		if a.GetVerb() == "create" {
			created = append(created, a.GetResource().Resource)
		}
	}
	if len(created) == 0 || created[len(created)-1] != "statefulsets" || slices.Contains(created, "services") {
		f.t.Fatalf("the first sync of a new cluster created %v; want the StatefulSet last and no Service", created)
	}
	f.settle()
	f.sync()
	return append(first, f.kube.Actions()...)
}

func (f *fixture) sync() {
	f.t.Helper()
	before := len(f.kube.Actions())
	if _, err := f.ctrl.Sync(context.Background(), key); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	f.checkInvariants(f.kube.Actions()[before:])
}

// checkInvariants checks what must hold after every sync, whatever the test does, in the
// manner of the StatefulSet controller's tests: the operator takes at most one member down at
// a time, and only while every other member is ready; an agent-only change deletes no pod.
func (f *fixture) checkInvariants(actions []core.Action) {
	f.t.Helper()
	var deleted []string
	for _, a := range actions {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			deleted = append(deleted, a.(core.DeleteAction).GetName())
		}
	}
	switch {
	case len(deleted) > 1:
		f.t.Fatalf("invariant: one sync deleted %d member pods %v", len(deleted), deleted)
	case len(deleted) == 1 && f.agentOnly:
		f.t.Fatalf("invariant: an agent-only change deleted pod %s", deleted[0])
	case len(deleted) == 1:
		pods, _ := f.ctrl.pods.List(labels.Everything())
		for _, p := range pods {
			if p.Name != deleted[0] && (p.DeletionTimestamp != nil || !podReady(p)) {
				f.t.Fatalf("invariant: deleted %s while %s was not ready", deleted[0], p.Name)
			}
		}
	}
}

// settle waits until the informer caches reflect every object in the clientsets, so the next
// sync sees what the previous one wrote. The fake trackers keep no resource versions, so
// objects are compared whole.
func (f *fixture) settle() {
	f.t.Helper()
	// The caches keep what informerset.Trim keeps.
	same := func(live, cached any, err error) bool {
		live, _ = informerset.Trim(live)
		return err == nil && apiequality.Semantic.DeepEqual(live, cached)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		if c, err := f.mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, "db", metav1.GetOptions{}); err == nil {
			if cached, err := f.ctrl.clusters.MySQLClusters(ns).Get("db"); !same(c, cached, err) {
				return false, nil
			}
		}
		if sts, err := f.kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{}); err == nil {
			if cached, err := f.ctrl.statefulSets.StatefulSets(ns).Get("db"); !same(sts, cached, err) {
				return false, nil
			}
		}
		pods, _ := f.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		cachedPods, _ := f.ctrl.pods.List(labels.Everything())
		if len(pods.Items) != len(cachedPods) {
			return false, nil
		}
		for i := range pods.Items {
			if cp, err := f.ctrl.pods.Pods(ns).Get(pods.Items[i].Name); !same(&pods.Items[i], cp, err) {
				return false, nil
			}
		}
		cms, _ := f.kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelManagedBy})
		for i := range cms.Items {
			if cc, err := f.ctrl.configMaps.ConfigMaps(ns).Get(cms.Items[i].Name); !same(&cms.Items[i], cc, err) {
				return false, nil
			}
		}
		secs, _ := f.kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelManagedBy})
		for i := range secs.Items {
			if cs, err := f.ctrl.secrets.Secrets(ns).Get(secs.Items[i].Name); !same(&secs.Items[i], cs, err) {
				return false, nil
			}
		}
		svcs, _ := f.kube.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelManagedBy})
		for i := range svcs.Items {
			if cs, err := f.ctrl.services.Services(ns).Get(svcs.Items[i].Name); !same(&svcs.Items[i], cs, err) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		f.t.Fatalf("caches did not settle: %v", err)
	}
	f.kube.ClearActions()
	f.mysql.ClearActions()
}

// writes returns the mutating actions recorded since the last settle.
func (f *fixture) writes() []core.Action {
	var out []core.Action
	for _, a := range append(f.kube.Actions(), f.mysql.Actions()...) {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a)
		}
	}
	return out
}

func describe(actions []core.Action) string {
	var s []string
	for _, a := range actions {
		s = append(s, fx.Describe(a))
	}
	return strings.Join(s, "; ")
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (f *fixture) cluster() *v1alpha1.MySQLCluster {
	f.t.Helper()
	c, err := f.mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) statefulSet() *appsv1.StatefulSet {
	f.t.Helper()
	s, err := f.kube.AppsV1().StatefulSets(ns).Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fixture) editCluster(mutate func(*v1alpha1.MySQLCluster)) {
	f.t.Helper()
	c := f.cluster()
	mutate(c)
	c.Generation++
	if _, err := f.mysql.MysqlopV1alpha1().MySQLClusters(ns).Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.settle()
}

// runPods stands in for the StatefulSet controller and kubelet: it creates ready pods from the
// StatefulSet's current template (ordinal f.primary labelled primary, the rest replica).
func (f *fixture) runPods() {
	f.t.Helper()
	sts := f.statefulSet()
	for i := range int(*sts.Spec.Replicas) {
		name := fmt.Sprintf("db-%d", i)
		if _, err := f.kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			continue
		}
		p := &corev1.Pod{
			ObjectMeta: *sts.Spec.Template.ObjectMeta.DeepCopy(),
			Spec:       *sts.Spec.Template.Spec.DeepCopy(),
			Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
		p.Name, p.Namespace, p.UID = name, ns, types.UID("pod-"+name)
		p.Labels[v1alpha1.LabelRole] = v1alpha1.RoleReplica
		if i == f.primary {
			p.Labels[v1alpha1.LabelRole] = v1alpha1.RolePrimary
		}
		if _, err := f.kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
	f.settle()
}

func mariadb(members int32, version string) *v1alpha1.MySQLCluster {
	return testutil.Cluster(ns, "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Flavor = v1alpha1.FlavorMariaDB
		c.Spec.Members = members
		c.Spec.Version = version
	})
}

// inSync returns a fixture whose cluster, children and pods match the spec, and whose
// ConfigMap records that the cluster holds data (the sync after the first primary).
func inSync(t *testing.T, c *v1alpha1.MySQLCluster) *fixture {
	f := newFixture(t, config("v1"), c)
	f.sync()
	f.settle()
	f.runPods()
	f.sync()
	f.settle()
	f.sync()
	f.settle()
	f.events()
	return f
}

func TestConfigMapRecordsThatTheClusterHoldsData(t *testing.T) {
	f := newFixture(t, config("v1"), mariadb(3, "10.11.6"))
	f.sync()
	f.settle()
	f.runPods()
	f.sync() // status.primary is written at the end of this round
	f.settle()
	cm := func() *corev1.ConfigMap {
		cm, err := f.kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "db-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	if configmap.HoldsData(cm()) {
		t.Fatal("a cluster that never had a primary is recorded as holding data")
	}
	restartHash := f.statefulSet().Spec.Template.Annotations[v1alpha1.AnnotationRestartHash]

	f.sync()
	if w := describe(f.writes()); w != "update configmaps db-config" {
		t.Errorf("writes once the cluster has a primary: %q, want only the ConfigMap", w)
	}
	if !configmap.HoldsData(cm()) {
		t.Error("the ConfigMap does not record that the cluster holds data")
	}
	if got := f.statefulSet().Spec.Template.Annotations[v1alpha1.AnnotationRestartHash]; got != restartHash {
		t.Errorf("restart hash %s -> %s: recording it would restart every member", restartHash, got)
	}
}

func TestHoldsDataIsSticky(t *testing.T) {
	cluster := mariadb(3, "10.11.6")
	own := configmap.New(cluster, "v1", true)
	own.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(cluster, v1alpha1.SchemeGroupVersion.WithKind("MySQLCluster"))}
	foreign := own.DeepCopy()
	foreign.OwnerReferences = nil
	for _, tc := range []struct {
		name    string
		primary string
		epoch   int64
		cm      *corev1.ConfigMap
		want    bool
	}{
		{"new cluster", "", 0, nil, false},
		{"a primary", "db-0", 0, nil, true},
		{"a failover happened", "", 2, nil, true},
		{"no writable member now, but recorded before", "", 0, own, true},
		{"recorded in a ConfigMap that is not ours", "", 0, foreign, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster.DeepCopy()
			c.Status.Primary, c.Status.Epoch = tc.primary, tc.epoch
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if tc.cm != nil {
				if err := idx.Add(tc.cm); err != nil {
					t.Fatal(err)
				}
			}
			if got := holdsData(corelisters.NewConfigMapLister(idx), c); got != tc.want {
				t.Errorf("holdsData = %v, want %v", got, tc.want)
			}
		})
	}
}

// A new cluster is created over two syncs (the StatefulSet first), yet costs one Created
// event, which names the children of both.
func TestNewClusterCostsOneCreatedEvent(t *testing.T) {
	f := newFixture(t, config("v1"), mariadb(3, "10.11.6"))
	f.sync()
	for _, e := range f.events() {
		if strings.HasPrefix(e, "Normal Created") {
			t.Errorf("the first sync emitted %q; its creations belong in the next sync's event", e)
		}
	}
	f.settle()
	f.sync()
	var created []string
	for _, e := range f.events() {
		if strings.HasPrefix(e, "Normal Created") {
			created = append(created, e)
		}
	}
	if len(created) != 1 {
		t.Fatalf("Created events %q, want one", created)
	}
	for _, child := range []string{"Secret db-credentials", "ConfigMap db-config", "StatefulSet db", "Service db-primary", "PodDisruptionBudget db"} {
		if !strings.Contains(created[0], child) {
			t.Errorf("Created event %q does not name %s", created[0], child)
		}
	}
}

func TestCreatesEveryChildWithControllerRef(t *testing.T) {
	f := newFixture(t, config("v1"), mariadb(3, "10.11.6"))
	actions := f.syncNew()

	want := map[string]bool{
		"secrets/db-credentials": false, "configmaps/db-config": false, "services/db-headless": false,
		"services/db-primary": false, "services/db-replicas": false, "poddisruptionbudgets/db": false, "statefulsets/db": false,
		"secrets/db-ca-key": false, "secrets/db-tls": false, "secrets/db-ca": false,
	}
	for _, a := range actions {
		create, ok := a.(core.CreateAction)
		if !ok {
			continue
		}
		o := create.GetObject().(metav1.Object)
		k := a.GetResource().Resource + "/" + o.GetName()
		if _, expected := want[k]; !expected {
			t.Errorf("unexpected create %s", k)
			continue
		}
		want[k] = true
		ref := metav1.GetControllerOf(o)
		if ref == nil || ref.Kind != "MySQLCluster" || ref.Name != "db" || ref.UID != f.cluster().UID {
			t.Errorf("%s: controller reference %+v", k, ref)
		}
		if o.GetLabels()[v1alpha1.LabelOperatorVersion] != "v1" {
			t.Errorf("%s: operator-version label %q", k, o.GetLabels()[v1alpha1.LabelOperatorVersion])
		}
	}
	for k, created := range want {
		if !created {
			t.Errorf("%s was not created", k)
		}
	}
	c := f.cluster()
	if _, ok := c.Labels[v1alpha1.LabelOperatorVersion]; ok {
		t.Errorf("cluster labelled %v: the operator build is status.operatorVersion", c.Labels)
	}
	if c.Status.Phase != v1alpha1.ClusterPending || c.Status.OperatorVersion != "v1" || c.Status.ObservedGeneration != 1 {
		t.Errorf("status %+v", c.Status)
	}
	if c.Spec.Version != "10.11.6" || c.Spec.Config != nil {
		t.Errorf("spec was rewritten: %+v", c.Spec)
	}
	// The Secret is built with generated passwords, but no event or status mentions them.
	s, _ := f.kube.CoreV1().Secrets(ns).Get(context.Background(), "db-credentials", metav1.GetOptions{})
	status, _ := json.Marshal(c.Status)
	for _, e := range append(f.events(), string(status)) {
		for k, v := range s.Data {
			if strings.Contains(e, string(v)) {
				t.Errorf("secret %s leaked into %q", k, e)
			}
		}
	}
}

func TestNetworkPolicyWhenConfigured(t *testing.T) {
	cfg := config("v1")
	cfg.NetworkPolicy = &networkpolicy.Operator{Namespace: "mysqlop-system", PodLabels: map[string]string{"app.kubernetes.io/name": "mysql-operator"}}
	f := newFixture(t, cfg, mariadb(3, "10.11.6"))
	f.syncNew()
	np, err := f.kube.NetworkingV1().NetworkPolicies(ns).Get(context.Background(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no NetworkPolicy: %v", err)
	}
	if ref := metav1.GetControllerOf(np); ref == nil || ref.UID != f.cluster().UID {
		t.Errorf("controller reference %+v", ref)
	}
	if len(np.Spec.Ingress) != 3 || np.Spec.Ingress[1].From[1].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "mysqlop-system" {
		t.Errorf("ingress %+v", np.Spec.Ingress)
	}
	// Once in step, it costs no write.
	f.settle()
	err = wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		_, err := f.ctrl.netpols.NetworkPolicies(ns).Get("db")
		return err == nil, nil
	})
	if err != nil {
		t.Fatal("the NetworkPolicy never reached the cache")
	}
	f.kube.ClearActions()
	f.sync()
	for _, a := range f.writes() {
		if a.GetResource().Resource == "networkpolicies" {
			t.Errorf("in-sync reconcile wrote the NetworkPolicy: %s", describe([]core.Action{a}))
		}
	}
}

func TestNoWritesWhenInSync(t *testing.T) {
	f := inSync(t, mariadb(3, "10.11.6"))
	f.sync()
	if w := f.writes(); len(w) != 0 {
		t.Errorf("in-sync reconcile wrote: %s", describe(w))
	}
	if st := f.cluster().Status; st.Phase != v1alpha1.ClusterHealthy || st.ReadyMembers != 3 || st.Primary != "db-0" || st.CurrentVersion != "10.11.6" {
		t.Errorf("status %+v", st)
	}
}

func TestScale(t *testing.T) {
	f := inSync(t, mariadb(3, "10.11.6"))
	f.editCluster(func(c *v1alpha1.MySQLCluster) { c.Spec.Members = 5 })
	f.sync()
	if got := *f.statefulSet().Spec.Replicas; got != 5 {
		t.Errorf("replicas %d, want 5", got)
	}
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "delete" || a.GetVerb() == "patch" {
			t.Errorf("scaling touched pods: %s", describe([]core.Action{a}))
		}
	}
	if st := f.cluster().Status; st.Phase != v1alpha1.ClusterDegraded {
		t.Errorf("phase %s while 2 of 5 members are missing", st.Phase)
	}
}

func TestUpgradeRestartsReplicasFirstPrimaryLast(t *testing.T) {
	f := inSync(t, mariadb(3, "10.11.6"))
	// Put the primary in the middle, so that neither ordinal order gives the wanted order.
	p1, _ := f.kube.CoreV1().Pods(ns).Get(context.Background(), "db-1", metav1.GetOptions{})
	p0, _ := f.kube.CoreV1().Pods(ns).Get(context.Background(), "db-0", metav1.GetOptions{})
	p1.Labels[v1alpha1.LabelRole], p0.Labels[v1alpha1.LabelRole] = v1alpha1.RolePrimary, v1alpha1.RoleReplica
	for _, p := range []*corev1.Pod{p0, p1} {
		if _, err := f.kube.CoreV1().Pods(ns).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.primary = 1
	f.editCluster(func(c *v1alpha1.MySQLCluster) { c.Spec.Version = "10.11.8" })

	var order []string
	for range 3 {
		f.sync()
		if img := f.statefulSet().Spec.Template.Spec.Containers[0].Image; img != "mariadb:10.11.8" {
			t.Fatalf("server image %q", img)
		}
		var deleted []string
		for _, a := range f.kube.Actions() {
			if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
				deleted = append(deleted, a.(core.DeleteAction).GetName())
			}
		}
		if len(deleted) != 1 {
			t.Fatalf("deleted %v in one reconcile, want exactly one pod", deleted)
		}
		order = append(order, deleted[0])
		if st := f.cluster().Status; st.Phase != v1alpha1.ClusterUpgrading || st.CurrentVersion != "10.11.6" {
			t.Errorf("during the upgrade: phase %s current %s", st.Phase, st.CurrentVersion)
		}
		f.settle()
		// A second reconcile before the pod came back must not delete another one.
		f.sync()
		for _, a := range f.kube.Actions() {
			if a.GetVerb() == "delete" {
				t.Fatalf("deleted another pod while %s is down", deleted[0])
			}
		}
		f.settle()
		f.runPods()
	}
	if fmt.Sprint(order) != "[db-2 db-0 db-1]" {
		t.Errorf("restart order %v, want replicas (highest ordinal first) then the primary db-1", order)
	}
	f.sync()
	st := f.cluster().Status
	if st.Phase != v1alpha1.ClusterHealthy || st.CurrentVersion != "10.11.8" {
		t.Errorf("after the upgrade: phase %s current %s", st.Phase, st.CurrentVersion)
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "VersionUpgraded") {
		t.Errorf("no VersionUpgraded event in %q", ev)
	}
}

func TestDowngradeRefused(t *testing.T) {
	f := inSync(t, mariadb(3, "10.11.8"))
	before := f.statefulSet()
	f.editCluster(func(c *v1alpha1.MySQLCluster) { c.Spec.Version = "10.6.1" })
	f.sync()

	if after := f.statefulSet(); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("a refused downgrade changed the StatefulSet (image %s)", after.Spec.Template.Spec.Containers[0].Image)
	}
	for _, a := range f.kube.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetResource().Resource != "events" {
			t.Errorf("a refused downgrade wrote %s", describe([]core.Action{a}))
		}
	}
	cond := meta.FindStatusCondition(f.cluster().Status.Conditions, v1alpha1.ConditionAccepted)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "DowngradeRefused" || !strings.Contains(cond.Message, "10.6.1") {
		t.Errorf("Accepted condition %+v", cond)
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning DowngradeRefused") {
		t.Errorf("events %v, want one DowngradeRefused warning", ev)
	}
	// Reconciling again neither repeats the event nor writes anything.
	f.settle()
	f.sync()
	if w := f.writes(); len(w) != 0 {
		t.Errorf("second reconcile wrote %s", describe(w))
	}
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("repeated events %v", ev)
	}
}

func TestNewOperatorVersionPatchesAgentInPlace(t *testing.T) {
	old := inSync(t, mariadb(3, "10.11.6"))
	serverImage := old.statefulSet().Spec.Template.Spec.Containers[0].Image

	// An operator build before 2026-12-07 also labelled the cluster object with its version.
	legacy := old.cluster()
	legacy.Labels = map[string]string{v1alpha1.LabelOperatorVersion: "v1", "team": "a"}
	if _, err := old.mysql.MysqlopV1alpha1().MySQLClusters(ns).Update(context.Background(), legacy, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	f := startFixture(t, config("v2"), old.kube, old.mysql)
	f.agentOnly = true
	f.sync()

	sts := f.statefulSet()
	if sts.Labels[v1alpha1.LabelOperatorVersion] != "v2" || sts.Spec.Template.Labels[v1alpha1.LabelOperatorVersion] != "v2" {
		t.Errorf("StatefulSet labels %v / template %v", sts.Labels, sts.Spec.Template.Labels)
	}
	for _, ctr := range sts.Spec.Template.Spec.Containers {
		if ctr.Name == resources.ContainerMySQL && ctr.Image != serverImage {
			t.Errorf("server image changed to %s", ctr.Image)
		}
		if ctr.Name == resources.ContainerAgent && ctr.Image != "agent:v2" {
			t.Errorf("template agent image %s", ctr.Image)
		}
	}
	patched := map[string]bool{}
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		switch a.GetVerb() {
		case "delete":
			t.Errorf("pod %s deleted: an operator upgrade must not restart mysqld", a.(core.DeleteAction).GetName())
		case "patch":
			p := a.(core.PatchAction)
			patched[p.GetName()] = true
			if strings.Contains(string(p.GetPatch()), resources.ContainerMySQL+`"`) {
				t.Errorf("patch of %s touches the server container: %s", p.GetName(), p.GetPatch())
			}
		}
	}
	if len(patched) != 3 {
		t.Errorf("patched pods %v, want all three", patched)
	}
	for i := range 3 {
		p, _ := f.kube.CoreV1().Pods(ns).Get(context.Background(), fmt.Sprintf("db-%d", i), metav1.GetOptions{})
		for _, ctr := range p.Spec.Containers {
			if ctr.Name == resources.ContainerAgent && ctr.Image != "agent:v2" {
				t.Errorf("%s agent image %s", p.Name, ctr.Image)
			}
			if ctr.Name == resources.ContainerMySQL && ctr.Image != serverImage {
				t.Errorf("%s server image %s", p.Name, ctr.Image)
			}
		}
		if p.Labels[v1alpha1.LabelOperatorVersion] != "v2" || p.Labels[v1alpha1.LabelRole] == "" {
			t.Errorf("%s labels %v: want the new version and the role kept", p.Name, p.Labels)
		}
	}
	if c := f.cluster(); len(c.Labels) != 1 || c.Labels["team"] != "a" || c.Status.OperatorVersion != "v2" {
		t.Errorf("cluster labels %v status %q: want the old build's operator-version label gone, the user's kept", c.Labels, c.Status.OperatorVersion)
	}
	// Once patched, nothing more happens.
	f.settle()
	f.sync()
	if w := f.writes(); len(w) != 0 {
		t.Errorf("after the in-place update: %s", describe(w))
	}
}

func TestForeignServiceIsLeftAlone(t *testing.T) {
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db-primary", Namespace: ns, ResourceVersion: "7"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "theirs"}},
	}
	f := newFixture(t, config("v1"), mariadb(3, "10.11.6"), foreign)
	f.syncNew() // a permanent conflict is not an error: no retry loop

	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource == "services" && (a.GetVerb() == "update" || a.GetVerb() == "patch" || a.GetVerb() == "delete") {
			t.Errorf("touched the foreign service: %s", describe([]core.Action{a}))
		}
	}
	got, _ := f.kube.CoreV1().Services(ns).Get(context.Background(), "db-primary", metav1.GetOptions{})
	if got.Spec.Selector["app"] != "theirs" || len(got.OwnerReferences) != 0 {
		t.Errorf("foreign service changed: %+v", got)
	}
	if _, err := f.kube.AppsV1().StatefulSets(ns).Get(context.Background(), "db", metav1.GetOptions{}); err != nil {
		t.Errorf("other children must still be created: %v", err)
	}
	cond := meta.FindStatusCondition(f.cluster().Status.Conditions, v1alpha1.ConditionSynced)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "ErrResourceExists" || !strings.Contains(cond.Message, "db-primary") {
		t.Errorf("Synced condition %+v", cond)
	}
	var warned bool
	for _, e := range f.events() {
		warned = warned || strings.HasPrefix(e, "Warning ErrResourceExists")
	}
	if !warned {
		t.Error("no ErrResourceExists warning event")
	}
}

func TestInvalidSpecSetsConditionWithoutRetry(t *testing.T) {
	bad := mariadb(3, "10.11.6")
	bad.Spec.Config = map[string]v1alpha1.ConfigValue{"server_id": "7"} // the CRD refuses this; the controller must too
	f := newFixture(t, config("v1"), bad)
	f.sync()
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource != "events" {
			t.Errorf("created %s for an invalid spec", describe([]core.Action{a}))
		}
	}
	c := f.cluster()
	cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionAccepted)
	if c.Status.Phase != v1alpha1.ClusterInvalid || cond == nil || cond.Reason != "InvalidSpec" || !strings.Contains(cond.Message, "server_id") {
		t.Errorf("phase %s condition %+v", c.Status.Phase, cond)
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning InvalidSpec") {
		t.Errorf("events %v", ev)
	}
	f.settle()
	f.sync()
	if w := f.writes(); len(w) != 0 {
		t.Errorf("second reconcile of an invalid spec wrote %s", describe(w))
	}
	if ev := f.events(); len(ev) != 0 {
		t.Errorf("repeated events %v", ev)
	}
}

func TestGoneOrDeletingClusterIsNoop(t *testing.T) {
	f := newFixture(t, config("v1"))
	f.sync()
	deleting := mariadb(3, "10.11.6")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{"keep"}
	g := newFixture(t, config("v1"), deleting)
	g.sync()
	if w := append(f.writes(), g.writes()...); len(w) != 0 {
		t.Errorf("wrote %s", describe(w))
	}
}

func TestHandleChildEnqueuesOwner(t *testing.T) {
	f := newFixture(t, config("v1"))
	c := mariadb(3, "10.11.6")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(c, v1alpha1.SchemeGroupVersion.WithKind("MySQLCluster"))}}}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: ns, Labels: map[string]string{v1alpha1.LabelCluster: "db"}}}
	stray := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "y", Namespace: ns, Labels: map[string]string{v1alpha1.LabelCluster: "db"}}}
	for _, o := range []any{svc, p, cache.DeletedFinalStateUnknown{Key: "ns/db-0", Obj: p}, stray} {
		f.ctrl.handleChild(o)
	}
	if n := f.ctrl.loop.Len(); n != 1 {
		t.Errorf("queue length %d, want the one cluster key", n)
	}
	if k := f.ctrl.loop.Pop(); k != key {
		t.Errorf("queued %v", k)
	}
}

// A running restore's fence holds a rolling restart; once the restore is over, the cluster
// controller lifts a fence the restore left behind (with an event) and the restart goes on.
func TestFenceHoldsRestartsUntilTheRestoreEnds(t *testing.T) {
	f := inSync(t, mariadb(3, "10.11.6"))
	restore := &v1alpha1.MySQLRestore{ObjectMeta: metav1.ObjectMeta{Name: "undo", Namespace: ns},
		Spec:   v1alpha1.MySQLRestoreSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"}, BackupRef: v1alpha1.LocalReference{Name: "b"}},
		Status: v1alpha1.MySQLRestoreStatus{Phase: v1alpha1.JobRunning, Step: v1alpha1.RestoreLoading}}
	ctx := context.Background()
	if _, err := f.mysql.MysqlopV1alpha1().MySQLRestores(ns).Create(ctx, restore, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.editCluster(func(c *v1alpha1.MySQLCluster) {
		c.Annotations = map[string]string{v1alpha1.AnnotationRestore: "undo"}
		c.Spec.Version = "10.11.8"
	})
	waitRestoreCached := func(phase v1alpha1.JobPhase) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			r, err := f.ctrl.restores.MySQLRestores(ns).Get("undo")
			return err == nil && r.Status.Phase == phase, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitRestoreCached(v1alpha1.JobRunning)
	for range 2 {
		f.sync()
		for _, a := range f.writes() {
			if a.GetVerb() == "delete" {
				t.Fatalf("restarted a member during a restore: %s", describe([]core.Action{a}))
			}
		}
		if c := f.cluster(); c.Annotations[v1alpha1.AnnotationRestore] != "undo" {
			t.Fatal("the fence of a running restore was lifted")
		}
		f.settle()
	}

	restore.Status.Phase = v1alpha1.JobComplete
	if _, err := f.mysql.MysqlopV1alpha1().MySQLRestores(ns).UpdateStatus(ctx, restore, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRestoreCached(v1alpha1.JobComplete)
	f.sync()
	if c := f.cluster(); c.Annotations[v1alpha1.AnnotationRestore] != "" {
		t.Error("the fence of a finished restore stays")
	}
	if ev := strings.Join(f.events(), "\n"); !strings.Contains(ev, "WritesResumed") {
		t.Errorf("no WritesResumed event in %q", ev)
	}
	deleted := 0
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
			deleted++
		}
	}
	if deleted != 1 {
		t.Errorf("after the restore, %d members restarted; want the rollout to go on with one", deleted)
	}
}

// Only refusals a retry cannot fix make Synced false: a conflict on update is retried.
func TestRefusedChildren(t *testing.T) {
	gr := schema.GroupResource{Resource: "services"}
	invalid := fmt.Errorf("create service %s: %w", "x", apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "x", nil))
	conflict := fmt.Errorf("update service y: %w", apierrors.NewConflict(gr, "y", errors.New("modified")))
	if got := refusedChildren(errors.Join(conflict, invalid)); !strings.Contains(got, "create service x") || strings.Contains(got, "service y") {
		t.Errorf("refusedChildren = %q", got)
	}
	if got := refusedChildren(conflict); got != "" {
		t.Errorf("a conflict alone: %q", got)
	}
	if got := refusedChildren(nil); got != "" {
		t.Errorf("no error: %q", got)
	}
}

func TestClusterPodsAreItsOwnOnly(t *testing.T) {
	f := inSync(t, mariadb(3, "10.11.6"))
	managed := map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}
	for name, extra := range map[string]map[string]string{
		// A member of another cluster in the namespace, and one of "db-0" (a name that begins
		// like this cluster's).
		"other-0": {v1alpha1.LabelName: v1alpha1.AppName, v1alpha1.LabelCluster: "other"},
		"db-0-0":  {v1alpha1.LabelName: v1alpha1.AppName, v1alpha1.LabelCluster: "db-0"},
		// A pod that names the cluster but is not a member.
		"client": {v1alpha1.LabelCluster: "db"},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: maps.Clone(managed)}}
		maps.Copy(p.Labels, extra)
		if _, err := f.kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f.settle()
	pods, err := f.ctrl.clusterPods(f.cluster())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if want := []string{"db-0", "db-1", "db-2"}; !slices.Equal(names, want) {
		t.Errorf("pods of db: %v, want %v", names, want)
	}
}

func TestCompleteBackupsAreTheClustersOnly(t *testing.T) {
	f := inSync(t, mariadb(3, "10.11.6"))
	backup := func(name, cluster string, phase v1alpha1.JobPhase) {
		b := &v1alpha1.MySQLBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.MySQLBackupSpec{ClusterRef: v1alpha1.ClusterReference{Name: cluster}}}
		b.Status.Phase = phase
		if _, err := f.mysql.MysqlopV1alpha1().MySQLBackups(ns).Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	backup("mine", "db", v1alpha1.JobComplete)
	backup("running", "db", v1alpha1.JobRunning)
	// Another cluster's, and one of "db-0" (a name that begins like this cluster's).
	backup("other", "other", v1alpha1.JobComplete)
	backup("prefix", "db-0", v1alpha1.JobComplete)
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return len(f.ctrl.backupIndex.List()) == 4, nil
	})
	if err != nil {
		t.Fatal("the backups cache never held the four backups")
	}
	cl := f.cluster().DeepCopy()
	if got := f.ctrl.completeBackups(cl); got != nil {
		t.Errorf("without a binlog archive: %d backups, want none", len(got))
	}
	cl.Spec.BinlogArchive = &v1alpha1.BinlogArchiveSpec{}
	var names []string
	for _, b := range f.ctrl.completeBackups(cl) {
		names = append(names, b.Name)
	}
	if want := []string{"mine"}; !slices.Equal(names, want) {
		t.Errorf("complete backups of db: %v, want %v", names, want)
	}
}
