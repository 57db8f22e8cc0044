package operator

import (
	"testing"

	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	mysqlfake "github.com/mysqlop/mysql-operator/pkg/generated/clientset/versioned/fake"
	"github.com/mysqlop/mysql-operator/pkg/informerset"
	"github.com/mysqlop/mysql-operator/pkg/options"
)

// Every controller registers its informers and their indexes on one shared set, as the
// operator does: an index one controller adds under a name another already added on the same
// informer is refused, and the operator would not start.
func TestEveryControllerSetsUpOnOneInformerSet(t *testing.T) {
	o := options.New()
	kube, mysql := kubefake.NewSimpleClientset(), mysqlfake.NewSimpleClientset()
	set := informerset.New(kube, mysql, o.Namespaces, o.ResyncPeriod, v1alpha1.LabelManagedBy+"="+v1alpha1.ManagedBy, o.TargetSelector)
	runs, err := newControllers(o, kube, mysql, nil, set, record.NewFakeRecorder(10))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 6 {
		t.Errorf("%d controllers, want 6", len(runs))
	}
}
