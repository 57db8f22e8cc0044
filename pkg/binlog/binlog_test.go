package binlog_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/binlog"
	"github.com/mysqlop/mysql-operator/pkg/mysql"
	"github.com/mysqlop/mysql-operator/test/mariadb"
)

// On a real MariaDB: a closed file's start is the state before it, its end the state when it
// was rotated, its transactions and times are those written; the current file is open, and a
// file cut in the middle of an event reads up to its last complete event.
func TestScanMariaDBFiles(t *testing.T) {
	s := mariadb.Start(t, 1, mariadb.Options{})[0]
	ctx := context.Background()
	db := s.Admin().DB
	exec := func(q string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	pos := func() string {
		var p string
		if err := db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exec("SET GLOBAL read_only = OFF")
	exec("CREATE DATABASE pitr")
	exec("CREATE TABLE pitr.t (id INT PRIMARY KEY)")
	exec("FLUSH BINARY LOGS")
	before := pos()
	start := time.Now().Add(-time.Second)
	for i := range 5 {
		exec("INSERT INTO pitr.t VALUES (" + string(rune('1'+i)) + ")")
	}
	after := pos()
	var file string
	var p int64
	if err := db.QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&file, &p, new(string), new(string)); err != nil {
		t.Fatal(err)
	}
	exec("FLUSH BINARY LOGS")
	path := filepath.Join(s.Dir, "data", file)

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, err := binlog.Scan(f, mysql.MariaDB)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Start.String() != before || sum.End.String() != after || sum.Transactions != 5 || !sum.Closed {
		t.Errorf("closed file: start %q end %q (want %q %q), %d transactions, closed %v", sum.Start, sum.End, before, after, sum.Transactions, sum.Closed)
	}
	if sum.FirstTime.Before(start.Truncate(time.Second)) || sum.LastTime.After(time.Now()) || sum.LastTime.Before(sum.FirstTime) {
		t.Errorf("times %v .. %v, written from %v", sum.FirstTime, sum.LastTime, start)
	}
	fi, _ := f.Stat()
	if sum.Size != fi.Size() {
		t.Errorf("size %d, file %d", sum.Size, fi.Size())
	}

	// The file cut inside its last event: everything before it, not closed.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut, err := binlog.Scan(bytes.NewReader(b[:len(b)-10]), mysql.MariaDB)
	if err != nil || cut.Closed || cut.End.String() != after || cut.Size >= sum.Size {
		t.Errorf("cut file: %+v %v", cut, err)
	}

	// Cut before the fourth insert: three transactions pass, and the flavor's tool reads the
	// copy as a whole binary log ending after the third.
	cutByCount := func(n int) (binlog.CutResult, []byte) {
		t.Helper()
		var out bytes.Buffer
		seen := 0
		res, err := binlog.Cut(&out, bytes.NewReader(b), mysql.MariaDB, func(mysql.GTIDSet, time.Time) bool {
			seen++
			return seen > n
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, out.Bytes()
	}
	res, copied := cutByCount(3)
	if !res.Stopped || res.Transactions != 3 || res.Start.String() != before || res.Closed {
		t.Errorf("cut after 3: %+v (start %s end %s)", res, res.Start, res.End)
	}
	if again, err := binlog.Scan(bytes.NewReader(copied), mysql.MariaDB); err != nil || again.End.String() != res.End.String() || again.Size != int64(len(copied)) {
		t.Errorf("the copy scans as %+v, %v; cut said end %s size %d", again, err, res.End, len(copied))
	}
	if tool, err := osexec.LookPath("mariadb-binlog"); err == nil {
		cmd := osexec.Command(tool, "-")
		cmd.Stdin = bytes.NewReader(copied)
		text, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mariadb-binlog reads the copy: %v: %s", err, text)
		}
		if n := strings.Count(string(text), "INSERT INTO"); n != 3 {
			t.Errorf("mariadb-binlog shows %d inserts in the copy, want 3", n)
		}
	}
	if all, _ := cutByCount(100); all.Stopped || all.End.String() != after || all.Closed != true {
		t.Errorf("uncut copy: %+v", all)
	}

	// The current file: open, starting where the closed one ended.
	if err := db.QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&file, &p, new(string), new(string)); err != nil {
		t.Fatal(err)
	}
	cur, err := os.Open(filepath.Join(s.Dir, "data", file))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	if sum, err := binlog.Scan(cur, mysql.MariaDB); err != nil || sum.Closed || sum.Start.String() != after || sum.Transactions != 0 {
		t.Errorf("current file: %+v %v", sum, err)
	}

	if _, err := binlog.Scan(bytes.NewReader([]byte("not a binlog")), mysql.MariaDB); err != binlog.ErrNotBinlog {
		t.Errorf("bad magic: %v", err)
	}
}

// MySQL's events, built by hand from the format: Previous_gtids, then Gtid events.
func TestScanMySQLEvents(t *testing.T) {
	sid := []byte{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}
	const uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	var file bytes.Buffer
	file.Write(binlog.Magic)
	event := func(ts uint32, typ byte, body []byte) {
		h := make([]byte, 19)
		binary.LittleEndian.PutUint32(h[0:], ts)
		h[4] = typ
		binary.LittleEndian.PutUint32(h[5:], 1)
		binary.LittleEndian.PutUint32(h[9:], uint32(19+len(body)))
		file.Write(h)
		file.Write(body)
	}
	event(1000, 15, make([]byte, 80)) // format description
	prev := make([]byte, 8+16+8+16)
	binary.LittleEndian.PutUint64(prev, 1)
	copy(prev[8:], sid)
	binary.LittleEndian.PutUint64(prev[24:], 1)
	binary.LittleEndian.PutUint64(prev[32:], 1)  // start
	binary.LittleEndian.PutUint64(prev[40:], 11) // end, exclusive: 1-10
	event(1000, 35, prev)
	for i, ts := range []uint32{1001, 1005} {
		g := make([]byte, 42)
		copy(g[1:], sid)
		binary.LittleEndian.PutUint64(g[17:], uint64(11+i))
		event(ts, 33, g)
		event(ts, 2, make([]byte, 30)) // the transaction's query
	}
	event(1006, 4, make([]byte, 20)) // rotate
	sum, err := binlog.Scan(bytes.NewReader(file.Bytes()), mysql.MySQL)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Start.String() != uuid+":1-10" || sum.End.String() != uuid+":1-12" || sum.Transactions != 2 || !sum.Closed ||
		sum.FirstTime.Unix() != 1001 || sum.LastTime.Unix() != 1005 || sum.Size != int64(file.Len()) {
		t.Errorf("summary %+v (start %s end %s)", sum, sum.Start, sum.End)
	}

	// Cut at a time between the two transactions: the first passes with its query, the copy
	// ends before the second's Gtid event.
	var out bytes.Buffer
	res, err := binlog.Cut(&out, bytes.NewReader(file.Bytes()), mysql.MySQL, func(_ mysql.GTIDSet, at time.Time) bool {
		return at.After(time.Unix(1003, 0))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := 4 + 2*19 + 80 + len(prev) + 2*19 + 42 + 30
	if !res.Stopped || res.End.String() != uuid+":1-11" || res.Transactions != 1 || out.Len() != want || res.Size != int64(want) {
		t.Errorf("cut at 1003: %+v (end %s), %d bytes, want %d", res, res.End, out.Len(), want)
	}
}
