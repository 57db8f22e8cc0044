package localkubelet_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/mysqlop/mysql-operator/test/localcluster"
	"github.com/mysqlop/mysql-operator/test/localkubelet"
)

// The runtime against a real control plane, with a shell for a container: init containers
// before containers; user, groups and hostname; env from values with $(VAR), fieldRef,
// configMapKeyRef and secretKeyRef; configMap and downwardAPI volumes and an emptyDir shared
// with the init container; /etc/hosts; an exec readiness probe; a SIGKILLed container
// restarted with its count; graceful deletion (SIGTERM reaches the process, the namespace
// goes); restartPolicy Never with a failing command ends Failed with its exit code.
func TestRuntimeRunsPods(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, bind mounts)")
	}
	lc, err := localcluster.Start(localcluster.Options{Instance: "lt", Bridge: "mysqlop-lt", CIDR: "10.247.0.0/16", Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Stop()
	ctx := context.Background()
	kube := lc.CP.Kube
	ns := "rt"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Data: map[string][]byte{"token": []byte("s3cr3t")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
		Data: map[string]string{"greeting": "hello", "file.txt": "from-configmap"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSA(t, lc, ns)

	script := `echo "uid=$(id -u) gid=$(id -g) groups=$(id -G) host=$(hostname) greeting=$GREETING token=$TOKEN expanded=$(EXPANDED)"
cat /work/init.txt /cfg/file.txt; echo; cat /info/labels; echo
grep web-0 /etc/hosts
trap 'echo got TERM; exit 0' TERM
touch /work/ready
while true; do sleep 0.2; done`
	vol := func(name, path string) corev1.VolumeMount { return corev1.VolumeMount{Name: name, MountPath: path} }
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "runtime-check", Labels: map[string]string{"app": "check"}},
		Spec: corev1.PodSpec{
			Hostname: "web-0", Subdomain: "web",
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](10),
			SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1234), RunAsGroup: ptr.To[int64](1234),
				FSGroup: ptr.To[int64](2000)},
			InitContainers: []corev1.Container{{Name: "prepare", Image: "shell", Command: []string{"/bin/sh", "-c", "echo prepared > /work/init.txt"},
				VolumeMounts: []corev1.VolumeMount{vol("work", "/work")}}},
			Containers: []corev1.Container{{
				Name: "main", Image: "shell", Command: []string{"/bin/sh", "-c"}, Args: []string{script},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "EXPANDED", Value: "x-$(POD_NAME)"},
					{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "greeting"}}},
					{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "token"}}},
				},
				VolumeMounts: []corev1.VolumeMount{vol("work", "/work"), vol("cfg", "/cfg"), vol("info", "/info")},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/work/ready"}}},
					PeriodSeconds: 1},
			}},
			Volumes: []corev1.Volume{
				{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Items: []corev1.KeyToPath{{Key: "file.txt", Path: "file.txt"}}}}},
				{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
					Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}}}}},
			},
		},
	}
	p, err = kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, lc, ns, p.Name, "Ready", func(p *corev1.Pod) bool { return localcluster.PodReady(p) })
	log := lc.Log(p, "main")
	for _, want := range []string{"uid=1234 gid=1234", " 2000", "host=web-0", "greeting=hello", "token=s3cr3t", "expanded=x-runtime-check",
		"prepared", "from-configmap", "check", p.Status.PodIP + " web-0.web.rt.svc.cluster.local"} {
		if !strings.Contains(log, want) {
			t.Errorf("container log lacks %q:\n%s", want, log)
		}
	}
	if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || len(p.Status.InitContainerStatuses) != 1 ||
		p.Status.InitContainerStatuses[0].State.Terminated == nil || p.Status.InitContainerStatuses[0].State.Terminated.ExitCode != 0 {
		t.Fatalf("pod status %+v", p.Status)
	}

	pid, err := lc.PID(p, "main")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, lc, ns, p.Name, "restarted and Ready again", func(p *corev1.Pod) bool {
		return localcluster.PodReady(p) && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == 1
	})
	if last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ExitCode != 137 {
		t.Errorf("last termination %+v, want exit code 137 (SIGKILL)", last)
	}

	netns := "mlklt-" + strings.ReplaceAll(string(p.UID), "-", "")[:8]
	if err := kube.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("pod not deleted: %v", err)
	}
	if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), netns) {
		t.Errorf("network namespace %s left after deletion", netns)
	}
	if _, err := os.Stat("/sys/class/net/" + localkubelet.HostLink("lt", string(p.UID))); err == nil {
		t.Errorf("host link of the deleted pod is left")
	}

	// A crash-looping container: while it waits to restart, --previous is the run that just
	// ended (its lastState), as a kubelet's.
	looping := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "loops"}, Spec: corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{Name: "c", Image: "shell", Command: []string{"/bin/sh", "-c",
			"n=$(cat /work/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /work/n; echo run $n; exit 1"},
			VolumeMounts: []corev1.VolumeMount{vol("work", "/work")}}},
		Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, looping, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	backingOff := func(p *corev1.Pod) (int32, bool) {
		st := p.Status.ContainerStatuses
		if len(st) != 1 || st[0].State.Waiting == nil || st[0].State.Waiting.Reason != "CrashLoopBackOff" {
			return 0, false
		}
		return st[0].RestartCount, true
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		before, err := kube.CoreV1().Pods(ns).Get(ctx, "loops", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		n, ok := backingOff(before)
		if !ok || n < 2 {
			return false, nil
		}
		out, err := kube.CoreV1().Pods(ns).GetLogs("loops", &corev1.PodLogOptions{Container: "c", Previous: true}).DoRaw(ctx)
		if err != nil {
			return false, err
		}
		after, err := kube.CoreV1().Pods(ns).Get(ctx, "loops", metav1.GetOptions{})
		if m, ok := backingOff(after); err != nil || !ok || m != n {
			return false, nil // it restarted meanwhile: try again
		}
		if want := fmt.Sprintf("run %d\n", n); string(out) != want {
			return false, fmt.Errorf("--previous of a container waiting to restart after run %d: %q, want %q", n, out, want)
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}

	failing := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fails"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{Name: "c", Image: "shell", Command: []string{"/bin/sh", "-c", "exit 3"}}}}}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, failing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f := waitPod(t, lc, ns, "fails", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if st := f.Status.ContainerStatuses; len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.ExitCode != 3 || st[0].RestartCount != 0 {
		t.Fatalf("failed pod's container status %+v", st)
	}
}

// waitSA waits for the namespace's default service account, which pod admission requires.
func waitSA(t *testing.T, lc *localcluster.Cluster, ns string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := lc.CP.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatal("no default service account")
	}
}

func waitPod(t *testing.T, lc *localcluster.Cluster, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		p, err = lc.CP.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && cond(p), nil
	})
	if err != nil {
		msg := ""
		if p != nil {
			msg = fmt.Sprintf("status %+v\nlog:\n%s", p.Status, lc.Log(p, "main"))
		}
		t.Fatalf("pod %s not %s: %v\n%s", name, what, err, msg)
	}
	return p
}
