package mysql

import (
	"testing"
)

const (
	u1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	u2 = "4e11fa47-71ca-11e1-9e33-c80aa9429562"
)

func mustMySQL(t *testing.T, s string) MySQLGTIDSet {
	t.Helper()
	g, err := ParseMySQLGTIDSet(s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return g
}

func TestParseMySQLCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"":                                       "",
		u1 + ":1-5":                              u1 + ":1-5",
		u1 + ":1-3:4-5":                          u1 + ":1-5",
		u1 + ":7:1-3:2-4":                        u1 + ":1-4:7",
		u2 + ":1,\n" + u1 + ":2":                 u1 + ":2," + u2 + ":1",
		"3E11FA47-71CA-11E1-9E33-C80AA9429562:9": u1 + ":9",
	} {
		if got := mustMySQL(t, in).String(); got != want {
			t.Errorf("parse %q: %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"x:1", u1, u1 + ":0", u1 + ":5-3", u1 + ":a", "3e11fa47-71ca-11e1-9e33-c80aa942956z:1"} {
		if _, err := ParseMySQLGTIDSet(bad); err == nil {
			t.Errorf("parse %q: want an error", bad)
		}
	}
}

func TestMySQLSetMath(t *testing.T) {
	for _, tc := range []struct {
		a, b           string
		aContainsB     bool
		aMinusB, union string
	}{
		{u1 + ":1-10", u1 + ":3-5", true, u1 + ":1-2:6-10", u1 + ":1-10"},
		{u1 + ":1-5", u1 + ":1-6", false, "", u1 + ":1-6"},
		{u1 + ":1-5", u2 + ":1", false, u1 + ":1-5", u1 + ":1-5," + u2 + ":1"},
		{u1 + ":1-5:8-9", u1 + ":5-8", false, u1 + ":1-4:9", u1 + ":1-9"},
		{u1 + ":1-5", "", true, u1 + ":1-5", u1 + ":1-5"},
		{"", "", true, "", ""},
	} {
		a, b := mustMySQL(t, tc.a), mustMySQL(t, tc.b)
		if got := a.Contains(b); got != tc.aContainsB {
			t.Errorf("%q contains %q = %v", tc.a, tc.b, got)
		}
		if got := a.Subtract(b).String(); got != tc.aMinusB {
			t.Errorf("%q - %q = %q, want %q", tc.a, tc.b, got, tc.aMinusB)
		}
		if got := a.Union(b).String(); got != tc.union {
			t.Errorf("%q + %q = %q, want %q", tc.a, tc.b, got, tc.union)
		}
		// Set laws: b ⊆ a∪b, and a-b is disjoint from b.
		if !a.Union(b).Contains(b) || !a.Union(b).Contains(a) {
			t.Errorf("union of %q and %q does not contain both", tc.a, tc.b)
		}
		if !a.Contains(a.Subtract(b)) || (!a.Subtract(b).IsEmpty() && b.Contains(a.Subtract(b))) {
			t.Errorf("subtraction of %q and %q is wrong", tc.a, tc.b)
		}
	}
}

func TestMariaDBPosition(t *testing.T) {
	p, err := ParseMariaDBPosition("1-2-5, 0-1-100")
	if err != nil {
		t.Fatal(err)
	}
	if p.String() != "0-1-100,1-2-5" {
		t.Errorf("canonical %q", p.String())
	}
	for _, bad := range []string{"0-1", "a-1-2", "0-1-2-3"} {
		if _, err := ParseMariaDBPosition(bad); err == nil {
			t.Errorf("parse %q: want an error", bad)
		}
	}
	for _, tc := range []struct {
		a, b       string
		aContainsB bool
		aMinusB    string
	}{
		{"0-1-100", "0-1-90", true, "0-1-100"},
		{"0-1-90", "0-1-100", false, ""},
		{"0-1-100", "0-1-100", true, ""},
		// An errant transaction on a replica: a domain the primary does not have.
		{"0-1-100,5-3-1", "0-1-100", true, "5-3-1"},
		{"0-1-100", "0-1-100,5-3-1", false, ""},
		{"0-2-101", "0-1-100", true, "0-2-101"},
		{"", "", true, ""},
	} {
		a, _ := ParseMariaDBPosition(tc.a)
		b, _ := ParseMariaDBPosition(tc.b)
		if got := a.Contains(b); got != tc.aContainsB {
			t.Errorf("%q contains %q = %v", tc.a, tc.b, got)
		}
		if got := a.Subtract(b).String(); got != tc.aMinusB {
			t.Errorf("%q - %q = %q, want %q", tc.a, tc.b, got, tc.aMinusB)
		}
		if !a.Union(b).Contains(a) || !a.Union(b).Contains(b) {
			t.Errorf("union of %q and %q does not contain both", tc.a, tc.b)
		}
	}
}

func TestFlavorsDoNotMix(t *testing.T) {
	my := mustMySQL(t, u1+":1-3")
	ma, _ := ParseMariaDBPosition("0-1-3")
	if !my.Contains(ma) || my.Subtract(ma).String() != u1+":1-3" {
		t.Error("a MariaDB position must count as empty against a MySQL set")
	}
	if g, err := ParseGTIDSet(MariaDB, "0-1-3"); err != nil || g.String() != "0-1-3" {
		t.Errorf("ParseGTIDSet(mariadb) = %v, %v", g, err)
	}
}
