package archive

import (
	"fmt"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// Target is where a point-in-time restore stops: after the last transaction at or before
// Time, or after the last transaction in GTID, or (neither set) at the end of the archive.
type Target struct {
	Time *time.Time
	GTID string
}

// String describes the target for messages.
func (t Target) String() string {
	switch {
	case t.Time != nil:
		return t.Time.UTC().Format(time.RFC3339)
	case t.GTID != "":
		return "GTID " + t.GTID
	}
	return "the end of the archive"
}

// Span is what an archive covers: the times of its first and last transactions and its GTID
// states at the start of the chain and at its end.
type Span struct {
	From, Until time.Time
	Start, End  string
}

// Span returns what the archive covers (zero times when it is empty).
func (ix *Index) Span() Span {
	var s Span
	if n := len(ix.Entries); n > 0 {
		s.From, s.Until, s.Start = ix.Entries[0].FirstTime, ix.Entries[n-1].LastTime, ix.Entries[0].Start
		for _, e := range ix.Entries {
			if e.Transactions > 0 && (s.From.IsZero() || e.FirstTime.Before(s.From)) {
				s.From = e.FirstTime
			}
			if e.LastTime.After(s.Until) {
				s.Until = e.LastTime
			}
		}
	}
	if end, err := ix.End(); err == nil {
		s.End = end.String()
	}
	return s
}

// UnreachableError says why the archive cannot bring a backup to a target.
type UnreachableError struct {
	// Reason is the cause, for a condition's message.
	Reason string
}

func (e *UnreachableError) Error() string { return e.Reason }

// PlanReplay returns the entries a replay reads to bring a backup at GTID position base to
// target, in order: from the first that holds a transaction beyond base to the one that
// holds the target. It refuses (UnreachableError) a target the archive cannot reach: the
// archive starts after base, a gap breaks the chain between base and the target, or the
// target lies after the archive's last transaction. No object is read: Check the entries.
func PlanReplay(ix *Index, base string, target Target) ([]Entry, error) {
	f := ix.Flavor
	pos, err := mysql.ParseGTIDSet(f, base)
	if err != nil {
		return nil, fmt.Errorf("the backup's GTID position: %w", err)
	}
	var goal mysql.GTIDSet
	if target.GTID != "" {
		if goal, err = mysql.ParseGTIDSet(f, target.GTID); err != nil {
			return nil, &UnreachableError{Reason: fmt.Sprintf("target GTID %q: %v", target.GTID, err)}
		}
	}
	span := ix.Span()
	covered := fmt.Sprintf("the archive holds transactions from %s to %s (GTID %s)", stamp(span.From), stamp(span.Until), orEmpty(span.End))
	if target.Time != nil && target.Time.After(span.Until) {
		return nil, &UnreachableError{Reason: fmt.Sprintf("%s is after the last archived transaction: %s", stamp(*target.Time), covered)}
	}
	end, _ := mysql.ParseGTIDSet(f, "")
	var out []Entry
	started := false
	for _, e := range ix.Entries {
		start, err := mysql.ParseGTIDSet(f, e.Start)
		if err != nil {
			return nil, fmt.Errorf("index entry %s: %w", e.Object, err)
		}
		eEnd, err := mysql.ParseGTIDSet(f, e.End)
		if err != nil {
			return nil, fmt.Errorf("index entry %s: %w", e.Object, err)
		}
		before := end
		end = end.Union(eEnd)
		if !started {
			if pos.Contains(eEnd) {
				continue // every transaction of the file is in the backup
			}
			if !pos.Contains(start) {
				return nil, &UnreachableError{Reason: fmt.Sprintf("the archive does not reach back to the backup: %s starts at GTID %s (%s), after the backup's position %s; %s",
					e.Object, orEmpty(e.Start), stamp(e.FirstTime), orEmpty(base), covered)}
			}
			started = true
		} else if !before.Union(pos).Contains(start) {
			return nil, &UnreachableError{Reason: fmt.Sprintf("the archive has a gap: %s starts at GTID %s (%s) but the chain before it ends at %s (%s); a restore cannot cross it",
				e.Object, e.Start, stamp(e.FirstTime), before, stamp(out[len(out)-1].LastTime))}
		}
		if target.Time != nil && e.FirstTime.After(*target.Time) && e.Transactions > 0 {
			return out, nil // the target lies before this file
		}
		out = append(out, e)
		if target.Time != nil && e.LastTime.After(*target.Time) {
			return out, nil // the cut lies in this file
		}
		if goal != nil && end.Union(pos).Contains(goal) {
			return out, nil
		}
	}
	if goal != nil && !end.Union(pos).Contains(goal) {
		return nil, &UnreachableError{Reason: fmt.Sprintf("GTID %s is not in the archive: %s", target.GTID, covered)}
	}
	return out, nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "nothing"
	}
	return t.UTC().Format(time.RFC3339)
}

func orEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}
