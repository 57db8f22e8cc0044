package executor

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

func TestReplayCommand(t *testing.T) {
	for _, tc := range []struct {
		flavor mysql.Flavor
		start  string
		want   string
	}{
		{mysql.MariaDB, "0-1-50", "mariadb-binlog --start-position=0-1-50 -"},
		{mysql.MariaDB, "", "mariadb-binlog -"},
		{mysql.MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-50", "mysqlbinlog --skip-gtids --exclude-gtids=3e11fa47-71ca-11e1-9e33-c80aa9429562:1-50 -"},
		{mysql.MySQL, "", "mysqlbinlog --skip-gtids -"},
	} {
		name, args := ReplayCommand(tc.flavor, tc.start)
		if got := strings.Join(append([]string{name}, args...), " "); got != tc.want {
			t.Errorf("%s from %q: %s, want %s", tc.flavor, tc.start, got, tc.want)
		}
	}
}

// The original server_id and sequence number lines go, on MariaDB only; everything else,
// long lines included, passes byte for byte.
func TestCopyReplayedDropsOriginalIdentity(t *testing.T) {
	long := strings.Repeat("x", 600<<10)
	in := strings.Join([]string{
		"# at 4",
		"/*M!100001 SET @@session.gtid_domain_id=0*//*!*/;",
		"/*M!100001 SET @@session.server_id=7*//*!*/;",
		"/*!100001 SET @@session.server_id=7*//*!*/;",
		"/*M!100001 SET @@session.gtid_seq_no=4*//*!*/;",
		"BINLOG '" + long + "'/*!*/;",
		"/*M!100001 SET @@session.server_id=7*//*!*/;",
		"COMMIT/*!*/;",
		"-- SET @@session.server_id=7 in a comment stays",
		"",
	}, "\n")
	want := strings.Join([]string{
		"# at 4",
		"/*M!100001 SET @@session.gtid_domain_id=0*//*!*/;",
		"BINLOG '" + long + "'/*!*/;",
		"COMMIT/*!*/;",
		"-- SET @@session.server_id=7 in a comment stays",
		"",
	}, "\n")
	for _, tc := range []struct {
		flavor mysql.Flavor
		want   string
	}{{mysql.MariaDB, want}, {mysql.MySQL, in}} {
		var out bytes.Buffer
		if err := copyReplayed(&out, strings.NewReader(in), func(l []byte) bool { return dropReplayed(tc.flavor, l) }); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("%s: %d bytes out, want %d", tc.flavor, out.Len(), len(tc.want))
		}
	}
	// A line without its newline at the end of the stream still passes.
	var out bytes.Buffer
	if err := copyReplayed(&out, strings.NewReader("ROLLBACK"), func([]byte) bool { return false }); err != nil || out.String() != "ROLLBACK" {
		t.Errorf("last line: %q, %v", out.String(), err)
	}
}
