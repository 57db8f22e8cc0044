package executor

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// TestCompressRoundTrip: whatever the input's size against the segment size, the frames
// decompress, in order, to the input.
func TestCompressRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, size := range []int{0, 1, segmentSize - 1, segmentSize, segmentSize + 1, 7*segmentSize/2 + 3} {
		in := testInput(size, 5)
		var out bytes.Buffer
		// Short reads, as from a pipe: a segment fills across many.
		if err := compress(&out, &shortReader{r: bytes.NewReader(in), rng: rng}); err != nil {
			t.Fatalf("size %d: compress: %v", size, err)
		}
		d, err := Decompress(&out)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		got, err := io.ReadAll(d)
		d.Close()
		if err != nil {
			t.Fatalf("size %d: decompress: %v", size, err)
		}
		if !bytes.Equal(got, in) {
			t.Fatalf("size %d: decompressed %d bytes that differ from the input", size, len(got))
		}
	}
}

type shortReader struct {
	r   io.Reader
	rng *rand.Rand
}

func (s *shortReader) Read(p []byte) (int, error) {
	return s.r.Read(p[:min(len(p), 1+s.rng.IntN(100<<10))])
}

type failingWriter struct{ after int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.after--; f.after < 0 {
		return 0, errors.New("upload failed")
	}
	return len(p), nil
}

// endless is an input that never ends, like a tool that goes on writing.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e.n + i)
	}
	e.n += len(p)
	return len(p), nil
}

// TestCompressStopsWhenWritingFails: a failed upload ends the compression and stops reading
// the tool's output, with the upload's error.
func TestCompressStopsWhenWritingFails(t *testing.T) {
	src := &endless{}
	err := compress(&failingWriter{after: 2}, src)
	if err == nil || err.Error() != "upload failed" {
		t.Fatalf("compress = %v, want the writer's error", err)
	}
	if src.n > 20*segmentSize {
		t.Fatalf("read %d bytes after the writer failed", src.n)
	}
}

// TestCompressReturnsTheInputsError: a tool that fails mid-stream fails the compression.
func TestCompressReturnsTheInputsError(t *testing.T) {
	boom := errors.New("tool failed")
	src := io.MultiReader(io.LimitReader(&endless{}, 3*segmentSize+5), errReader{boom})
	if err := compress(io.Discard, src); !errors.Is(err, boom) {
		t.Fatalf("compress = %v, want %v", err, boom)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
