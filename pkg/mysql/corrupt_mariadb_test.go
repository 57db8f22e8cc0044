package mysql_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

// A real server's log: crash recovery after a SIGKILL is not taken for corruption, and a
// datadir with a damaged system tablespace page stops the server at start with words that are.
func TestCorruptDatadirReported(t *testing.T) {
	// MySQL's words are in the unit test; this damage and these messages are MariaDB's.
	mariadb.RequireMariaDB(t)
	s := mariadb.Start(t, 1, mariadb.Options{})[0]
	if _, err := s.Admin().DB.Exec("CREATE TABLE mysql.corrupt_test (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	s.Restart()
	if mysql.ReportsCorruption([]byte(s.ErrorLog())) {
		t.Fatalf("crash recovery taken for corruption:\n%s", s.ErrorLog())
	}

	s.Stop()
	// Page 6 of the system tablespace is read at every start (a rollback segment header).
	f, err := os.OpenFile(filepath.Join(s.DataDir(), "ibdata1"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = 0xde
	}
	if _, err := f.WriteAt(junk, 6*16384+100); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.TryRestart(); err == nil {
		t.Fatal("the server started on a damaged system tablespace")
	}
	if !mysql.ReportsCorruption([]byte(s.ErrorLog())) {
		t.Fatalf("the log of a start stopped by corruption is not recognised:\n%s", s.ErrorLog())
	}
}
