package integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/options"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/test/framework"
)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// The API server itself refuses bad specs, with the CRD's messages.
func TestCRDValidationRejectsBadSpecs(t *testing.T) {
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	clusters := mysql.MysqlopV1alpha1().MySQLClusters(ns)
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.MySQLCluster)
		want   string
	}{
		{"members 0", func(c *v1alpha1.MySQLCluster) { c.Spec.Members = 0; c.Spec.Replication.Mode = "semisync" }, ""},
		{"members 10", func(c *v1alpha1.MySQLCluster) { c.Spec.Members = 10 }, "spec.members: Invalid value: 10"},
		{"unknown flavor", func(c *v1alpha1.MySQLCluster) { c.Spec.Flavor = "postgres" }, `spec.flavor: Unsupported value: "postgres"`},
		{"malformed version", func(c *v1alpha1.MySQLCluster) { c.Spec.Version = "8.4" }, "spec.version in body should match"},
		{"owned config key", func(c *v1alpha1.MySQLCluster) { c.Spec.Config = map[string]v1alpha1.ConfigValue{"Server-ID": "3"} }, "config sets an option the operator manages"},
		{"reserved pod label", func(c *v1alpha1.MySQLCluster) { c.Spec.PodLabels = map[string]string{"mysqlop.io/role": "primary"} }, "reserved prefixes"},
		{"replication mode", func(c *v1alpha1.MySQLCluster) { c.Spec.Replication.Mode = "sync" }, `spec.replication.mode: Unsupported value: "sync"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(ns, "bad", 3, "10.11.6")
			tc.mutate(c)
			_, err := clusters.Create(ctx, c, metav1.CreateOptions{})
			if tc.want == "" {
				// members 0 is omitted by omitempty and defaulted to 3: not an error.
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				if got, _ := clusters.Get(ctx, "bad", metav1.GetOptions{}); got.Spec.Members != 3 {
					t.Errorf("members defaulted to %d, want 3", got.Spec.Members)
				}
				_ = clusters.Delete(ctx, "bad", metav1.DeleteOptions{})
				eventually(t, 10*time.Second, "deleted", func(ctx context.Context) (bool, error) {
					_, err := clusters.Get(ctx, "bad", metav1.GetOptions{})
					return apierrors.IsNotFound(err), nil
				})
				return
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("create: %v\nwant an Invalid error containing %q", err, tc.want)
			}
		})
	}

	// members: 0 sent explicitly (omitempty drops it from typed clients) is refused too.
	if err := kubectl("apply", "-f", "-").stdin(fmt.Sprintf(`{"apiVersion":"mysqlop.io/v1alpha1","kind":"MySQLCluster","metadata":{"name":"zero","namespace":%q},"spec":{"members":0}}`, ns)).run(); err == nil ||
		!strings.Contains(err.Error(), "should be greater than or equal to 1") {
		t.Errorf("members 0: %v", err)
	}

	// Transition rules: flavor and baseServerId cannot change.
	c := createCluster(t, newCluster(ns, "imm", 1, "10.11.6"))
	for name, mutate := range map[string]func(*v1alpha1.MySQLCluster){
		"flavor is immutable":       func(c *v1alpha1.MySQLCluster) { c.Spec.Flavor = v1alpha1.FlavorMySQL },
		"baseServerId is immutable": func(c *v1alpha1.MySQLCluster) { c.Spec.BaseServerID = 500 },
		"volumeClaimTemplate is immutable": func(c *v1alpha1.MySQLCluster) {
			c.Spec.VolumeClaimTemplate.Resources.Requests[corev1.ResourceStorage] = mustQuantity("2Gi")
		},
	} {
		u := c.DeepCopy()
		mutate(u)
		if _, err := clusters.Update(ctx, u, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: update gave %v", name, err)
		}
	}
}

func TestChildrenAreOwnedAndGarbageCollected(t *testing.T) {
	ns := cp.NewNamespace(t)
	startOperator(t, ns)
	c := createCluster(t, newCluster(ns, "db", 3, "10.11.6"))
	ctx := context.Background()

	children := map[string]func() (metav1.Object, error){
		"Secret db-credentials": func() (metav1.Object, error) {
			return cp.Kube.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
		},
		"ConfigMap db-config": func() (metav1.Object, error) {
			return cp.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "db-config", metav1.GetOptions{})
		},
		"Service db-headless": func() (metav1.Object, error) {
			return cp.Kube.CoreV1().Services(ns).Get(ctx, "db-headless", metav1.GetOptions{})
		},
		"Service db-primary": func() (metav1.Object, error) {
			return cp.Kube.CoreV1().Services(ns).Get(ctx, "db-primary", metav1.GetOptions{})
		},
		"Service db-replicas": func() (metav1.Object, error) {
			return cp.Kube.CoreV1().Services(ns).Get(ctx, "db-replicas", metav1.GetOptions{})
		},
		"PodDisruptionBudget db": func() (metav1.Object, error) {
			return cp.Kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "db", metav1.GetOptions{})
		},
		"StatefulSet db": func() (metav1.Object, error) {
			return cp.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		},
	}
	for name, get := range children {
		eventually(t, 30*time.Second, name+" created", func(context.Context) (bool, error) {
			o, err := get()
			if err != nil {
				return false, nil
			}
			ref := metav1.GetControllerOf(o)
			if ref == nil || ref.UID != c.UID || ref.Kind != "MySQLCluster" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				return false, fmt.Errorf("%s has controller reference %+v", name, ref)
			}
			return true, nil
		})
	}

	// Status follows the pods: kwok makes them Ready, the real StatefulSet controller and
	// scheduler put them there, and the framework's provisioner binds their volumes.
	st := waitHealthy(t, ns, "db", 3, 90*time.Second).Status
	if len(st.Instances) != 3 || st.CurrentVersion != "10.11.6" || st.Selector == "" {
		t.Errorf("status %+v", st)
	}
	if out, err := kubectl("get", "myc", "-n", ns).output(); err != nil || !strings.Contains(out, "Healthy") || !strings.Contains(out, "10.11.6") {
		t.Errorf("kubectl get myc: %v\n%s", err, out)
	}

	if err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, get := range children {
		eventually(t, 60*time.Second, name+" garbage-collected", func(context.Context) (bool, error) {
			_, err := get()
			return apierrors.IsNotFound(err), nil
		})
	}
	eventually(t, 60*time.Second, "pods gone", func(ctx context.Context) (bool, error) {
		pods, err := cp.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
	// Data volumes outlive the cluster (docs/user-guide.md).
	pvcs, err := cp.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelCluster + "=db"})
	if err != nil || len(pvcs.Items) != 3 {
		t.Errorf("want the 3 data PVCs kept after deleting the cluster, got %d (%v)", len(pvcs.Items), err)
	}
}

func TestScaleThroughSubresourceAndSpec(t *testing.T) {
	ns := cp.NewNamespace(t)
	startOperator(t, ns)
	createCluster(t, newCluster(ns, "db", 3, "10.11.6"))
	waitHealthy(t, ns, "db", 3, 90*time.Second)

	if err := kubectl("scale", "-n", ns, "mysqlcluster/db", "--replicas=5").run(); err != nil {
		t.Fatalf("kubectl scale: %v", err)
	}
	if got := getCluster(t, ns, "db").Spec.Members; got != 5 {
		t.Fatalf("spec.members = %d after kubectl scale", got)
	}
	waitReplicas(t, ns, 5)
	waitHealthy(t, ns, "db", 5, 90*time.Second)
	if out, err := kubectl("get", "-n", ns, "--raw", fmt.Sprintf("/apis/mysqlop.io/v1alpha1/namespaces/%s/mysqlclusters/db/scale", ns)).output(); err != nil ||
		!strings.Contains(out, `"replicas":5`) || !strings.Contains(out, "mysqlop.io/cluster=db") {
		t.Errorf("scale subresource: %v %s", err, out)
	}

	editCluster(t, ns, "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Members = 2 })
	waitReplicas(t, ns, 2)
	waitHealthy(t, ns, "db", 2, 90*time.Second)
}

func waitReplicas(t *testing.T, ns string, n int32) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("StatefulSet at %d replicas", n), func(ctx context.Context) (bool, error) {
		s, err := cp.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		return err == nil && *s.Spec.Replicas == n, nil
	})
}

func TestUpgradeRollsAndDowngradeIsRefused(t *testing.T) {
	ns := cp.NewNamespace(t)
	startOperator(t, ns)
	createCluster(t, newCluster(ns, "db", 3, "10.11.6"))
	waitHealthy(t, ns, "db", 3, 90*time.Second)

	editCluster(t, ns, "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Version = "10.11.8" })
	eventually(t, 180*time.Second, "every pod on 10.11.8", func(ctx context.Context) (bool, error) {
		pods, err := cp.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != 3 {
			return false, nil
		}
		for _, p := range pods.Items {
			if serverImage(&p) != "docker.io/library/mariadb:10.11.8" {
				return false, nil
			}
		}
		return true, nil
	})
	// Healthy can be read a moment before the status that records the new version.
	eventually(t, 30*time.Second, "Healthy on currentVersion 10.11.8", func(context.Context) (bool, error) {
		c := waitHealthy(t, ns, "db", 3, 90*time.Second)
		return c.Status.CurrentVersion == "10.11.8", nil
	})
	if _, ok := event(t, ns, "db", "VersionUpgraded"); !ok {
		t.Error("no VersionUpgraded event")
	}

	editCluster(t, ns, "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Version = "10.6.1" })
	eventually(t, 30*time.Second, "downgrade refused", func(ctx context.Context) (bool, error) {
		c, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionAccepted)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == "DowngradeRefused", nil
	})
	if msg, ok := event(t, ns, "db", "DowngradeRefused"); !ok || !strings.Contains(msg, "10.6.1") {
		t.Errorf("DowngradeRefused event: %q", msg)
	}
	sts, _ := cp.Kube.AppsV1().StatefulSets(ns).Get(context.Background(), "db", metav1.GetOptions{})
	if img := sts.Spec.Template.Spec.Containers[0].Image; img != "docker.io/library/mariadb:10.11.8" {
		t.Errorf("a refused downgrade changed the image to %s", img)
	}
}

func serverImage(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name == resources.ContainerMySQL {
			return c.Image
		}
	}
	return ""
}

func agentImage(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name == resources.ContainerAgent {
			return c.Image
		}
	}
	return ""
}

func TestNewOperatorVersionUpdatesAgentInPlace(t *testing.T) {
	ns := cp.NewNamespace(t)
	stop := startOperator(t, ns)
	createCluster(t, newCluster(ns, "db", 3, "10.11.6"))
	waitHealthy(t, ns, "db", 3, 90*time.Second)
	ctx := context.Background()
	before, err := cp.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(before.Items) != 3 {
		t.Fatalf("pods: %v", err)
	}
	stop()
	// Operator builds before 2026-12-07 also labelled the cluster object with their version.
	if c := getCluster(t, ns, "db"); c.Labels[v1alpha1.LabelOperatorVersion] != "" {
		t.Errorf("cluster labelled %v: the operator build is status.operatorVersion", c.Labels)
	}
	legacy := []byte(`{"metadata":{"labels":{"` + v1alpha1.LabelOperatorVersion + `":"v0.0.1-old"}}}`)
	if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Patch(ctx, "db", types.MergePatchType, legacy, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	startOperator(t, ns, func(o *options.Options) {
		o.OperatorVersion = "v0.0.2-test"
		o.AgentImage = "mysqlop/mysql-agent:v0.0.2-test"
	})
	eventually(t, 60*time.Second, "agents moved to the new image", func(ctx context.Context) (bool, error) {
		pods, err := cp.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			if agentImage(&p) != "mysqlop/mysql-agent:v0.0.2-test" || p.Labels[v1alpha1.LabelOperatorVersion] != "v0.0.2-test" {
				return false, nil
			}
		}
		return len(pods.Items) == 3, nil
	})
	for _, old := range before.Items {
		p, err := cp.Kube.CoreV1().Pods(ns).Get(ctx, old.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.UID != old.UID {
			t.Errorf("pod %s was recreated: an operator upgrade must not restart mysqld", p.Name)
		}
		if serverImage(p) != serverImage(&old) {
			t.Errorf("pod %s server image %s -> %s", p.Name, serverImage(&old), serverImage(p))
		}
	}
	sts, _ := cp.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
	if sts.Labels[v1alpha1.LabelOperatorVersion] != "v0.0.2-test" {
		t.Errorf("labels: statefulset %v", sts.Labels)
	}
	eventually(t, 30*time.Second, "status.operatorVersion", func(ctx context.Context) (bool, error) {
		return getCluster(t, ns, "db").Status.OperatorVersion == "v0.0.2-test", nil
	})
	if c := getCluster(t, ns, "db"); c.Labels[v1alpha1.LabelOperatorVersion] != "" {
		t.Errorf("cluster labels %v: the old build's operator-version label stayed", c.Labels)
	}
	// The clusters a build runs are found by the status field the CRD makes selectable.
	for selector, want := range map[string]int{
		"status.operatorVersion=v0.0.2-test":                      1,
		"status.operatorVersion!=v0.0.2-test":                     0,
		"status.phase=Healthy,status.operatorVersion=v0.0.2-test": 1,
	} {
		list, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			t.Errorf("--field-selector %s: %v", selector, err)
		} else if len(list.Items) != want {
			t.Errorf("--field-selector %s: %d clusters, want %d", selector, len(list.Items), want)
		}
	}
	if _, ok := event(t, ns, "db", "AgentUpdated"); !ok {
		t.Error("no AgentUpdated event")
	}
}

func TestForeignServiceIsLeftAlone(t *testing.T) {
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db-primary", Namespace: ns, Labels: map[string]string{"owner": "someone-else"}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "theirs"}, Ports: []corev1.ServicePort{{Port: 80}}},
	}
	foreign, err := cp.Kube.CoreV1().Services(ns).Create(ctx, foreign, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startOperator(t, ns)
	createCluster(t, newCluster(ns, "db", 1, "10.11.6"))
	eventually(t, 30*time.Second, "Synced=False/ErrResourceExists", func(ctx context.Context) (bool, error) {
		c := getCluster(t, ns, "db")
		cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionSynced)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == "ErrResourceExists", nil
	})
	if msg, ok := event(t, ns, "db", "ErrResourceExists"); !ok || !strings.Contains(msg, "db-primary") {
		t.Errorf("ErrResourceExists event: %q", msg)
	}
	// The rest of the cluster is still built; the foreign Service is exactly as it was.
	waitHealthy(t, ns, "db", 1, 90*time.Second)
	got, _ := cp.Kube.CoreV1().Services(ns).Get(ctx, "db-primary", metav1.GetOptions{})
	if got.ResourceVersion != foreign.ResourceVersion || len(got.OwnerReferences) != 0 {
		t.Errorf("foreign service was modified: %+v", got.ObjectMeta)
	}
}

// A credentials Secret someone else made is never used: the cluster stops before any pod
// could mount it, and starts with credentials of its own once that Secret is gone.
func TestForeignCredentialsSecretStopsTheCluster(t *testing.T) {
	ns := cp.NewNamespace(t)
	ctx := context.Background()
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db-credentials", Namespace: ns},
		Data:       map[string][]byte{resources.SecretKeyOperatorPassword: []byte("chosen-by-someone-else")},
	}
	if _, err := cp.Kube.CoreV1().Secrets(ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startOperator(t, ns)
	createCluster(t, newCluster(ns, "db", 1, "10.11.6"))
	eventually(t, 30*time.Second, "Synced=False/ErrResourceExists", func(ctx context.Context) (bool, error) {
		cond := meta.FindStatusCondition(getCluster(t, ns, "db").Status.Conditions, v1alpha1.ConditionSynced)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == "ErrResourceExists" && strings.Contains(cond.Message, "db-credentials"), nil
	})
	if msg, ok := event(t, ns, "db", "ErrResourceExists"); !ok || !strings.Contains(msg, "db-credentials") {
		t.Errorf("ErrResourceExists event: %q", msg)
	}
	// The other children are built in the same round as the Secret's conflict is found.
	eventually(t, 30*time.Second, "the primary Service", func(ctx context.Context) (bool, error) {
		_, err := cp.Kube.CoreV1().Services(ns).Get(ctx, "db-primary", metav1.GetOptions{})
		return err == nil, nil
	})
	if _, err := cp.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a StatefulSet was created beside a foreign credentials Secret: %v", err)
	}
	got, _ := cp.Kube.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
	if len(got.OwnerReferences) != 0 || len(got.Data) != 1 {
		t.Errorf("foreign Secret was modified: owners %v, %d keys", got.OwnerReferences, len(got.Data))
	}

	// Once it is gone, the next reconcile (here: a change to the cluster) makes the cluster's own.
	if err := cp.Kube.CoreV1().Secrets(ns).Delete(ctx, "db-credentials", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"annotations":{"test/touch":"1"}}}`)
	if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Patch(ctx, "db", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, ns, "db", 1, 90*time.Second)
	own, err := cp.Kube.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
	if err != nil || metav1.GetControllerOf(own) == nil || string(own.Data[resources.SecretKeyOperatorPassword]) == "chosen-by-someone-else" {
		t.Fatalf("credentials Secret after the foreign one went: %v", err)
	}
}

func TestOperatorRestartedMidwayConverges(t *testing.T) {
	ns := cp.NewNamespace(t)
	stop := startOperator(t, ns)
	createCluster(t, newCluster(ns, "db", 3, "10.11.6"))
	// Stop as soon as the first child exists: the rest is half done.
	eventually(t, 30*time.Second, "first child", func(ctx context.Context) (bool, error) {
		_, err := cp.Kube.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
		return err == nil, nil
	})
	stop()
	secretBefore, _ := cp.Kube.CoreV1().Secrets(ns).Get(context.Background(), "db-credentials", metav1.GetOptions{})

	startOperator(t, ns)
	c := waitHealthy(t, ns, "db", 3, 90*time.Second)
	if !meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionSynced) {
		t.Errorf("not Synced after restart: %+v", c.Status.Conditions)
	}
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(map[string]string{v1alpha1.LabelCluster: "db", v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}).String()}
	counts := map[string]int{}
	if l, err := cp.Kube.CoreV1().Secrets(ns).List(ctx, sel); err == nil {
		counts["secrets"] = len(l.Items)
	}
	if l, err := cp.Kube.CoreV1().ConfigMaps(ns).List(ctx, sel); err == nil {
		counts["configmaps"] = len(l.Items)
	}
	if l, err := cp.Kube.CoreV1().Services(ns).List(ctx, sel); err == nil {
		counts["services"] = len(l.Items)
	}
	if l, err := cp.Kube.AppsV1().StatefulSets(ns).List(ctx, sel); err == nil {
		counts["statefulsets"] = len(l.Items)
	}
	if l, err := cp.Kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, sel); err == nil {
		counts["pdbs"] = len(l.Items)
	}
	// Secrets: credentials, the CA, the servers' certificate and the CA bundle (TLS is on by default).
	want := map[string]int{"secrets": 4, "configmaps": 1, "services": 3, "statefulsets": 1, "pdbs": 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("children after restart %v, want %v", counts, want)
	}
	secretAfter, _ := cp.Kube.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
	for k, v := range secretBefore.Data {
		if string(secretAfter.Data[k]) != string(v) {
			t.Errorf("credential %s changed across the restart", k)
		}
	}
	list, _ := cp.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "MySQLCluster" {
			t.Errorf("warning event %s: %s", e.Reason, e.Message)
		}
	}
}

// Two operator processes (the real binary) elect a leader; only the leader reconciles, and
// SIGKILL of the leader hands over within the lease.
func TestLeaderElectionHandsOver(t *testing.T) {
	ns := cp.NewNamespace(t)
	const lease, renew, retry = 4 * time.Second, 3 * time.Second, 500 * time.Millisecond
	start := func(id string) *exec.Cmd {
		cmd := exec.Command(operatorBinary, "--kubeconfig", cp.Kubeconfig, "--namespace", ns,
			"--leader-elect", "--leader-elect-namespace", ns, "--leader-elect-identity", id,
			"--leader-elect-lease-duration", lease.String(), "--leader-elect-renew-deadline", renew.String(),
			"--leader-elect-retry-period", retry.String(),
			"--agent-image", "mysqlop/mysql-agent:"+id, "--metrics-addr", "0", "--health-addr", "0", "--clustering=false")
		if err := framework.Spawn(cmd); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	procs := map[string]*exec.Cmd{"a": start("a"), "b": start("b")}
	holder := func(ctx context.Context) string {
		l, err := cp.Kube.CoordinationV1().Leases(ns).Get(ctx, "mysql-operator", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	var leader string
	eventually(t, 30*time.Second, "a leader", func(ctx context.Context) (bool, error) {
		leader = holder(ctx)
		return leader != "", nil
	})
	other := map[string]string{"a": "b", "b": "a"}[leader]

	createCluster(t, newCluster(ns, "db", 1, "10.11.6"))
	agentOf := func(ctx context.Context) string {
		s, err := cp.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		for _, c := range s.Spec.Template.Spec.Containers {
			if c.Name == resources.ContainerAgent {
				return c.Image
			}
		}
		return ""
	}
	eventually(t, 30*time.Second, "leader reconciled", func(ctx context.Context) (bool, error) {
		return agentOf(ctx) == "mysqlop/mysql-agent:"+leader, nil
	})
	// The standby must not fight over the StatefulSet.
	time.Sleep(2 * lease)
	if got := agentOf(context.Background()); got != "mysqlop/mysql-agent:"+leader {
		t.Fatalf("while %s leads, the StatefulSet has agent %s", leader, got)
	}

	killed := time.Now()
	if err := procs[leader].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*lease, "handover", func(ctx context.Context) (bool, error) {
		return holder(ctx) == other && agentOf(ctx) == "mysqlop/mysql-agent:"+other, nil
	})
	took := time.Since(killed)
	t.Logf("SIGKILL of leader %s: %s reconciled after %v (lease %v)", leader, other, took.Round(10*time.Millisecond), lease)
	if took > lease+2*time.Second+2*retry {
		t.Errorf("handover took %v, want within the lease (%v) plus a retry", took, lease)
	}
}

// kubectl runs the control plane's kubectl binary.
type kubectlCmd struct{ cmd *exec.Cmd }

func kubectl(args ...string) *kubectlCmd {
	return &kubectlCmd{exec.Command(filepath.Join(framework.BinDir(), "kubectl"), append([]string{"--kubeconfig", cp.Kubeconfig}, args...)...)}
}

func (k *kubectlCmd) stdin(s string) *kubectlCmd { k.cmd.Stdin = strings.NewReader(s); return k }

func (k *kubectlCmd) output() (string, error) {
	out, err := k.cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %v: %w: %s", k.cmd.Args[3:], err, out)
	}
	return string(out), nil
}

func (k *kubectlCmd) run() error { _, err := k.output(); return err }
