package restore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
	"github.com/mysqlop/mysql-operator/pkg/resources/testutil"
)

func TestReadyToStart(t *testing.T) {
	backup := func(phase v1alpha1.JobPhase, m v1alpha1.BackupMethod) *v1alpha1.MySQLBackup {
		b := &v1alpha1.MySQLBackup{Spec: v1alpha1.MySQLBackupSpec{Method: m}, Status: v1alpha1.MySQLBackupStatus{Phase: phase}}
		b.Name = "b"
		return b
	}
	cluster := func(primary string, ready int, mutate ...func(*v1alpha1.MySQLCluster)) *v1alpha1.MySQLCluster {
		c := testutil.Cluster("ns", "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Members = 3 })
		c.Status.Primary = primary
		for i := range 3 {
			c.Status.Instances = append(c.Status.Instances, v1alpha1.InstanceStatus{Name: fmt.Sprintf("db-%d", i), Ready: i < ready})
		}
		for _, m := range mutate {
			m(c)
		}
		return c
	}
	busy := func(c *v1alpha1.MySQLCluster) {
		c.Annotations = map[string]string{v1alpha1.AnnotationRestore: "other"}
	}
	mine := func(c *v1alpha1.MySQLCluster) { c.Annotations = map[string]string{v1alpha1.AnnotationRestore: "undo"} }
	for _, tc := range []struct {
		name   string
		backup *v1alpha1.MySQLBackup
		c      *v1alpha1.MySQLCluster
		wait   string
		failed bool
	}{
		{"logical, primary ready", backup(v1alpha1.JobComplete, ""), cluster("db-0", 1), "", false},
		{"failed backup never restores", backup(v1alpha1.JobFailed, ""), cluster("db-0", 3), "failed", true},
		{"backup still running", backup(v1alpha1.JobRunning, ""), cluster("db-0", 3), "to complete", false},
		{"no primary yet", backup(v1alpha1.JobComplete, ""), cluster("", 0), "no primary", false},
		{"another restore runs", backup(v1alpha1.JobComplete, ""), cluster("db-0", 3, busy), "MySQLRestore other", false},
		{"its own fence (a restart) is no obstacle", backup(v1alpha1.JobComplete, ""), cluster("db-0", 3, mine), "", false},
		{"physical needs every member", backup(v1alpha1.JobComplete, v1alpha1.BackupPhysical), cluster("db-0", 2), "every member", false},
		{"physical, every member ready", backup(v1alpha1.JobComplete, v1alpha1.BackupPhysical), cluster("db-0", 3), "", false},
	} {
		wait, failed := readyToStart(tc.backup, tc.c, "undo")
		if failed != tc.failed || (tc.wait == "") != (wait == "") || !strings.Contains(wait, tc.wait) {
			t.Errorf("%s: %q failed=%v; want %q failed=%v", tc.name, wait, failed, tc.wait, tc.failed)
		}
	}
}

func st(phase string) answer { return answer{State: &agentapi.BackupState{Phase: phase}} }

func TestDecideStaging(t *testing.T) {
	members := []string{"db-0", "db-1", "db-2"}
	failed := st(agentapi.BackupFailed)
	failed.State.Error = "mbstream -x failed: no space left on device"
	for _, tc := range []struct {
		name    string
		answers map[string]answer
		done    bool
		failed  string
		waiting string
	}{
		{"all staged", map[string]answer{"db-0": st(agentapi.RestoreStaged), "db-1": st(agentapi.RestoreStaged), "db-2": st(agentapi.RestoreCommitted)}, true, "", "[]"},
		{"one unpacking, one not answering", map[string]answer{"db-0": st(agentapi.RestoreStaged), "db-1": st(agentapi.BackupRunning), "db-2": {Err: errors.New("timeout")}},
			false, "", "[db-1 db-2]"},
		{"one failed", map[string]answer{"db-0": st(agentapi.RestoreStaged), "db-1": failed, "db-2": st(agentapi.BackupRunning)}, false, "db-1 could not stage the backup: mbstream", "[]"},
		{"one agent restarted", map[string]answer{"db-0": st(agentapi.RestoreStaged), "db-1": st(agentapi.RestoreStaged), "db-2": {Lost: true}}, false, "agent of db-2 restarted", "[]"},
	} {
		s := decideStaging(members, tc.answers)
		if s.Done != tc.done || (tc.failed == "") != (s.Failed == "") || !strings.Contains(s.Failed, tc.failed) || fmt.Sprint(s.Waiting) != tc.waiting {
			t.Errorf("%s: %+v", tc.name, s)
		}
	}
}

func TestDecideRestarts(t *testing.T) {
	members := []string{"db-0", "db-1", "db-2"}
	down := answer{Err: errors.New("connection refused")}
	for _, tc := range []struct {
		name      string
		primary   string
		answers   map[string]answer
		restarted []string
		delete    string
		done      bool
		failed    string
	}{
		{
			name: "the primary restarts first", primary: "db-1",
			answers: map[string]answer{"db-0": st(agentapi.RestoreCommitted), "db-1": st(agentapi.RestoreCommitted), "db-2": st(agentapi.RestoreCommitted)},
			delete:  "[db-1]",
		},
		{
			name: "nothing else while the primary restarts", primary: "db-1", restarted: []string{"db-1"},
			answers: map[string]answer{"db-0": st(agentapi.RestoreCommitted), "db-1": down, "db-2": st(agentapi.RestoreCommitted)},
			delete:  "[]",
		},
		{
			// Its old agent may still answer until the pod is gone: it is not deleted twice.
			name: "a restarted primary is not deleted again", primary: "db-1", restarted: []string{"db-1"},
			answers: map[string]answer{"db-0": st(agentapi.RestoreCommitted), "db-1": st(agentapi.RestoreCommitted), "db-2": st(agentapi.RestoreCommitted)},
			delete:  "[]",
		},
		{
			name: "then every replica at once", primary: "db-1", restarted: []string{"db-1"},
			answers: map[string]answer{"db-0": st(agentapi.RestoreCommitted), "db-1": st(agentapi.RestoreApplied), "db-2": st(agentapi.RestoreCommitted)},
			delete:  "[db-0 db-2]",
		},
		{
			name: "replicas restarting", primary: "db-1", restarted: []string{"db-1", "db-0", "db-2"},
			answers: map[string]answer{"db-0": down, "db-1": st(agentapi.RestoreApplied), "db-2": st(agentapi.RestoreApplied)},
			delete:  "[]",
		},
		{
			name: "all on the restored data", primary: "db-1", restarted: []string{"db-1", "db-0", "db-2"},
			answers: map[string]answer{"db-0": st(agentapi.RestoreApplied), "db-1": st(agentapi.RestoreApplied), "db-2": st(agentapi.RestoreApplied)},
			delete:  "[]", done: true,
		},
		{
			name: "a member that lost the committed restore", primary: "db-1", restarted: []string{"db-1"},
			answers: map[string]answer{"db-0": {Lost: true}, "db-1": st(agentapi.RestoreApplied), "db-2": st(agentapi.RestoreCommitted)},
			delete:  "[]", failed: "db-0 no longer holds",
		},
	} {
		r := decideRestarts(members, tc.primary, tc.answers, tc.restarted)
		if fmt.Sprint(r.Delete) != tc.delete || r.Done != tc.done || (tc.failed == "") != (r.Failed == "") || !strings.Contains(r.Failed, tc.failed) {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
}

func TestDecideRejoined(t *testing.T) {
	members := []string{"db-0", "db-1", "db-2"}
	readOnlyPrimary := &agentapi.StatusJSON{ReadOnly: true}
	replica := &agentapi.StatusJSON{ReadOnly: true, Ready: true}
	notYet := &agentapi.StatusJSON{ReadOnly: true, Reason: "read-only and not replicating"}
	for _, tc := range []struct {
		name   string
		status map[string]*agentapi.StatusJSON
		want   string
	}{
		{"every replica follows the fenced primary", map[string]*agentapi.StatusJSON{"db-0": readOnlyPrimary, "db-1": replica, "db-2": replica}, "[]"},
		{"a replica not yet configured", map[string]*agentapi.StatusJSON{"db-0": readOnlyPrimary, "db-1": notYet, "db-2": replica}, "[db-1]"},
		{"the primary does not answer", map[string]*agentapi.StatusJSON{"db-1": replica, "db-2": replica}, "[db-0]"},
	} {
		if got := fmt.Sprint(decideRejoined(members, "db-0", tc.status)); got != tc.want {
			t.Errorf("%s: waiting for %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestMemberNames(t *testing.T) {
	if got := fmt.Sprint(memberNames("db", 3)); got != "[db-0 db-1 db-2]" {
		t.Errorf("memberNames = %s", got)
	}
}
