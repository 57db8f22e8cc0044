package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// KwokNodeAnnotation marks the nodes kwok manages.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

func (cp *ControlPlane) startKwok(ctx context.Context, o Options) error {
	cidr := o.PodCIDR
	if cidr == "" {
		cidr = "10.244.0.0/16"
	}
	if err := cp.run("kwok", "--kubeconfig", cp.Kubeconfig,
		"--config", filepath.Join(BinDir(), "kwok-stages.yaml"),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector", KwokNodeAnnotation+"=fake",
		"--cidr", cidr, "--node-ip", "10.243.0.1"); err != nil {
		return err
	}
	for i := range o.KwokNodes {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("kwok-node-%d", i),
				Annotations: map[string]string{KwokNodeAnnotation: "fake"},
				Labels:      map[string]string{corev1.LabelHostname: fmt.Sprintf("kwok-node-%d", i), "type": "kwok"},
			},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"),
				corev1.ResourcePods: resource.MustParse("5000"),
			}, Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"),
				corev1.ResourcePods: resource.MustParse("5000"),
			}},
		}
		if _, err := cp.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create kwok node: %w", err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		nodes, err := cp.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= o.KwokNodes, nil
	})
	if err != nil {
		return fmt.Errorf("kwok nodes not ready: %w", err)
	}
	return nil
}
