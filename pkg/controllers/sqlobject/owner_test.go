package sqlobject

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

func TestOwnerIsTheOldestThenTheFirstByName(t *testing.T) {
	at := func(name string, sec int) *v1alpha1.MySQLDatabase {
		d := &v1alpha1.MySQLDatabase{}
		d.Name, d.CreationTimestamp = name, metav1.NewTime(time.Unix(int64(1000+sec), 0))
		return d
	}
	for _, tc := range []struct {
		name   string
		self   *v1alpha1.MySQLDatabase
		others []*v1alpha1.MySQLDatabase
		want   string
	}{
		{"alone", at("a", 0), nil, "a"},
		{"self among others", at("b", 5), []*v1alpha1.MySQLDatabase{at("b", 5), at("c", 1)}, "c"},
		{"older self", at("b", 0), []*v1alpha1.MySQLDatabase{at("c", 1)}, "b"},
		{"same second: by name", at("b", 1), []*v1alpha1.MySQLDatabase{at("a", 1)}, "a"},
	} {
		if got := Owner(tc.self, tc.others); got != tc.want {
			t.Errorf("%s: Owner = %s, want %s", tc.name, got, tc.want)
		}
	}
}
