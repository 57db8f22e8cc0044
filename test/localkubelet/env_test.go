package localkubelet

import (
	"net"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "POD_NAME": "db-0"}
	for _, tc := range []struct{ in, want string }{
		{"--name=$(POD_NAME)", "--name=db-0"},
		{"$(A)$(A)", "11"},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(A)", "$(A)"},
		{"cost $", "cost $"},
		{"$(unterminated", "$(unterminated"},
	} {
		if got := Expand(tc.in, vars); got != tc.want {
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestArgvMapsImagesAndCommands(t *testing.T) {
	r := &Runtime{opts: Options{
		Images:   map[string]string{"mysql-operator": "/bin/op", "mysql-operator:v2": "/bin/op2"},
		Commands: map[string]string{"/mysql-agent": "/bin/agent"},
	}}
	vars := map[string]string{"X": "x"}
	for _, tc := range []struct {
		name string
		c    corev1.Container
		want []string
	}{
		{"image entrypoint", corev1.Container{Image: "docker.io/mysqlop/mysql-operator:v1", Args: []string{"--v=$(X)"}}, []string{"/bin/op", "--v=x"}},
		{"image and tag", corev1.Container{Image: "docker.io/mysqlop/mysql-operator:v2"}, []string{"/bin/op2"}},
		{"mapped command", corev1.Container{Command: []string{"/mysql-agent", "serve"}}, []string{"/bin/agent", "serve"}},
		{"host command", corev1.Container{Command: []string{"/usr/sbin/mysqld", "--defaults-file=/etc/my.cnf"}}, []string{"/usr/sbin/mysqld", "--defaults-file=/etc/my.cnf"}},
	} {
		got, err := r.argv(&tc.c, vars)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := r.argv(&corev1.Container{Name: "x", Image: "nginx"}, vars); err == nil {
		t.Error("an unmapped image without a command must be refused")
	}
}

func TestIPAMSkipsTheGatewayAndReusesReleased(t *testing.T) {
	_, n, _ := net.ParseCIDR("10.9.0.0/28")
	a := newIPAM(n)
	var got []string
	for i := 0; i < 5; i++ {
		ip, err := a.allocate()
		if err != nil {
			got = append(got, "exhausted")
			break
		}
		got = append(got, ip.String())
	}
	// A /28 has .10 to .14 (.15 is broadcast).
	if want := []string{"10.9.0.10", "10.9.0.11", "10.9.0.12", "10.9.0.13", "10.9.0.14"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("allocated %v, want %v", got, want)
	}
	if _, err := a.allocate(); err == nil {
		t.Fatal("a full range must say so")
	}
	a.release(net.ParseIP("10.9.0.12"))
	if ip, err := a.allocate(); err != nil || ip.String() != "10.9.0.12" {
		t.Fatalf("after release: %v %v", ip, err)
	}
}

func TestIdentity(t *testing.T) {
	u, g := int64(999), int64(998)
	other := int64(65532)
	p := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{RunAsUser: &u, RunAsGroup: &g, FSGroup: &u, SupplementalGroups: []int64{5}}}}
	uid, gid, groups := identity(p, &corev1.Container{})
	if uid != 999 || gid != 998 || !reflect.DeepEqual(groups, []int{999, 5}) {
		t.Fatalf("pod identity %d %d %v", uid, gid, groups)
	}
	uid, _, _ = identity(p, &corev1.Container{SecurityContext: &corev1.SecurityContext{RunAsUser: &other}})
	if uid != 65532 {
		t.Fatalf("container runAsUser %d", uid)
	}
}
