package objects

import (
	"context"
	"maps"
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
	if err := RemoveFinalizers(ctx, got, users.Update, v1alpha1.FinalizerUser); err != nil {
		t.Fatal(err)
	}
	last := client.Actions()[len(client.Actions())-1].(k8stesting.UpdateAction).GetObject().(*v1alpha1.MySQLUser)
	if HasFinalizer(last, v1alpha1.FinalizerUser) || !HasFinalizer(got, v1alpha1.FinalizerUser) {
		t.Fatalf("RemoveFinalizers sent %v", last.Finalizers)
	}
	n := writes()
	if err := RemoveFinalizers(ctx, u, users.Update, v1alpha1.FinalizerUser, "other"); err != nil || writes() != n {
		t.Fatalf("RemoveFinalizers of finalizers the object lacks wrote: %v, %d writes", err, writes()-n)
	}
}

// PatchMetadata sets and removes keys and leaves the others alone.
func TestPatchMetadata(t *testing.T) {
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db",
		Labels: map[string]string{"keep": "1", "drop": "1"}, Annotations: map[string]string{"a": "old"}}}
	client := fake.NewSimpleClientset(c)
	got, err := PatchMetadata(context.Background(), client.MysqlopV1alpha1().MySQLClusters("ns").Patch, "db", Metadata{
		Labels:      map[string]*string{"drop": nil, "new": Value("2")},
		Annotations: map[string]*string{"a": Value("new")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"keep": "1", "new": "2"}; !maps.Equal(got.Labels, want) {
		t.Errorf("labels %v, want %v", got.Labels, want)
	}
	if got.Annotations["a"] != "new" {
		t.Errorf("annotations %v", got.Annotations)
	}
	if _, err := PatchMetadata(context.Background(), client.MysqlopV1alpha1().MySQLClusters("ns").Patch, "gone", Metadata{
		Labels: map[string]*string{"x": nil}}); err == nil {
		t.Error("patching a missing object succeeded")
	}
	if !(Metadata{}).IsEmpty() || (Metadata{Annotations: map[string]*string{"a": nil}}).IsEmpty() {
		t.Error("IsEmpty")
	}
}
