package mysql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// GTIDSet is a set of transactions in one flavor's notation. The two flavors' notations differ:
//
//   - MySQL: source UUIDs with intervals of transaction numbers,
//     "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:11-18,4e11fa47-...:1-3". A set can have gaps.
//   - MariaDB: one domain-server-sequence triple per replication domain, "0-1-100,1-2-5". With
//     gtid_strict_mode (which the operator sets) sequence numbers grow monotonically within a
//     domain, so a position stands for every transaction of the domain up to its sequence.
//
// Operations between sets of different flavors are meaningless; they treat the other set as
// empty.
type GTIDSet interface {
	// String is the canonical form: sorted, merged, without whitespace.
	String() string
	// IsEmpty reports whether the set holds no transaction.
	IsEmpty() bool
	// Contains reports whether every transaction of o is in the set.
	Contains(o GTIDSet) bool
	// Subtract returns the transactions of the set that are not in o.
	Subtract(o GTIDSet) GTIDSet
	// Union returns the transactions in either set.
	Union(o GTIDSet) GTIDSet
}

// ParseGTIDSet parses s in the notation of flavor ("mysql" or "mariadb").
func ParseGTIDSet(flavor Flavor, s string) (GTIDSet, error) {
	if flavor == MariaDB {
		return ParseMariaDBPosition(s)
	}
	return ParseMySQLGTIDSet(s)
}

// Interval is the closed range [Start, End] of transaction numbers.
type Interval struct{ Start, End uint64 }

// MySQLGTIDSet maps a source UUID to its sorted, disjoint, non-adjacent intervals.
type MySQLGTIDSet map[string][]Interval

// ParseMySQLGTIDSet parses a MySQL GTID set such as the value of @@gtid_executed.
func ParseMySQLGTIDSet(s string) (MySQLGTIDSet, error) {
	set := MySQLGTIDSet{}
	s = strings.Join(strings.Fields(s), "")
	if s == "" {
		return set, nil
	}
	for _, part := range strings.Split(s, ",") {
		fields := strings.Split(part, ":")
		uuid := strings.ToLower(fields[0])
		if len(fields) < 2 || !validUUID(uuid) {
			return nil, fmt.Errorf("parse GTID set %q: bad element %q", s, part)
		}
		for _, iv := range fields[1:] {
			lo, hi, found := strings.Cut(iv, "-")
			start, err := strconv.ParseUint(lo, 10, 64)
			if err != nil || start == 0 {
				return nil, fmt.Errorf("parse GTID set %q: bad interval %q", s, iv)
			}
			end := start
			if found {
				if end, err = strconv.ParseUint(hi, 10, 64); err != nil || end < start {
					return nil, fmt.Errorf("parse GTID set %q: bad interval %q", s, iv)
				}
			}
			set[uuid] = append(set[uuid], Interval{start, end})
		}
	}
	for uuid := range set {
		set[uuid] = normalize(set[uuid])
	}
	return set, nil
}

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if r != '-' {
				return false
			}
		case (r >= '0' && r <= '9') || (r >= 'a' && r <= 'f'):
		default:
			return false
		}
	}
	return true
}

// normalize sorts intervals and merges overlapping or adjacent ones.
func normalize(ivs []Interval) []Interval {
	ivs = slices.Clone(ivs)
	slices.SortFunc(ivs, func(a, b Interval) int {
		if a.Start < b.Start {
			return -1
		}
		if a.Start > b.Start {
			return 1
		}
		return 0
	})
	var out []Interval
	for _, iv := range ivs {
		if n := len(out); n > 0 && iv.Start <= out[n-1].End+1 {
			out[n-1].End = max(out[n-1].End, iv.End)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// String implements GTIDSet.
func (s MySQLGTIDSet) String() string {
	uuids := make([]string, 0, len(s))
	for u, ivs := range s {
		if len(ivs) > 0 {
			uuids = append(uuids, u)
		}
	}
	slices.Sort(uuids)
	var b strings.Builder
	for i, u := range uuids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(u)
		for _, iv := range s[u] {
			if iv.Start == iv.End {
				fmt.Fprintf(&b, ":%d", iv.Start)
			} else {
				fmt.Fprintf(&b, ":%d-%d", iv.Start, iv.End)
			}
		}
	}
	return b.String()
}

// IsEmpty implements GTIDSet.
func (s MySQLGTIDSet) IsEmpty() bool {
	for _, ivs := range s {
		if len(ivs) > 0 {
			return false
		}
	}
	return true
}

// Contains implements GTIDSet.
func (s MySQLGTIDSet) Contains(o GTIDSet) bool {
	return asMySQL(o).minus(s).IsEmpty()
}

func (s MySQLGTIDSet) minus(o MySQLGTIDSet) MySQLGTIDSet {
	out := MySQLGTIDSet{}
	for u, ivs := range s {
		rest := ivs
		for _, cut := range o[u] {
			rest = cutInterval(rest, cut)
		}
		if len(rest) > 0 {
			out[u] = rest
		}
	}
	return out
}

// Subtract implements GTIDSet.
func (s MySQLGTIDSet) Subtract(o GTIDSet) GTIDSet { return s.minus(asMySQL(o)) }

// Union implements GTIDSet.
func (s MySQLGTIDSet) Union(o GTIDSet) GTIDSet {
	out := MySQLGTIDSet{}
	for u, ivs := range s {
		out[u] = slices.Clone(ivs)
	}
	for u, ivs := range asMySQL(o) {
		out[u] = normalize(append(out[u], ivs...))
	}
	return out
}

// cutInterval removes cut from the sorted intervals ivs.
func cutInterval(ivs []Interval, cut Interval) []Interval {
	var out []Interval
	for _, iv := range ivs {
		if iv.End < cut.Start || iv.Start > cut.End {
			out = append(out, iv)
			continue
		}
		if iv.Start < cut.Start {
			out = append(out, Interval{iv.Start, cut.Start - 1})
		}
		if iv.End > cut.End {
			out = append(out, Interval{cut.End + 1, iv.End})
		}
	}
	return out
}

func asMySQL(o GTIDSet) MySQLGTIDSet {
	if m, ok := o.(MySQLGTIDSet); ok {
		return m
	}
	return MySQLGTIDSet{}
}

// MariaDBGTID is the last transaction of one replication domain.
type MariaDBGTID struct {
	Domain, Server uint32
	Seq            uint64
}

// MariaDBPosition maps a replication domain to its last transaction.
type MariaDBPosition map[uint32]MariaDBGTID

// ParseMariaDBPosition parses a MariaDB GTID position such as @@gtid_binlog_pos.
func ParseMariaDBPosition(s string) (MariaDBPosition, error) {
	pos := MariaDBPosition{}
	s = strings.Join(strings.Fields(s), "")
	if s == "" {
		return pos, nil
	}
	for _, part := range strings.Split(s, ",") {
		f := strings.Split(part, "-")
		if len(f) != 3 {
			return nil, fmt.Errorf("parse GTID position %q: bad element %q", s, part)
		}
		d, err1 := strconv.ParseUint(f[0], 10, 32)
		srv, err2 := strconv.ParseUint(f[1], 10, 32)
		seq, err3 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("parse GTID position %q: bad element %q", s, part)
		}
		if prev, ok := pos[uint32(d)]; ok && prev.Seq >= seq {
			continue
		}
		pos[uint32(d)] = MariaDBGTID{Domain: uint32(d), Server: uint32(srv), Seq: seq}
	}
	return pos, nil
}

// String implements GTIDSet.
func (p MariaDBPosition) String() string {
	domains := make([]uint32, 0, len(p))
	for d, g := range p {
		if g.Seq > 0 {
			domains = append(domains, d)
		}
	}
	slices.Sort(domains)
	parts := make([]string, len(domains))
	for i, d := range domains {
		g := p[d]
		parts[i] = fmt.Sprintf("%d-%d-%d", g.Domain, g.Server, g.Seq)
	}
	return strings.Join(parts, ",")
}

// IsEmpty implements GTIDSet.
func (p MariaDBPosition) IsEmpty() bool {
	for _, g := range p {
		if g.Seq > 0 {
			return false
		}
	}
	return true
}

// Contains implements GTIDSet: every domain of o is at or behind p.
func (p MariaDBPosition) Contains(o GTIDSet) bool {
	return asMariaDB(o).Subtract(p).IsEmpty()
}

// Subtract implements GTIDSet: the domains where p is ahead of o, at p's position. (A position
// cannot express "transactions 5 to 9 of a domain"; the result says where p is ahead, which is
// what errant-transaction checks need.)
func (p MariaDBPosition) Subtract(o GTIDSet) GTIDSet {
	other := asMariaDB(o)
	out := MariaDBPosition{}
	for d, g := range p {
		if g.Seq > other[d].Seq {
			out[d] = g
		}
	}
	return out
}

// Union implements GTIDSet: per domain, the more advanced position.
func (p MariaDBPosition) Union(o GTIDSet) GTIDSet {
	out := MariaDBPosition{}
	for d, g := range p {
		out[d] = g
	}
	for d, g := range asMariaDB(o) {
		if g.Seq > out[d].Seq {
			out[d] = g
		}
	}
	return out
}

func asMariaDB(o GTIDSet) MariaDBPosition {
	if m, ok := o.(MariaDBPosition); ok {
		return m
	}
	return MariaDBPosition{}
}
