package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// NewNamespace creates a namespace for t, waits for its default ServiceAccount (pods need it)
// and deletes the namespace when t ends.
func (cp *ControlPlane) NewNamespace(t testing.TB) string {
	t.Helper()
	return cp.newNamespace(t, nil)
}

// RestrictedLabels make the API server's Pod Security admission enforce the restricted
// profile in a namespace: a pod that is not hardened is refused at creation.
var RestrictedLabels = map[string]string{
	"pod-security.kubernetes.io/enforce":         "restricted",
	"pod-security.kubernetes.io/enforce-version": "latest",
}

// NewRestrictedNamespace is NewNamespace with RestrictedLabels.
func (cp *ControlPlane) NewRestrictedNamespace(t testing.TB) string {
	t.Helper()
	return cp.newNamespace(t, RestrictedLabels)
}

func (cp *ControlPlane) newNamespace(t testing.TB, labels map[string]string) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + "-" + hex.EncodeToString(b)
	ctx := context.Background()
	if _, err := cp.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cp.Kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cp.Kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("namespace %s has no default service account: %v", name, err)
	}
	return name
}
