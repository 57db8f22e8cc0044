package archive_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/archive"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

func TestPlanReplay(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 12, 4, 10, 0, s, 0, time.UTC) }
	entry := func(obj, start, end string, first, last int) archive.Entry {
		return archive.Entry{Object: obj, Start: start, End: end, FirstTime: at(first), LastTime: at(last), Transactions: 1}
	}
	// Four files; a failover between b and c (server 2 continues domain 0).
	chain := &archive.Index{Flavor: mysql.MariaDB, Entries: []archive.Entry{
		entry("1/a", "", "0-1-10", 0, 10),
		entry("1/b", "0-1-10", "0-1-20", 11, 20),
		entry("2/c", "0-1-20", "0-2-30", 21, 30),
		entry("2/d", "0-2-30", "0-2-40", 30, 40),
	}}
	gap := &archive.Index{Flavor: mysql.MariaDB, Entries: []archive.Entry{chain.Entries[0], chain.Entries[1], chain.Entries[3]}}
	late := &archive.Index{Flavor: mysql.MariaDB, Entries: chain.Entries[2:]}
	tp := func(s int) *time.Time { t := at(s); return &t }
	for _, tc := range []struct {
		name   string
		ix     *archive.Index
		base   string
		target archive.Target
		want   string // objects, or the start of the refusal
	}{
		{"latest from the start", chain, "", archive.Target{}, "1/a 1/b 2/c 2/d"},
		{"latest from a backup in b", chain, "0-1-15", archive.Target{}, "1/b 2/c 2/d"},
		{"a backup at a file's end skips it", chain, "0-1-20", archive.Target{}, "2/c 2/d"},
		{"time inside c", chain, "0-1-15", archive.Target{Time: tp(25)}, "1/b 2/c"},
		{"time at c's last second goes on to d, which shares it", chain, "0-1-15", archive.Target{Time: tp(30)}, "1/b 2/c 2/d"},
		{"time between files", &archive.Index{Flavor: mysql.MariaDB, Entries: []archive.Entry{entry("1/a", "", "0-1-10", 0, 10), entry("1/b", "0-1-10", "0-1-20", 15, 20)}}, "0-1-5", archive.Target{Time: tp(12)}, "1/a"},
		{"gtid in c", chain, "0-1-15", archive.Target{GTID: "0-2-25"}, "1/b 2/c"},
		{"gtid at b's end", chain, "0-1-15", archive.Target{GTID: "0-1-20"}, "1/b"},
		{"time after the archive", chain, "0-1-15", archive.Target{Time: tp(41)}, "2026-12-04T10:00:41Z is after the last archived transaction"},
		{"gtid beyond the archive", chain, "0-1-15", archive.Target{GTID: "0-2-41"}, "GTID 0-2-41 is not in the archive"},
		{"gap after b", gap, "0-1-15", archive.Target{}, "the archive has a gap: 2/d starts at GTID 0-2-30"},
		{"gap behind the target is no matter", gap, "0-1-15", archive.Target{Time: tp(18)}, "1/b"},
		{"archive starts after the backup", late, "0-1-15", archive.Target{}, "the archive does not reach back to the backup: 2/c starts at GTID 0-1-20"},
		{"bad gtid", chain, "0-1-15", archive.Target{GTID: "zz"}, `target GTID "zz"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es, err := archive.PlanReplay(tc.ix, tc.base, tc.target)
			var got string
			if err != nil {
				var u *archive.UnreachableError
				if !errors.As(err, &u) {
					t.Fatalf("not an UnreachableError: %v", err)
				}
				got = err.Error()
			} else {
				var objs []string
				for _, e := range es {
					objs = append(objs, e.Object)
				}
				got = strings.Join(objs, " ")
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %q, want %q...", got, tc.want)
			}
		})
	}
}
