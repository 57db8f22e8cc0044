package objects

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestFromEvent(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-0"}}
	for _, tc := range []struct {
		name string
		obj  any
		want bool
	}{
		{"the object", pod, true},
		{"a tombstone", cache.DeletedFinalStateUnknown{Key: "ns/db-0", Obj: pod}, true},
		{"another type", &corev1.Secret{}, false},
		{"a tombstone of another type", cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: &corev1.Secret{}}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := FromEvent[*corev1.Pod](tc.obj)
			if ok != tc.want || (ok && got != pod) {
				t.Fatalf("FromEvent = %v, %v; want the pod: %v", got, ok, tc.want)
			}
			// As the interface every handler of several kinds asks for.
			if _, ok := FromEvent[metav1.Object](tc.obj); ok != (tc.obj != nil) {
				t.Fatalf("FromEvent as metav1.Object = %v", ok)
			}
		})
	}
}
