package cluster

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/pkg/resources"
)

// A member whose server stops at every start because InnoDB finds its data corrupt never
// comes back by itself; clustering re-seeds it (pkg/clustering: Instance.Corrupt). The
// operator tells such a member from one that is merely restarting by the server container's
// runs: it must be waiting to restart after a failed run whose log has InnoDB report
// corruption, twice in a row, so that one unlucky run is not enough.

// corruptStreak is how many failed runs in a row must report corruption.
const corruptStreak = 2

// corruptLogLines is how much of a failed run's log is read: its end, where the server
// says why it stops (a stack trace after it is some 50 lines).
const corruptLogLines = 200

// corruptLogBytes bounds that read.
const corruptLogBytes = 1 << 20

// failedRun is the server container's last failed run, when the container waits to restart
// after it: its container ID, or "" when the container runs or its last run succeeded.
func failedRun(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != resources.ContainerMySQL {
			continue
		}
		last := cs.LastTerminationState.Terminated
		if cs.State.Waiting == nil || last == nil || last.ExitCode == 0 {
			return ""
		}
		return last.ContainerID
	}
	return ""
}

// corruptRuns remembers, per member, the failed runs judged so far: each run's log is read
// once.
type corruptRuns struct {
	mu sync.Mutex
	m  map[int]corruptRun
}

type corruptRun struct {
	pod         types.UID
	containerID string
	// streak counts the failed runs in a row of this pod that reported corruption.
	streak int
}

// judge reports whether member i's pod shows its server stopping on corrupt data; readLog
// reads the log of the pod's last failed server run. A log that cannot be read is tried
// again at the next call.
func (w *corruptRuns) judge(i int, pod *corev1.Pod, readLog func() ([]byte, error)) bool {
	id := failedRun(pod)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[int]corruptRun{}
	}
	prev, ok := w.m[i]
	if !ok || prev.pod != pod.UID {
		prev = corruptRun{pod: pod.UID}
	}
	if id == "" || id == prev.containerID {
		// Running again does not end a streak: the next failed run continues it.
		return id != "" && prev.streak >= corruptStreak
	}
	log, err := readLog()
	if err != nil {
		return false
	}
	next := corruptRun{pod: pod.UID, containerID: id}
	if mysql.ReportsCorruption(log) {
		next.streak = prev.streak + 1
	}
	w.m[i] = next
	return next.streak >= corruptStreak
}

// DataCorrupt reads member i's pod from the API server (the cache keeps no container
// statuses) and, once per failed run, the end of that run's log.
func (a memberAgents) DataCorrupt(ctx context.Context, i int) bool {
	a.r.mu.Lock()
	cluster, pods := a.r.cluster, a.r.cfg.pods
	a.r.mu.Unlock()
	if i < 0 || i >= len(pods) {
		return false
	}
	pc := a.c.kube.CoreV1().Pods(cluster.Namespace)
	pod, err := pc.Get(ctx, pods[i], metav1.GetOptions{})
	if err != nil {
		return false
	}
	corrupt := a.r.corrupt.judge(i, pod, func() ([]byte, error) {
		// Previous is the last terminated run, which is the failed one while the container
		// waits to restart.
		return pc.GetLogs(pod.Name, &corev1.PodLogOptions{Container: resources.ContainerMySQL, Previous: true,
			TailLines: ptr.To[int64](corruptLogLines), LimitBytes: ptr.To[int64](corruptLogBytes)}).DoRaw(ctx)
	})
	if corrupt {
		klog.FromContext(ctx).Info("The server stops at start on corrupt data", "pod", klog.KObj(pod))
	}
	return corrupt
}
