// Package binlog reads what point-in-time recovery needs from a binary log file without a
// server: the GTID state before its first transaction, the state after its last complete one,
// the times of its first and last transactions, and whether the server closed it. It walks the
// v4 event headers (19 bytes: timestamp, type, server_id, length, next position, flags) and
// decodes only the GTID events and the GTID-list event at the file's start, for MariaDB
// (Gtid_list, GTID) and MySQL (Previous_gtids, Gtid). Encrypted or compressed binary logs are
// not supported; the operator enables neither.
package binlog

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/mysql"
)

// Magic starts every binary log file.
var Magic = []byte{0xfe, 'b', 'i', 'n'}

// Event types read by Scan.
const (
	typeStop            = 3
	typeRotate          = 4
	typeMySQLGTID       = 33
	typeMySQLAnonymous  = 34
	typeMySQLPrevious   = 35
	typeMariaDBGTID     = 162
	typeMariaDBGTIDList = 163
	headerLen           = 19
	// maxEvent bounds one event (MariaDB's max_allowed_packet cannot exceed 1 GiB).
	maxEvent = 1 << 30
)

// Summary is what a binary log file holds, for archiving and replay.
type Summary struct {
	// Start is the GTID state before the file's first transaction.
	Start mysql.GTIDSet
	// End is Start with every complete transaction of the file.
	End mysql.GTIDSet
	// FirstTime and LastTime are the times of its first and last transactions (zero when it
	// has none).
	FirstTime, LastTime time.Time
	// Transactions counts the GTID events.
	Transactions int
	// Closed reports whether the file ends with a Rotate or Stop event: the server went on in
	// another file, so the file never grows again.
	Closed bool
	// Size is the length of the file up to its last complete event.
	Size int64
}

// ErrNotBinlog is returned for a file without the binary log magic.
var ErrNotBinlog = errors.New("not a binary log (bad magic)")

// Scan reads a binary log of flavor from r. A file being written can end in a partial event:
// Scan stops before it, and Size says how far it read.
func Scan(r io.Reader, flavor mysql.Flavor) (Summary, error) {
	return walk(r, flavor, nil)
}

// CutResult says what Cut passed on.
type CutResult struct {
	Summary
	// Stopped reports that Cut stopped before a transaction the stop function refused: the
	// target lies in this file, so later files hold nothing to replay.
	Stopped bool
}

// Cut copies the binary log of flavor read from r to w, event by event, up to the first
// transaction for which stop returns true (given the transaction's GTID and time); that
// transaction and everything after it are left out. The copy is a valid binary log that ends
// at a transaction boundary, for the flavor's binlog tool to read. The result summarises what
// was copied.
func Cut(w io.Writer, r io.Reader, flavor mysql.Flavor, stop func(gtid mysql.GTIDSet, t time.Time) bool) (CutResult, error) {
	var res CutResult
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.Write(Magic); err != nil {
		return res, err
	}
	sum, err := walk(r, flavor, func(raw []byte, gtid mysql.GTIDSet, t time.Time) (bool, error) {
		if gtid != nil && stop(gtid, t) {
			res.Stopped = true
			return false, nil
		}
		_, err := bw.Write(raw)
		return err == nil, err
	})
	res.Summary = sum
	if err != nil {
		return res, err
	}
	return res, bw.Flush()
}

// visit is called by walk with each complete event (header and body) and, for a transaction's
// first event, its GTID and time; returning false ends the walk before the event.
type visit func(raw []byte, gtid mysql.GTIDSet, t time.Time) (bool, error)

// walk reads the events of a binary log and summarises those that visit (nil: all) accepts.
func walk(r io.Reader, flavor mysql.Flavor, v visit) (Summary, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic := make([]byte, 4)
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != string(Magic) {
		return Summary{}, ErrNotBinlog
	}
	empty, _ := mysql.ParseGTIDSet(flavor, "")
	s := Summary{Start: empty, End: empty, Size: 4}
	var raw []byte
	for {
		if cap(raw) < headerLen {
			raw = make([]byte, headerLen, 64<<10)
		}
		header := raw[:headerLen]
		if _, err := io.ReadFull(br, header); err != nil {
			return s, nil // the end, or a partial header of an event being written
		}
		ts := binary.LittleEndian.Uint32(header[0:])
		typ := header[4]
		serverID := binary.LittleEndian.Uint32(header[5:])
		length := binary.LittleEndian.Uint32(header[9:])
		if length < headerLen || length > maxEvent {
			return s, fmt.Errorf("event at %d: bad length %d", s.Size, length)
		}
		if cap(raw) < int(length) {
			grown := make([]byte, length)
			copy(grown, header)
			raw = grown
		}
		raw = raw[:length]
		body := raw[headerLen:]
		if _, err := io.ReadFull(br, body); err != nil {
			return s, nil // a partial event
		}
		var gtid mysql.GTIDSet
		var err error
		switch typ {
		case typeMariaDBGTID:
			if len(body) < 12 {
				return s, fmt.Errorf("GTID event at %d: %d bytes", s.Size, len(body))
			}
			g := mysql.MariaDBGTID{Seq: binary.LittleEndian.Uint64(body[0:]), Domain: binary.LittleEndian.Uint32(body[8:]), Server: serverID}
			gtid = mysql.MariaDBPosition{g.Domain: g}
		case typeMySQLGTID:
			if len(body) < 25 {
				return s, fmt.Errorf("GTID event at %d: %d bytes", s.Size, len(body))
			}
			gno := binary.LittleEndian.Uint64(body[17:])
			gtid = mysql.MySQLGTIDSet{uuid(body[1:17]): {{Start: gno, End: gno}}}
		case typeMySQLAnonymous:
			gtid = empty
		}
		t := time.Unix(int64(ts), 0).UTC()
		if v != nil {
			if ok, err := v(raw, gtid, t); err != nil || !ok {
				return s, err
			}
		}
		s.Size += int64(length)
		switch typ {
		case typeStop, typeRotate:
			s.Closed = true
		case typeMariaDBGTIDList:
			s.Start, err = mariaDBGTIDList(body)
			s.End = s.Start
		case typeMySQLPrevious:
			s.Start, err = mysqlPreviousGTIDs(body)
			s.End = s.Start
		}
		if gtid != nil {
			s.End = s.End.Union(gtid)
			s.transaction(t)
		}
		if err != nil {
			return s, err
		}
	}
}

func (s *Summary) transaction(t time.Time) {
	if s.Transactions == 0 {
		s.FirstTime = t
	}
	s.LastTime = t
	s.Transactions++
}

// mariaDBGTIDList decodes a Gtid_list event: a count (low 28 bits), then per domain its
// domain, server and sequence number.
func mariaDBGTIDList(b []byte) (mysql.MariaDBPosition, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("a Gtid_list event: %d bytes", len(b))
	}
	n := int(binary.LittleEndian.Uint32(b) & 0x0fffffff)
	b = b[4:]
	if len(b) < 16*n {
		return nil, fmt.Errorf("a Gtid_list event: %d entries in %d bytes", n, len(b))
	}
	pos := mysql.MariaDBPosition{}
	for i := range n {
		e := b[16*i:]
		g := mysql.MariaDBGTID{Domain: binary.LittleEndian.Uint32(e), Server: binary.LittleEndian.Uint32(e[4:]), Seq: binary.LittleEndian.Uint64(e[8:])}
		if g.Seq > pos[g.Domain].Seq {
			pos[g.Domain] = g
		}
	}
	return pos, nil
}

// mysqlPreviousGTIDs decodes a Previous_gtids event: a count of source UUIDs, then per UUID
// its 16 bytes and a count of intervals [start, end) of 8-byte numbers.
func mysqlPreviousGTIDs(b []byte) (mysql.MySQLGTIDSet, error) {
	bad := fmt.Errorf("a Previous_gtids event: truncated (%d bytes)", len(b))
	if len(b) < 8 {
		return nil, bad
	}
	n := binary.LittleEndian.Uint64(b)
	b = b[8:]
	set := mysql.MySQLGTIDSet{}
	for range n {
		if len(b) < 24 {
			return nil, bad
		}
		sid := uuid(b[:16])
		m := binary.LittleEndian.Uint64(b[16:])
		b = b[24:]
		if uint64(len(b)) < 16*m {
			return nil, bad
		}
		for j := range m {
			start, end := binary.LittleEndian.Uint64(b[16*j:]), binary.LittleEndian.Uint64(b[16*j+8:])
			if end > start {
				set[sid] = append(set[sid], mysql.Interval{Start: start, End: end - 1})
			}
		}
		b = b[16*m:]
	}
	// Union normalises the intervals.
	return mysql.MySQLGTIDSet{}.Union(set).(mysql.MySQLGTIDSet), nil
}

// uuid formats 16 bytes as a UUID.
func uuid(b []byte) string {
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
