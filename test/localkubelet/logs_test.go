package localkubelet

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStampLines(t *testing.T) {
	at := time.Date(2026, 12, 5, 14, 0, 0, 123000000, time.UTC)
	long := strings.Repeat("x", maxLine+10)
	var out bytes.Buffer
	stampLines(strings.NewReader("one\ntwo\n"+long+"\nlast without newline"), &out, func() time.Time { return at })
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{"one", "two", strings.Repeat("x", maxLine), strings.Repeat("x", 10), "last without newline"}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
	for i, l := range got {
		ts, rest, _ := strings.Cut(l, " ")
		if ts != "2026-12-05T14:00:00.123Z" || rest != want[i] {
			t.Errorf("line %d: %.40q, want %.40q stamped", i, l, want[i])
		}
	}
}

func TestParseLogOptions(t *testing.T) {
	now := time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		query string
		want  logOptions
		err   bool
	}{
		{"", logOptions{tail: -1}, false},
		{"follow=true&previous=1&timestamps=true&tailLines=5&limitBytes=100", logOptions{follow: true, previous: true, timestamps: true, tail: 5, limit: 100}, false},
		{"sinceSeconds=60", logOptions{tail: -1, since: now.Add(-time.Minute)}, false},
		{"sinceTime=2026-12-05T13:00:00Z", logOptions{tail: -1, since: now.Add(-time.Hour)}, false},
		{"tailLines=-1", logOptions{}, true},
		{"follow=maybe", logOptions{}, true},
		{"sinceTime=yesterday", logOptions{}, true},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := parseLogOptions(q, now)
		if (err != nil) != tc.err {
			t.Errorf("%q: err %v, want error %v", tc.query, err, tc.err)
			continue
		}
		if !tc.err && got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.query, got, tc.want)
		}
	}
}

// writeLogs over a file of two runs: the selections kubectl logs makes.
func TestWriteLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	first := "2026-12-05T13:00:00Z a\n2026-12-05T13:00:01Z b\n"
	second := "2026-12-05T13:59:00Z c\n2026-12-05T13:59:30Z d\n2026-12-05T13:59:59Z e\n"
	if err := os.WriteFile(path, []byte(first+second), 0o600); err != nil {
		t.Fatal(err)
	}
	cur := int64(len(first))
	done := make(chan struct{})
	close(done)
	since := time.Date(2026, 12, 5, 13, 59, 10, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		start, end int64
		o          logOptions
		want       string
	}{
		{"current", cur, -1, logOptions{tail: -1}, "c\nd\ne\n"},
		{"previous", 0, cur, logOptions{tail: -1}, "a\nb\n"},
		{"timestamps", 0, cur, logOptions{tail: -1, timestamps: true}, first},
		{"tail", cur, -1, logOptions{tail: 2}, "d\ne\n"},
		{"tail 0", cur, -1, logOptions{tail: 0}, ""},
		{"since", cur, -1, logOptions{tail: -1, since: since}, "d\ne\n"},
		{"limit", cur, -1, logOptions{tail: -1, limit: 3}, "c\nd"},
		{"follow a finished run", cur, -1, logOptions{tail: -1, follow: true}, "c\nd\ne\n"},
	} {
		var out bytes.Buffer
		if err := writeLogs(context.Background(), &out, func() {}, path, tc.start, tc.end, done, tc.o); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if out.String() != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, out.String(), tc.want)
		}
	}
}

// Following a running container's log returns what is appended, and ends when the run ends.
func TestWriteLogsFollows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		stampLines(r, f, time.Now)
	}()
	if _, err := w.WriteString("before\n"); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	finished := make(chan error, 1)
	go func() {
		finished <- writeLogs(context.Background(), out, func() {}, path, 0, -1, done, logOptions{tail: -1, follow: true})
	}()
	for _, l := range []string{"after 1\n", "after 2\n"} {
		time.Sleep(50 * time.Millisecond)
		if _, err := w.WriteString(l); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-finished:
		t.Fatalf("follow ended while the run goes on: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	w.Close()
	select {
	case err := <-finished:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end with the run")
	}
	if got := out.String(); got != "before\nafter 1\nafter 2\n" {
		t.Errorf("followed %q", got)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
