package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/clustering"
)

// fakeClusterings stands in for the clustering runners: it returns the decision the test sets
// and records the configuration the controller hands over.
type fakeClusterings struct {
	mu       sync.Mutex
	decision *clustering.Decision
	cfgs     []runnerConfig
	stopped  []cache.ObjectName
	// archiving is what archive returns.
	archiving *archiveView
}

func (f *fakeClusterings) ensure(_ context.Context, _ cache.ObjectName, _ *v1alpha1.MySQLCluster, cfg runnerConfig) (*clustering.Decision, []clustering.Instance) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfgs = append(f.cfgs, cfg)
	return f.decision, nil
}

func (f *fakeClusterings) latest(cache.ObjectName) *clustering.Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.decision
}

func (f *fakeClusterings) stop(key cache.ObjectName) { f.stopped = append(f.stopped, key) }

func (f *fakeClusterings) archive(cache.ObjectName) *archiveView {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.archiving
}

func (f *fakeClusterings) last() runnerConfig { return f.cfgs[len(f.cfgs)-1] }

// withClustering turns clustering on in f's controller with a fake whose decision has primary
// and every member ready.
func withClustering(f *fixture, primary int) *fakeClusterings {
	fake := &fakeClusterings{decision: healthy(primary)}
	f.ctrl.cfg.Clustering = true
	f.ctrl.clusterings = fake
	return fake
}

func healthy(primary int) *clustering.Decision {
	return &clustering.Decision{State: clustering.Healthy, Primary: primary, Ready: []bool{true, true, true}, Reason: "healthy"}
}

// The controller labels pods with the roles the clustering decided, asks for a requested
// switchover, and clears the request once the decision has the requested member as primary.
func TestClusteringDecisionLabelsRolesAndClearsTheSwitchoverRequest(t *testing.T) {
	f := inSync(t, mariadb(3, "10.11.6"))
	fake := withClustering(f, 0)
	f.editCluster(func(c *v1alpha1.MySQLCluster) {
		c.Annotations = map[string]string{v1alpha1.AnnotationSwitchoverTo: "db-1"}
	})
	f.sync()
	if got := fake.last(); got.switchoverTo != 1 || got.primary != 0 || !slices.Equal(got.pods, []string{"db-0", "db-1", "db-2"}) {
		t.Fatalf("runner config: switchoverTo %d primary %d pods %v", got.switchoverTo, got.primary, got.pods)
	}
	// The first decision reaches the status (Healthy, its reason), and nothing else changes.
	if w := describe(f.writes()); w != "update mysqlclusters/status db" {
		t.Errorf("writes before the switchover happened: %q", w)
	}
	f.settle()

	fake.decision = healthy(1)
	f.sync()
	want := []string{"patch pods db-0", "patch pods db-1", "patch mysqlclusters db", "update mysqlclusters/status db"}
	var got []string
	for _, a := range f.writes() {
		got = append(got, describe([]core.Action{a}))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("writes after the switchover: %q, want %q", got, want)
	}
	for pod, role := range map[string]string{"db-0": v1alpha1.RoleReplica, "db-1": v1alpha1.RolePrimary, "db-2": v1alpha1.RoleReplica} {
		p, _ := f.kube.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
		if p.Labels[v1alpha1.LabelRole] != role {
			t.Errorf("%s role %q, want %q", pod, p.Labels[v1alpha1.LabelRole], role)
		}
	}
	var cleared bool
	for _, a := range f.writes() {
		if p, ok := a.(core.PatchAction); ok && p.GetResource().Resource == "mysqlclusters" {
			cleared = string(p.GetPatch()) == `{"metadata":{"annotations":{"mysqlop.io/switchover-to":null}}}`
		}
	}
	// (The fake clientset's status update rewrites the whole object, annotations included; the
	// API server's status subresource does not, so only the patch itself is checked.)
	if c := f.cluster(); !cleared || c.Status.Primary != "db-1" {
		t.Errorf("after the switchover: request cleared %v, primary %q", cleared, c.Status.Primary)
	}
}

// A member that is not ready loses its role label, so that no Service sends it clients.
func TestClusteringRemovesTheRoleOfAMemberThatIsNotReady(t *testing.T) {
	f := inSync(t, mariadb(3, "10.11.6"))
	fake := withClustering(f, 0)
	fake.decision.Ready[2] = false
	f.sync()
	p, _ := f.kube.CoreV1().Pods(ns).Get(context.Background(), "db-2", metav1.GetOptions{})
	if role, ok := p.Labels[v1alpha1.LabelRole]; ok {
		t.Errorf("db-2 keeps role %q while not ready", role)
	}
}

// A rolling restart that reaches the primary waits for a switchover to a ready replica, and
// restarts the old primary once the role moved.
func TestRestartOfThePrimaryWaitsForTheSwitchover(t *testing.T) {
	f := inSync(t, mariadb(3, "10.11.6"))
	fake := withClustering(f, 0)
	f.editCluster(func(c *v1alpha1.MySQLCluster) { c.Spec.Version = "10.11.8" })
	deletes := func() []string {
		var out []string
		for _, a := range f.writes() {
			if a.GetVerb() == "delete" && a.GetResource().Resource == "pods" {
				out = append(out, a.(core.DeleteAction).GetName())
			}
		}
		return out
	}
	// Replicas first, highest ordinal first.
	for _, want := range []string{"db-2", "db-1"} {
		f.sync()
		if d := deletes(); !slices.Equal(d, []string{want}) {
			t.Fatalf("deleted %v, want %s", d, want)
		}
		f.settle()
		f.runPods()
	}
	f.sync()
	if d := deletes(); len(d) != 0 {
		t.Fatalf("deleted the primary %v before it moved", d)
	}
	if got := fake.last().switchoverTo; got != 1 && got != 2 {
		t.Fatalf("switchover asked to %d, want a ready replica", got)
	}
	fake.decision = healthy(fake.last().switchoverTo)
	f.settle()
	f.sync() // relabels the members: db-0 is a replica now
	if d := deletes(); len(d) != 0 {
		t.Fatalf("deleted %v in the sync that moved the role labels", d)
	}
	f.settle()
	f.sync()
	if d := deletes(); !slices.Equal(d, []string{"db-0"}) {
		t.Fatalf("after the switchover deleted %v, want the old primary db-0", d)
	}
}

// A cluster that goes stops its clustering runner.
func TestDeletedClusterStopsItsClustering(t *testing.T) {
	f := newFixture(t, config("v1"))
	fake := withClustering(f, 0)
	f.sync()
	if !slices.Equal(fake.stopped, []cache.ObjectName{key}) {
		t.Errorf("stopped %v", fake.stopped)
	}
}
