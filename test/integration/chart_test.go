package integration

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	reasons "github.com/mysqlop/mysql-operator/pkg/events"
	"github.com/mysqlop/mysql-operator/pkg/options"
	"github.com/mysqlop/mysql-operator/test/framework"
)

func helm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(framework.RepoRoot(), "_output", "bin", "helm"), append(args, "--kubeconfig", cp.Kubeconfig)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The Helm chart's RBAC is enough for every controller, in both scopes: the operator runs as
// the chart's ServiceAccount (impersonated, against an RBAC-enforcing API server) and
// reconciles a cluster and a user, with leader election through the chart's Lease Role.
func TestHelmChartRBACIsEnough(t *testing.T) {
	chart := filepath.Join(framework.RepoRoot(), "contrib", "charts", "mysql-operator")
	for _, tc := range []struct {
		name string
		set  func(watched string) []string
	}{
		{"cluster", func(string) []string { return nil }},
		{"namespaced", func(watched string) []string {
			return []string{"--set", "rbac.scope=namespaced", "--set", "watchNamespaces={" + watched + "}"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Both namespaces enforce the restricted Pod Security profile: the operator's pod
			// and the members' pods are created only if they are hardened.
			opNS, watched := cp.NewRestrictedNamespace(t), cp.NewRestrictedNamespace(t)
			release := "mysqlop-" + tc.name
			helm(t, append([]string{"install", release, chart, "--namespace", opNS}, tc.set(watched)...)...)
			t.Cleanup(func() { helm(t, "uninstall", release, "--namespace", opNS) })
			var d *appsv1.Deployment
			eventually(t, 60*time.Second, "the chart's operator pod admitted in a restricted namespace", func(ctx context.Context) (bool, error) {
				var err error
				d, err = cp.Kube.AppsV1().Deployments(opNS).Get(ctx, release+"-mysql-operator", metav1.GetOptions{})
				return err == nil && d.Status.Replicas >= 1, nil
			})
			// The operator below runs with the flags the chart gives it, and they name its pods.
			npFlag := "--network-policy-operator-labels=app.kubernetes.io/name=mysql-operator,app.kubernetes.io/instance=" + release
			if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, npFlag) {
				t.Errorf("the chart's operator args %v lack %s", d.Spec.Template.Spec.Containers[0].Args, npFlag)
			}
			if l := d.Spec.Template.Labels; l["app.kubernetes.io/name"] != "mysql-operator" || l["app.kubernetes.io/instance"] != release {
				t.Errorf("operator pod labels %v", l)
			}

			cfg := rest.CopyConfig(cp.Config)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + opNS + ":" + release + "-mysql-operator"}
			startOperatorAs(t, cfg, watched, func(o *options.Options) {
				o.LeaderElect = true
				o.LeaderElectNamespace, o.LeaderElectID = opNS, release+"-mysql-operator"
				// As the chart's Deployment passes them (networkPolicy.enabled is the default).
				o.NetworkPolicyOperatorLabels = "app.kubernetes.io/name=mysql-operator,app.kubernetes.io/instance=" + release
				o.OperatorNamespace = opNS
			})
			createCluster(t, newCluster(watched, "db", 3, "10.11.6"))
			waitHealthy(t, watched, "db", 3, 60*time.Second)
			np, err := cp.Kube.NetworkingV1().NetworkPolicies(watched).Get(context.Background(), "db", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the cluster's NetworkPolicy: %v", err)
			}
			if from := np.Spec.Ingress[1].From[1]; from.NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != opNS || from.PodSelector.MatchLabels["app.kubernetes.io/instance"] != release {
				t.Errorf("the agent port admits %+v, not the chart's operator pods", from)
			}
			if _, ok := event(t, watched, "db", reasons.Created.Reason); !ok {
				t.Error("no Created event: the ServiceAccount cannot record events")
			}
			ctx := context.Background()
			if _, err := mysql.MysqlopV1alpha1().MySQLUsers(watched).Create(ctx, newUser(watched, "app", "app-password"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitUserReady(t, watched, "app", v1alpha1.ReasonSecretNotFound)
			putSecret(t, watched, "app-password", "x-Pa55")
			// The per-Secret watch needs list and watch on Secrets; the cluster has no primary
			// with clustering off, so the user moves on to waiting for it.
			waitUserReady(t, watched, "app", "ClusterNotReady")
			u, err := mysql.MysqlopV1alpha1().MySQLUsers(watched).Get(ctx, "app", metav1.GetOptions{})
			if err != nil || !meta.IsStatusConditionFalse(u.Status.Conditions, v1alpha1.ConditionReady) || len(u.Finalizers) != 1 {
				t.Fatalf("user %+v: %v", u, err)
			}
			// Schedules create and (Replace) delete backups; spec.bootstrap creates a restore.
			sched := &v1alpha1.MySQLBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: watched},
				Spec: v1alpha1.MySQLBackupScheduleSpec{Schedule: "@every 2s", ConcurrencyPolicy: v1alpha1.ConcurrencyReplace,
					BackupTemplate: v1alpha1.MySQLBackupSpec{ClusterRef: v1alpha1.ClusterReference{Name: "db"},
						Storage: v1alpha1.BackupStorage{S3: v1alpha1.S3Storage{Bucket: "bkt", CredentialsSecretRef: v1alpha1.LocalReference{Name: "none"}}}}}}
			if _, err := mysql.MysqlopV1alpha1().MySQLBackupSchedules(watched).Create(ctx, sched, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			eventually(t, 30*time.Second, "scheduled backups created and replaced", func(ctx context.Context) (bool, error) {
				list, err := mysql.MysqlopV1alpha1().MySQLBackups(watched).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, nil
				}
				for _, b := range list.Items {
					seen[b.Name] = true
				}
				return len(seen) >= 3 && len(list.Items) < len(seen), nil
			})
			boot := newCluster(watched, "boot", 1, "10.11.6")
			boot.Spec.Bootstrap = &v1alpha1.BootstrapSpec{FromBackup: v1alpha1.LocalReference{Name: "missing"}}
			createCluster(t, boot)
			eventually(t, 30*time.Second, "bootstrap restore created", func(ctx context.Context) (bool, error) {
				_, err := mysql.MysqlopV1alpha1().MySQLRestores(watched).Get(ctx, "boot-bootstrap", metav1.GetOptions{})
				return err == nil && getCluster(t, watched, "boot").Annotations["mysqlop.io/bootstrap-restore"] == "boot-bootstrap", nil
			})
			lease, err := cp.Kube.CoordinationV1().Leases(opNS).Get(ctx, release+"-mysql-operator", metav1.GetOptions{})
			if err != nil || lease.Spec.HolderIdentity == nil {
				t.Fatalf("leader election Lease: %+v %v", lease, err)
			}
		})
	}
}

// The plain manifests rendered from the chart are valid for the API server.
func TestRenderedManifestsApply(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mysql-operator"}}
	if _, err := cp.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Kube.CoreV1().Namespaces().Delete(context.Background(), "mysql-operator", metav1.DeleteOptions{})
	})
	out, err := kubectl("apply", "--dry-run=server", "-f", filepath.Join(framework.RepoRoot(), "contrib", "manifests", "mysql-operator.yaml")).output()
	if err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, out)
	}
	for _, kind := range []string{"serviceaccount/", "clusterrole.", "clusterrolebinding.", "role.", "rolebinding.", "deployment.", "service/"} {
		if !strings.Contains("\n"+out, "\n"+kind) {
			t.Errorf("no %s in the rendered manifests:\n%s", kind, out)
		}
	}
}
