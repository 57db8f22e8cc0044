package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/options"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

// The operator's clustering, end to end through Kubernetes: kwok pods stand for the members,
// three real MariaDB servers stand for their mysqld (the operator dials them through its
// member-address hook). Bootstrap sets the role labels the Services select on; a switchover
// requested by annotation and a failover after SIGKILL move the labels, the Services'
// endpoints, the status and the conditions, with events.
func TestClusteringDrivesRolesServicesAndFailover(t *testing.T) {
	ns, servers := clusterOnServers(t, 3)
	ctx := context.Background()

	waitRoles(t, ns, "db-0", "db-1", "db-2")
	// The role labels come first; the phase follows once the kwok pods report Ready too.
	eventually(t, 30*time.Second, "Healthy after bootstrap", func(context.Context) (bool, error) {
		c := getCluster(t, ns, "db")
		return meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionHealthy) && c.Status.Phase == v1alpha1.ClusterHealthy, nil
	})
	eventually(t, 10*time.Second, "db-0 a writable semi-sync primary", func(ctx context.Context) (bool, error) {
		st, err := servers[0].Admin().Status(ctx)
		return err == nil && !st.ReadOnly && st.SemiSyncSourceActive, nil
	})
	waitEndpoints(t, ns, "db-primary", "db-0")
	waitEndpoints(t, ns, "db-replicas", "db-1", "db-2")
	if err := mariadb.CreateApp(ctx, servers[0].Admin().DB); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "instances report GTIDs", func(ctx context.Context) (bool, error) {
		c := getCluster(t, ns, "db")
		for _, in := range c.Status.Instances {
			if in.GTIDExecuted == "" || !in.Ready {
				return false, nil
			}
		}
		return len(c.Status.Instances) == 3, nil
	})

	// A switchover requested through the annotation.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"db-2"}}}`, v1alpha1.AnnotationSwitchoverTo)
	if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Patch(ctx, "db", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRoles(t, ns, "db-2", "db-0", "db-1")
	eventually(t, 30*time.Second, "switchover request cleared", func(ctx context.Context) (bool, error) {
		_, still := getCluster(t, ns, "db").Annotations[v1alpha1.AnnotationSwitchoverTo]
		return !still, nil
	})
	if _, ok := event(t, ns, "db", "SwitchOver"); !ok {
		t.Error("no SwitchOver event")
	}
	waitEndpoints(t, ns, "db-primary", "db-2")
	for i, wantRO := range []bool{true, true, false} {
		if st, err := servers[i].Admin().Status(ctx); err != nil || st.ReadOnly != wantRO {
			t.Errorf("server %d read-only %v (want %v): %v", i, st != nil && st.ReadOnly, wantRO, err)
		}
	}

	// SIGKILL of the primary's server: a replica is promoted and everything follows.
	servers[2].Kill()
	var newPrimary string
	eventually(t, 60*time.Second, "failover", func(ctx context.Context) (bool, error) {
		c := getCluster(t, ns, "db")
		newPrimary = c.Status.Primary
		return newPrimary == "db-0" || newPrimary == "db-1", nil
	})
	if msg, ok := event(t, ns, "db", "FailOver"); !ok {
		t.Error("no FailOver event")
	} else {
		t.Logf("FailOver event: %s", msg)
	}
	waitEndpoints(t, ns, "db-primary", newPrimary)
	eventually(t, 30*time.Second, "the dead member out of the Services and Degraded", func(ctx context.Context) (bool, error) {
		p, err := cp.Kube.CoreV1().Pods(ns).Get(ctx, "db-2", metav1.GetOptions{})
		c := getCluster(t, ns, "db")
		return err == nil && p.Labels[v1alpha1.LabelRole] == "" &&
			meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionDegraded) && c.Status.Phase == v1alpha1.ClusterDegraded, nil
	})
}

// clusterOnServers starts n real MariaDB servers and an operator that dials them for the
// members of cluster "db" (n members, kwok pods), and gives the cluster's Secret the servers'
// passwords (the operator keeps existing values).
func clusterOnServers(t *testing.T, n int, mutate ...func(*options.Options)) (string, []*mariadb.Server) {
	t.Helper()
	servers := mariadb.Start(t, n, mariadb.Options{})
	return clusterOn(t, servers, mutate...), servers
}

// testAgentToken is the agent token tests put into clusters' credentials Secrets.
const testAgentToken = "test-agent-token"

// clusterOn is clusterOnServers with servers already running.
func clusterOn(t *testing.T, servers []*mariadb.Server, mutate ...func(*options.Options)) string {
	t.Helper()
	n := len(servers)
	ns := cp.NewNamespace(t)
	startOperator(t, ns, append([]func(*options.Options){func(o *options.Options) {
		o.Clustering = true
		o.ClusteringInterval = 300 * time.Millisecond
		o.MemberAddress = func(_, _, pod string) (string, int) {
			i, err := agentapi.Ordinal(pod)
			if err != nil || i >= len(servers) {
				return "127.0.0.1", 1
			}
			return "127.0.0.1", servers[i].Port
		}
	}}, mutate...)...)
	c := newCluster(ns, "db", int32(n), "10.11.6")
	// The test's servers have no certificate: TLS is tested with real servers in pkg/mysql and
	// the e2e suite, and the certificates' life cycle in tls_test.go.
	c.Spec.TLS.Disabled = true
	createCluster(t, c)
	eventually(t, 30*time.Second, "credentials Secret", func(ctx context.Context) (bool, error) {
		s, err := cp.Kube.CoreV1().Secrets(ns).Get(ctx, "db-credentials", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		s.Data[resources.SecretKeyOperatorPassword] = []byte(mariadb.AdminPassword)
		s.Data[resources.SecretKeyReplicationPassword] = []byte(mariadb.ReplPassword)
		s.Data[resources.SecretKeyAgentToken] = []byte(testAgentToken)
		pair, err := testAgentTLS()
		if err != nil {
			t.Fatal(err)
		}
		s.Data[resources.SecretKeyAgentTLSCert], s.Data[resources.SecretKeyAgentTLSKey] = pair[0], pair[1]
		_, err = cp.Kube.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		return err == nil, nil
	})
	return ns
}

// A one-member cluster runs without semi-sync: with it, nothing could ever acknowledge a commit.
func TestSingleMemberClusterAcceptsWrites(t *testing.T) {
	ns, servers := clusterOnServers(t, 1)
	waitRoles(t, ns, "db-0")
	waitHealthy(t, ns, "db", 1, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := mariadb.CreateApp(ctx, servers[0].Admin().DB); err != nil {
		t.Fatalf("a write to the single member did not commit: %v", err)
	}
}

// waitRoles waits until primary carries the primary label and replicas the replica label, and
// the status names the primary.
func waitRoles(t *testing.T, ns, primary string, replicas ...string) {
	t.Helper()
	eventually(t, 60*time.Second, "roles: primary "+primary, func(ctx context.Context) (bool, error) {
		for _, want := range append([]string{primary}, replicas...) {
			p, err := cp.Kube.CoreV1().Pods(ns).Get(ctx, want, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			role := v1alpha1.RoleReplica
			if want == primary {
				role = v1alpha1.RolePrimary
			}
			if p.Labels[v1alpha1.LabelRole] != role {
				return false, nil
			}
		}
		return getCluster(t, ns, "db").Status.Primary == primary, nil
	})
}

// waitEndpoints waits until the Service's ready endpoints are exactly the given pods.
func waitEndpoints(t *testing.T, ns, service string, pods ...string) {
	t.Helper()
	slices.Sort(pods)
	eventually(t, 30*time.Second, service+" endpoints "+fmt.Sprint(pods), func(ctx context.Context) (bool, error) {
		list, err := cp.Kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err != nil {
			return false, nil
		}
		var got []string
		for _, s := range list.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
					got = append(got, e.TargetRef.Name)
				}
			}
		}
		slices.Sort(got)
		return slices.Equal(got, pods), nil
	})
}

// Scaling down never removes the primary: with the primary on the highest ordinal, a
// scale-down first switches over to a member that stays, then shrinks the StatefulSet.
func TestScaleDownSwitchesOverFirst(t *testing.T) {
	ns, servers := clusterOnServers(t, 3)
	waitRoles(t, ns, "db-0", "db-1", "db-2")
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"db-2"}}}`, v1alpha1.AnnotationSwitchoverTo)
	if _, err := mysql.MysqlopV1alpha1().MySQLClusters(ns).Patch(context.Background(), "db", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRoles(t, ns, "db-2", "db-0", "db-1")

	editCluster(t, ns, "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Members = 2 })
	eventually(t, 60*time.Second, "scaled to 2 with the primary kept", func(ctx context.Context) (bool, error) {
		sts, err := cp.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		// The server itself says whether db-2 is still the primary: status.primary is written
		// after the StatefulSet in the same reconcile, so it may lag for a moment.
		if *sts.Spec.Replicas < 3 {
			if st, err := servers[2].Admin().Status(ctx); err == nil && !st.ReadOnly {
				return false, fmt.Errorf("the StatefulSet shrank to %d while db-2 is the writable primary", *sts.Spec.Replicas)
			}
		}
		primary := getCluster(t, ns, "db").Status.Primary
		return *sts.Spec.Replicas == 2 && (primary == "db-0" || primary == "db-1"), nil
	})
	if _, ok := event(t, ns, "db", "SwitchOver"); !ok {
		t.Error("no SwitchOver event")
	}
}
