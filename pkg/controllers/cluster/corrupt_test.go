package cluster

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// serverPod is a pod whose server container is waiting to restart after the run id ended with
// code (id "" for a running container).
func serverPod(uid types.UID, id string, code int32) *corev1.Pod {
	cs := corev1.ContainerStatus{Name: resources.ContainerMySQL}
	if id == "" {
		cs.State.Running = &corev1.ContainerStateRunning{}
	} else {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
		cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ContainerID: id, ExitCode: code}
	}
	agent := corev1.ContainerStatus{Name: resources.ContainerAgent, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	p := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{agent, cs}}}
	p.UID = uid
	return p
}

const (
	corruptLog = "2026-12-06  2:44:16 0 [ERROR] InnoDB: Plugin initialization aborted with error Data structure corruption\n[ERROR] Aborting\n"
	crashLog   = "[ERROR] mariadbd got signal 9\n"
)

// Two failed runs in a row that report corruption make a member corrupt; each run's log is
// read once; a run without the words, or a new pod, starts the count again.
func TestCorruptRunsJudge(t *testing.T) {
	var w corruptRuns
	reads := 0
	log := func(s string) func() ([]byte, error) {
		return func() ([]byte, error) { reads++; return []byte(s), nil }
	}
	for _, step := range []struct {
		name  string
		pod   *corev1.Pod
		log   func() ([]byte, error)
		want  bool
		reads int
	}{
		{"running", serverPod("a", "", 0), log(corruptLog), false, 0},
		{"first corrupt run", serverPod("a", "c1", 1), log(corruptLog), false, 1},
		{"the same run again: not read again", serverPod("a", "c1", 1), log(corruptLog), false, 1},
		{"a log that cannot be read", serverPod("a", "c2", 1), func() ([]byte, error) { reads++; return nil, errors.New("no") }, false, 2},
		{"second corrupt run", serverPod("a", "c2", 1), log(corruptLog), true, 3},
		{"still waiting after it", serverPod("a", "c2", 1), log(corruptLog), true, 3},
		{"starting again: not corrupt while it runs", serverPod("a", "", 0), log(corruptLog), false, 3},
		{"a run that ends without the words", serverPod("a", "c3", 137), log(crashLog), false, 4},
		{"one corrupt run after it", serverPod("a", "c4", 1), log(corruptLog), false, 5},
		{"a new pod starts over", serverPod("b", "c5", 1), log(corruptLog), false, 6},
		{"its second corrupt run", serverPod("b", "c6", 1), log(corruptLog), true, 7},
		{"a clean exit is no failed run", serverPod("b", "c7", 0), log(corruptLog), false, 7},
	} {
		if got := w.judge(0, step.pod, step.log); got != step.want || reads != step.reads {
			t.Errorf("%s: corrupt %v after %d log reads, want %v after %d", step.name, got, reads, step.want, step.reads)
		}
	}
	if w.judge(1, serverPod("x", "c1", 1), log(corruptLog)) {
		t.Error("members share a count")
	}
}
