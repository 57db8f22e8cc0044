package localkubelet

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// statusLoop writes the pod's status when it changes (and not more often than every 100 ms),
// through the status subresource.
func (w *podWorker) statusLoop(ctx context.Context) {
	var last *corev1.PodStatus
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kicked:
		}
		st := w.status()
		if last != nil && apiequality.Semantic.DeepEqual(*last, st) {
			continue
		}
		if err := w.writeStatus(ctx, st); err != nil {
			if ctx.Err() == nil && !apierrors.IsNotFound(err) {
				klog.ErrorS(err, "Write pod status", "pod", klog.KObj(w.pod))
				time.AfterFunc(time.Second, w.kick)
			}
		} else {
			last = &st
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (w *podWorker) writeStatus(ctx context.Context, st corev1.PodStatus) error {
	cur, err := w.r.pods.Pods(w.pod.Namespace).Get(w.pod.Name)
	if err != nil || cur.UID != w.pod.UID {
		cur, err = w.r.kube.CoreV1().Pods(w.pod.Namespace).Get(ctx, w.pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != w.pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), w.pod.Name)
		}
	}
	p := cur.DeepCopy()
	p.Status = st
	_, err = w.r.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		// The cache was behind: read the latest and try once more.
		if cur, err = w.r.kube.CoreV1().Pods(w.pod.Namespace).Get(ctx, w.pod.Name, metav1.GetOptions{}); err != nil {
			return err
		}
		p = cur.DeepCopy()
		p.Status = st
		_, err = w.r.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	}
	return err
}

// status is the pod's status as the kubelet would report it.
func (w *podWorker) status() corev1.PodStatus {
	w.mu.Lock()
	st := corev1.PodStatus{Phase: w.phase, HostIP: w.r.gateway.String(), Message: w.message,
		HostIPs: []corev1.HostIP{{IP: w.r.gateway.String()}}}
	if !w.started.IsZero() {
		t := metav1.NewTime(w.started.Truncate(time.Second))
		st.StartTime = &t
	}
	if w.net != nil {
		st.PodIP = w.net.IP.String()
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	}
	initDone := w.initDone
	inits, ctrs := w.inits, w.containers
	w.mu.Unlock()

	allReady, anyRunning := true, false
	for _, c := range inits {
		st.InitContainerStatuses = append(st.InitContainerStatuses, c.status())
	}
	terminated, failed := 0, 0
	for _, c := range ctrs {
		cs := c.status()
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		allReady = allReady && cs.Ready
		if cs.State.Running != nil {
			anyRunning = true
		}
		if cs.State.Terminated != nil {
			terminated++
			if cs.State.Terminated.ExitCode != 0 {
				failed++
			}
		}
	}
	if st.Phase == corev1.PodPending && initDone && anyRunning {
		st.Phase = corev1.PodRunning
	}
	if st.Phase != corev1.PodFailed && terminated == len(ctrs) && w.finished() {
		st.Phase = corev1.PodSucceeded
		if failed > 0 {
			st.Phase = corev1.PodFailed
		}
	}
	ready := initDone && allReady && st.Phase == corev1.PodRunning
	st.Conditions = []corev1.PodCondition{
		w.condition(corev1.PodReadyToStartContainers, st.PodIP != ""),
		w.condition(corev1.PodInitialized, initDone),
		w.condition(corev1.ContainersReady, ready),
		w.condition(corev1.PodReady, ready),
		w.condition(corev1.PodScheduled, true),
	}
	return st
}

// finished: every container ended and will not restart.
func (w *podWorker) finished() bool {
	for _, c := range w.containers {
		c.mu.Lock()
		d := c.done
		c.mu.Unlock()
		if !d {
			return false
		}
	}
	return true
}

// condition keeps the transition time of a condition stable while its status stays.
func (w *podWorker) condition(t corev1.PodConditionType, ok bool) corev1.PodCondition {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, found := w.conds[t]; found && c.Status == s {
		return c
	}
	c := corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))}
	w.conds[t] = c
	return c
}

func (c *container) status() corev1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := corev1.ContainerStatus{Name: c.spec.Name, Image: c.spec.Image, ImageID: c.spec.Image, RestartCount: c.restarts,
		Ready: c.ready}
	started := c.started
	cs.Started = &started
	switch {
	case c.running != nil:
		cs.State.Running = c.running
		if c.proc != nil {
			cs.ContainerID = containerID(c.proc.Pid)
		}
		if c.last != nil {
			cs.LastTerminationState.Terminated = c.last
		}
	case c.waiting != "" || c.last == nil:
		reason := c.waiting
		if reason == "" {
			reason = "PodInitializing"
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
		if c.last != nil {
			cs.LastTerminationState.Terminated = c.last
		}
	default:
		cs.State.Terminated = c.last
		cs.ContainerID = c.last.ContainerID
	}
	if c.init {
		cs.Ready = c.done
	}
	return cs
}
