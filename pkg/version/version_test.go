package version

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestLabelValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"v0.1.0", "v0.1.0"},
		{"v0.1.0+abc", "v0.1.0_abc"},
		{"-v1-", "v1"},
		{"v1.2.3-rc.1+build.7/x", "v1.2.3-rc.1_build.7_x"},
	} {
		got := LabelValue(tc.in)
		if got != tc.want {
			t.Errorf("LabelValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) != 0 {
			t.Errorf("LabelValue(%q) = %q is not a valid label value: %v", tc.in, got, errs)
		}
	}
	long := LabelValue("v1." + string(make([]byte, 100)))
	if errs := validation.IsValidLabelValue(long); len(errs) != 0 {
		t.Errorf("long value %q is not a valid label value: %v", long, errs)
	}
}
