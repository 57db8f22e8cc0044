package localkubelet

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// registerNodes creates (or takes over) the runtime's nodes, Ready.
func (r *Runtime) registerNodes(ctx context.Context) error {
	for _, name := range r.opts.Nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
			"mysqlop.io/local-kubelet": r.opts.Instance,
		}}}
		_, err := r.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("register node %s: %w", name, err)
		}
		if err := r.updateNodeStatus(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runtime) updateNodeStatus(ctx context.Context, name string) error {
	n, err := r.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", name, err)
	}
	n = n.DeepCopy()
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "local kubelet is serving", LastHeartbeatTime: now, LastTransitionTime: now}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready.LastTransitionTime = c.LastTransitionTime
		}
	}
	n.Status.Capacity, n.Status.Allocatable = capacity, capacity
	n.Status.Conditions = []corev1.NodeCondition{ready}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: r.gateway.String()}, {Type: corev1.NodeHostName, Address: name}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = r.apiPort
	n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.37.2-local", OperatingSystem: "linux", Architecture: "amd64",
		ContainerRuntimeVersion: "local://0"}
	if _, err := r.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of node %s: %w", name, err)
	}
	return nil
}

// heartbeat renews the nodes' leases every 10 s and their status every minute, as a kubelet
// does, so that the node lifecycle controller keeps them Ready.
func (r *Runtime) heartbeat(ctx context.Context) {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		for _, name := range r.opts.Nodes {
			if err := r.renewLease(ctx, name); err != nil && ctx.Err() == nil {
				klog.ErrorS(err, "Renew node lease", "node", name)
			}
			if i%6 == 5 {
				if err := r.updateNodeStatus(ctx, name); err != nil && ctx.Err() == nil {
					klog.ErrorS(err, "Update node status", "node", name)
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (r *Runtime) renewLease(ctx context.Context, name string) error {
	leases := r.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l = l.DeepCopy()
	l.Spec.RenewTime = &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}
