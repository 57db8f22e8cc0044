package backupschedule

import (
	"slices"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/apis/mysqlop/v1alpha1"
)

// Schedule is the part of cron.Schedule decide uses.
type Schedule interface {
	Next(time.Time) time.Time
}

// keepFailed is how many of the newest failed backups a schedule keeps for inspection.
const keepFailed = 3

// plan is what one reconcile of a schedule does.
type plan struct {
	// Due is the most recent scheduled time not handled yet; zero when none is due or the
	// schedule is suspended. A backup is created for it unless Skipped.
	Due time.Time
	// Skipped is true when the due backup is not created because one still runs (Forbid).
	Skipped bool
	// Replace lists running backups to delete before creating the due one (Replace).
	Replace []string
	// Prune lists finished backups that retention no longer keeps.
	Prune []string
	// Next is the next scheduled time after now.
	Next time.Time
	// Active are the backups that have not finished; LastSuccessful the newest Complete one.
	Active         []string
	LastSuccessful string
	// Verify is the backup to verify (spec.verify): the newest Complete one, unless it is
	// pruned now. Each backup is the newest when it completes, so each gets verified.
	Verify string
}

// decide plans a reconcile at now of a schedule whose last backup was scheduled at last (or
// which was created then), over the backups it created. Missed runs are not caught up: only
// the most recent missed time is due, as with a CronJob.
func decide(now, last time.Time, sched Schedule, spec *v1alpha1.MySQLBackupScheduleSpec, backups []*v1alpha1.MySQLBackup) plan {
	var p plan
	var complete, failed []*v1alpha1.MySQLBackup
	for _, b := range backups {
		switch b.Status.Phase {
		case v1alpha1.JobComplete:
			complete = append(complete, b)
		case v1alpha1.JobFailed:
			failed = append(failed, b)
		default:
			if b.DeletionTimestamp == nil {
				p.Active = append(p.Active, b.Name)
			}
		}
	}
	slices.Sort(p.Active)
	newestFirst := func(a, b *v1alpha1.MySQLBackup) int {
		return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
	}
	slices.SortStableFunc(complete, newestFirst)
	slices.SortStableFunc(failed, newestFirst)
	if len(complete) > 0 {
		p.LastSuccessful = complete[0].Name
	}

	// Retention: the newest complete backup is always kept, whatever maxAge says.
	for i, b := range complete {
		if i == 0 || b.DeletionTimestamp != nil {
			continue
		}
		tooMany := spec.Retention.KeepLast != nil && i >= int(*spec.Retention.KeepLast)
		tooOld := spec.Retention.MaxAge != nil && b.Status.CompletionTime != nil && now.Sub(b.Status.CompletionTime.Time) > spec.Retention.MaxAge.Duration
		if tooMany || tooOld {
			p.Prune = append(p.Prune, b.Name)
		}
	}
	for i, b := range failed {
		if i >= keepFailed && b.DeletionTimestamp == nil {
			p.Prune = append(p.Prune, b.Name)
		}
	}

	if spec.Verify && p.LastSuccessful != "" && !slices.Contains(p.Prune, p.LastSuccessful) {
		p.Verify = p.LastSuccessful
	}

	p.Next = sched.Next(now)
	if spec.Suspend {
		return p
	}
	for t, n := sched.Next(last), 0; !t.IsZero() && !t.After(now) && n < 100000; t, n = sched.Next(t), n+1 {
		p.Due = t
	}
	if p.Due.IsZero() || len(p.Active) == 0 {
		return p
	}
	switch spec.ConcurrencyPolicy {
	case v1alpha1.ConcurrencyAllow:
	case v1alpha1.ConcurrencyReplace:
		p.Replace = p.Active
	default: // Forbid
		p.Skipped = true
	}
	return p
}

// lastSuccess is when the newest complete backup of s completed, or when s was created while
// none has: the time from which an alert measures how overdue the schedule's backups are.
func lastSuccess(s *v1alpha1.MySQLBackupSchedule, backups []*v1alpha1.MySQLBackup) time.Time {
	t := s.CreationTimestamp.Time
	for _, b := range backups {
		if b.Status.Phase == v1alpha1.JobComplete && b.Status.CompletionTime != nil && b.Status.CompletionTime.After(t) {
			t = b.Status.CompletionTime.Time
		}
	}
	return t
}

// interval is the time between the schedule's runs at next and the one after it; 0 when
// there is no next run (suspended).
func interval(sched Schedule, next time.Time) time.Duration {
	if next.IsZero() {
		return 0
	}
	after := sched.Next(next)
	if after.IsZero() {
		return 0
	}
	return after.Sub(next)
}
