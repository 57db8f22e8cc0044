package service

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

func TestServices(t *testing.T) {
	c := testutil.Cluster("ns", "db")
	h := NewHeadless(c, "v1")
	if h.Spec.ClusterIP != corev1.ClusterIPNone || !h.Spec.PublishNotReadyAddresses {
		t.Errorf("headless service: clusterIP=%q publishNotReady=%v", h.Spec.ClusterIP, h.Spec.PublishNotReadyAddresses)
	}
	if _, ok := h.Spec.Selector[v1alpha1.LabelRole]; ok {
		t.Error("headless service must select every member, not a role")
	}
	for _, tc := range []struct {
		svc  *corev1.Service
		name string
		role string
	}{
		{NewPrimary(c, "v1"), "db-primary", "primary"},
		{NewReplicas(c, "v1"), "db-replicas", "replica"},
	} {
		if tc.svc.Name != tc.name || tc.svc.Spec.Selector[v1alpha1.LabelRole] != tc.role || tc.svc.Spec.Selector[v1alpha1.LabelCluster] != "db" {
			t.Errorf("%s: name %q selector %v", tc.name, tc.svc.Name, tc.svc.Spec.Selector)
		}
		if len(tc.svc.Spec.Ports) != 1 || tc.svc.Spec.Ports[0].Port != resources.PortMySQL {
			t.Errorf("%s: ports %v", tc.name, tc.svc.Spec.Ports)
		}
	}
}
