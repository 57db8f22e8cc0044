package mysql

import "testing"

func TestReportsCorruption(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  string
		want bool
	}{
		// MariaDB 10.11's own words at start (TestCorruptDatadirReported has a real server say them).
		{"mariadb recovery", "2026-12-06  2:44:37 0 [ERROR] InnoDB: Unable to apply log to corrupted page 7 in file ./ibdata1\n" +
			"2026-12-06  2:44:37 0 [ERROR] InnoDB: Plugin initialization aborted with error Page read from tablespace is corrupted.\n" +
			"2026-12-06  2:44:37 0 [ERROR] Aborting\n", true},
		{"mariadb undo", "[ERROR] InnoDB: Not applying UNDO_APPEND due to corruption on [page id: space=0, page number=472]\n", true},
		{"mysql", "2026-12-06T02:44:37.000000Z 1 [ERROR] [MY-011906] [InnoDB] Database page corruption on disk or a failed file read of page [page id: space=0, page number=5].\n", true},
		{"crlf and no newline at the end", "x\r\n[ERROR] InnoDB: File './ibdata1' is corrupted", true},
		{"a note is not an error", "[Note] InnoDB: innodb_corrupt_table_action is off\n", false},
		{"another engine", "[ERROR] Aria: table is corrupted\n", false},
		{"a crash without corruption", "[ERROR] mariadbd got signal 11 ;\n[ERROR] Aborting\n", false},
		{"empty", "", false},
	} {
		if got := ReportsCorruption([]byte(tc.log)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
