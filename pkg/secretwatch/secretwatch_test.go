package secretwatch

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func TestReferenceGetChangeForget(t *testing.T) {
	kube := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pw"},
		Data:       map[string][]byte{"password": []byte("one")},
	})
	changed := make(chan cache.ObjectName, 10)
	w := New(kube, func(s cache.ObjectName) { changed <- s })
	stop := make(chan struct{})
	defer close(stop)
	w.Start(stop)
	pw := cache.ObjectName{Namespace: "ns", Name: "pw"}
	ctx := context.Background()

	if _, _, err := w.Get(ctx, pw); err == nil {
		t.Fatal("Get of an unreferenced Secret must fail")
	}
	w.Reference("user/a", pw)
	w.Reference("user/b", pw)
	if w.Watched() != 1 {
		t.Fatalf("watched %d, want one watch for two referrers", w.Watched())
	}
	s, found, err := w.Get(ctx, pw)
	if err != nil || !found || string(s.Data["password"]) != "one" {
		t.Fatalf("Get = %v %v %v", s, found, err)
	}
	wait := func(what string) {
		t.Helper()
		select {
		case got := <-changed:
			if got != pw {
				t.Fatalf("%s: change of %v", what, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no change reported", what)
		}
	}
	wait("initial add")
	s = s.DeepCopy()
	s.Data["password"] = []byte("two")
	if _, err := kube.CoreV1().Secrets("ns").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("update")

	w.Forget("user/a")
	if w.Watched() != 1 {
		t.Fatal("a Secret still referenced by user/b stopped being watched")
	}
	w.Reference("user/b", cache.ObjectName{Namespace: "ns", Name: "missing"})
	if w.Watched() != 1 {
		t.Fatalf("watched %d after user/b moved to another Secret, want 1", w.Watched())
	}
	if _, found, err := w.Get(ctx, cache.ObjectName{Namespace: "ns", Name: "missing"}); err != nil || found {
		t.Fatalf("missing Secret: found %v err %v", found, err)
	}
	w.Forget("user/b")
	if w.Watched() != 0 {
		t.Fatalf("watched %d with no referrers", w.Watched())
	}
}
