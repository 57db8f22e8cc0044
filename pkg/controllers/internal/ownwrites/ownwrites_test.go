package ownwrites

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func secret(name, rv string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

func TestLatest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		wrote    *corev1.Secret
		cached   *corev1.Secret // nil: not in the cache
		wantRV   string         // "": not found
		wantLeft int
	}{
		{name: "nothing written: the cache", cached: secret("a", "5"), wantRV: "5"},
		{name: "nothing anywhere", wantRV: ""},
		{name: "created, not cached yet", wrote: secret("a", "7"), wantRV: "7", wantLeft: 1},
		{name: "updated, cache older", wrote: secret("a", "7"), cached: secret("a", "5"), wantRV: "7", wantLeft: 1},
		{name: "cache caught up", wrote: secret("a", "7"), cached: secret("a", "7"), wantRV: "7"},
		{name: "cache newer (someone else wrote)", wrote: secret("a", "7"), cached: secret("a", "9"), wantRV: "9"},
		{name: "versions not comparable: the cache", wrote: secret("a", "x7"), cached: secret("a", "5"), wantRV: "5"},
		{name: "another object", wrote: secret("b", "7"), cached: secret("a", "5"), wantRV: "5", wantLeft: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(time.Minute)
			if tc.wrote != nil {
				tr.Wrote(tc.wrote)
			}
			got, found := Latest(tr, "ns", "a", tc.cached, tc.cached != nil)
			switch {
			case tc.wantRV == "" && found:
				t.Errorf("found %v, want nothing", got)
			case tc.wantRV != "" && (!found || got.ResourceVersion != tc.wantRV):
				t.Errorf("got %v (found %v), want version %s", got, found, tc.wantRV)
			}
			if n := tr.Len(); n != tc.wantLeft {
				t.Errorf("%d writes held, want %d", n, tc.wantLeft)
			}
		})
	}
}

func TestTypesAreApart(t *testing.T) {
	tr := New(time.Minute)
	tr.Wrote(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "7"}})
	if _, found := Latest[*corev1.Secret](tr, "ns", "a", nil, false); found {
		t.Error("a ConfigMap's write stands for a Secret")
	}
}

func TestWriteIsCopied(t *testing.T) {
	tr := New(time.Minute)
	s := secret("a", "7")
	tr.Wrote(s)
	s.Labels = map[string]string{"changed": "after"}
	if got, _ := Latest[*corev1.Secret](tr, "ns", "a", nil, false); got.Labels != nil {
		t.Error("the caller's later change reached the recorded write")
	}
}

func TestBehind(t *testing.T) {
	tr := New(time.Minute)
	tr.Wrote(secret("a", "7"))
	if !tr.Behind(secret("a", "6")) {
		t.Error("a cache at 6 after a write at 7 is not behind")
	}
	if tr.Behind(secret("a", "7")) || tr.Behind(secret("a", "8")) || tr.Behind(secret("b", "1")) {
		t.Error("behind though caught up, or for another object")
	}
}

func TestHandlerForgetsWhatTheCacheShowed(t *testing.T) {
	tr := New(time.Minute)
	h := tr.Handler()
	tr.Wrote(secret("a", "7"))
	h.OnUpdate(secret("a", "5"), secret("a", "6"))
	if tr.Len() != 1 {
		t.Fatal("forgot a write on an older event")
	}
	h.OnUpdate(secret("a", "6"), secret("a", "7"))
	if tr.Len() != 0 {
		t.Fatal("kept a write the cache showed")
	}
	tr.Wrote(secret("b", "9"))
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: secret("b", "9")})
	if tr.Len() != 0 {
		t.Fatal("kept a write of a deleted object")
	}
	// A delete event of the old object that arrives after the controller made it again does
	// not drop the new write.
	tr.Wrote(secret("c", "12"))
	h.OnDelete(secret("c", "10"))
	if tr.Len() != 1 {
		t.Fatal("the old object's deletion dropped the new write")
	}
}

func TestWritesExpire(t *testing.T) {
	tr := New(time.Minute)
	now := time.Unix(1000, 0)
	tr.now = func() time.Time { return now }
	tr.Wrote(secret("a", "7"))
	now = now.Add(2 * time.Minute)
	if _, found := Latest[*corev1.Secret](tr, "ns", "a", nil, false); found {
		t.Error("an expired write still stands for the object")
	}
	tr.Wrote(secret("old", "1"))
	now = now.Add(2 * time.Minute)
	for range 256 {
		tr.Wrote(secret("x", "2"))
	}
	if tr.Len() != 1 {
		t.Errorf("%d writes held; expired ones are swept", tr.Len())
	}
}
