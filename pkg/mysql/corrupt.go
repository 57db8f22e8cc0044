package mysql

import (
	"bufio"
	"bytes"
)

// ReportsCorruption reports whether log, the end of one run of a server's error log, has
// InnoDB reporting corrupt data as an error. Both flavors say so when crash recovery or a read
// at start finds a page it cannot use, before the server stops:
//
//	MariaDB: [ERROR] InnoDB: File './ibdata1' is corrupted
//	         [ERROR] InnoDB: Plugin initialization aborted with error Data structure corruption
//	MySQL:   [ERROR] [MY-011906] [InnoDB] Database page corruption on disk or a failed file read ...
//
// Such a server fails the same way at every start: only other data (a copy of a healthy
// peer) brings the member back.
func ReportsCorruption(log []byte) bool {
	s := bufio.NewScanner(bytes.NewReader(log))
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for s.Scan() {
		line := s.Bytes()
		if bytes.Contains(line, []byte("[ERROR]")) && bytes.Contains(line, []byte("InnoDB")) &&
			bytes.Contains(bytes.ToLower(line), []byte("corrupt")) {
			return true
		}
	}
	return false
}
