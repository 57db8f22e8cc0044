package sqlobject

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned/fake"
)

// Status writes skip no-ops, finalizers are added once and removed, and the cached object is
// never modified.
func TestWriteStatusAndFinalizers(t *testing.T) {
	u := &v1alpha1.MySQLUser{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "u"}}
	client := fake.NewSimpleClientset(u)
	users := client.MysqlopV1alpha1().MySQLUsers("ns")
	ctx := context.Background()
	status := func(u *v1alpha1.MySQLUser) *v1alpha1.MySQLUserStatus { return &u.Status }
	writes := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "update" {
				n++
			}
		}
		return n
	}

	if err := WriteStatus(ctx, u, u.Status.DeepCopy(), status, users.UpdateStatus); err != nil || writes() != 0 {
		t.Fatalf("no-op status write: %v, %d writes", err, writes())
	}
	st := u.Status.DeepCopy()
	SetReady(&st.Conditions, 1, true, v1alpha1.ReasonReconciled, "ok")
	if err := WriteStatus(ctx, u, st, status, users.UpdateStatus); err != nil || writes() != 1 {
		t.Fatalf("status write: %v, %d writes", err, writes())
	}
	if len(u.Status.Conditions) != 0 {
		t.Fatal("the cached object was modified")
	}
	got, err := AddFinalizer(ctx, u, v1alpha1.FinalizerUser, users.Update)
	if err != nil || !HasFinalizer(got, v1alpha1.FinalizerUser) || HasFinalizer(u, v1alpha1.FinalizerUser) {
		t.Fatalf("AddFinalizer: %+v %v", got.Finalizers, err)
	}
	if again, err := AddFinalizer(ctx, got, v1alpha1.FinalizerUser, users.Update); err != nil || again != got || writes() != 2 {
		t.Fatalf("second AddFinalizer wrote: %v, %d writes", err, writes())
	}
	if err := RemoveFinalizer(ctx, got, v1alpha1.FinalizerUser, users.Update); err != nil {
		t.Fatal(err)
	}
	last := client.Actions()[len(client.Actions())-1].(k8stesting.UpdateAction).GetObject().(*v1alpha1.MySQLUser)
	if HasFinalizer(last, v1alpha1.FinalizerUser) || !HasFinalizer(got, v1alpha1.FinalizerUser) {
		t.Fatalf("RemoveFinalizer sent %v", last.Finalizers)
	}
}
