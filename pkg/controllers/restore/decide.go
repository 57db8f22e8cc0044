package restore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/controllers/internal/job"
)

// The functions in this file decide; they do no I/O and never modify their arguments.

// readyToStart says why a restore of b into cl cannot start yet ("" when it can): the backup
// must be Complete, the cluster must have a primary, and a physical restore needs every
// member ready, since every member is restored. failed is set when it never can.
func readyToStart(b *v1alpha1.MySQLBackup, cl *v1alpha1.MySQLCluster, self string) (wait string, failed bool) {
	switch {
	case b.Status.Phase == v1alpha1.JobFailed:
		return fmt.Sprintf("MySQLBackup %s failed: there is nothing to restore", b.Name), true
	case b.Status.Phase != v1alpha1.JobComplete:
		return fmt.Sprintf("waiting for MySQLBackup %s to complete", b.Name), false
	case cl.Status.Primary == "":
		return fmt.Sprintf("MySQLCluster %s has no primary yet", cl.Name), false
	}
	if other := cl.Annotations[restoreAnnotation]; other != "" && other != self {
		return fmt.Sprintf("waiting for MySQLRestore %s of the cluster to finish: one restore runs at a time", other), false
	}
	if job.Method(b) == v1alpha1.BackupPhysical {
		ready := 0
		for _, in := range cl.Status.Instances {
			if in.Ready {
				ready++
			}
		}
		if ready < int(cl.Spec.Members) || len(cl.Status.Instances) < int(cl.Spec.Members) {
			return fmt.Sprintf("waiting for every member of MySQLCluster %s to be ready (%d of %d): a physical backup is restored on all of them",
				cl.Name, ready, cl.Spec.Members), false
		}
	}
	return "", false
}

// memberNames are the member pods of cl, by ordinal.
func memberNames(setName string, members int32) []string {
	out := make([]string, members)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", setName, i)
	}
	return out
}

// staging is the outcome of asking every member about a physical restore being staged.
type staging struct {
	// Done: every member staged (or already committed) it.
	Done bool
	// Failed says why the restore cannot go on ("" while it can).
	Failed string
	// Waiting names the members still unpacking or not answering.
	Waiting []string
}

// answer is what one member's agent said about the restore: its state, or lost (it knows
// nothing of it), or an error (it could not be asked).
type answer struct {
	State *agentapi.BackupState
	Lost  bool
	Err   error
}

// decideStaging reads the members' answers while they stage.
func decideStaging(members []string, answers map[string]answer) staging {
	var s staging
	for _, m := range members {
		a := answers[m]
		switch {
		case a.Lost:
			return staging{Failed: fmt.Sprintf("the agent of %s restarted while staging the restore", m)}
		case a.Err != nil || a.State == nil || a.State.Phase == agentapi.BackupRunning:
			s.Waiting = append(s.Waiting, m)
		case a.State.Phase == agentapi.BackupFailed:
			return staging{Failed: fmt.Sprintf("%s could not stage the backup: %s", m, a.State.Error)}
		}
	}
	s.Done = len(s.Waiting) == 0
	return s
}

// restarts is what to do while members restart onto a committed physical restore.
type restarts struct {
	// Delete are the member pods to delete now.
	Delete []string
	// Done: every member runs on the restored data.
	Done bool
	// Failed says why the restore cannot finish ("" while it can).
	Failed string
	// Waiting names the members not yet on the restored data.
	Waiting []string
}

// decideRestarts restarts the primary first and the others once the primary runs on the
// restored data: a restored replica never meets a primary that still holds the old data
// (an old replica asking the restored primary for transactions it no longer has is refused).
// Each member is restarted once (restarted lists those already deleted); a member whose
// agent answers nothing is restarting.
func decideRestarts(members []string, primary string, answers map[string]answer, restarted []string) restarts {
	var r restarts
	phase := func(m string) string {
		if a := answers[m]; a.State != nil && a.Err == nil {
			return a.State.Phase
		}
		return ""
	}
	for _, m := range members {
		if answers[m].Lost {
			return restarts{Failed: fmt.Sprintf("%s no longer holds the committed restore: it did not restart onto the restored data", m)}
		}
		if phase(m) != agentapi.RestoreApplied {
			r.Waiting = append(r.Waiting, m)
		}
	}
	if len(r.Waiting) == 0 {
		r.Done = true
		return r
	}
	restart := func(m string) {
		if phase(m) == agentapi.RestoreCommitted && !slices.Contains(restarted, m) {
			r.Delete = append(r.Delete, m)
		}
	}
	if phase(primary) != agentapi.RestoreApplied {
		restart(primary)
		return r
	}
	for _, m := range members {
		if m != primary {
			restart(m)
		}
	}
	return r
}

// decideRejoined reports which members do not yet play their part again after a physical
// restore: the primary answers (it stays read-only until the fence is lifted) and every
// replica replicates with both threads running.
func decideRejoined(members []string, primary string, status map[string]*agentapi.StatusJSON) []string {
	var waiting []string
	for _, m := range members {
		st := status[m]
		if st == nil || (m != primary && !st.Ready) {
			waiting = append(waiting, m)
		}
	}
	return waiting
}

func names(ms []string) string { return strings.Join(ms, ", ") }
