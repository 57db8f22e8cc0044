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
		got, _, err := decompressAll(t, out.Bytes(), false)
		if err != nil {
			t.Fatalf("size %d: decompress: %v", size, err)
		}
		if !bytes.Equal(got, in) {
			t.Fatalf("size %d: decompressed %d bytes that differ from the input", size, len(got))
		}
	}
}

// hexText is size random hexadecimal digits: no match for zstd to find, yet four bits of
// information per byte, as in a dump of hashes, UUIDs or hex-encoded blobs.
func hexText(size int, seed uint64) []byte {
	const digits = "0123456789abcdef"
	rng := rand.New(rand.NewPCG(seed, 9))
	in := make([]byte, size)
	for i := range in {
		in[i] = digits[rng.IntN(16)]
	}
	return in
}

// TestCompressTextWithoutMatches: data in which zstd's fastest level finds no match is still
// entropy-coded. By default that level stores such blocks as they are: a dump of hex text
// came out at 86 % of its size, and the S3 server and the disk took the rest.
func TestCompressTextWithoutMatches(t *testing.T) {
	in := hexText(3*segmentSize+5, 1)
	out := compressed(t, in)
	if ratio := float64(len(out)) / float64(len(in)); ratio > 0.6 {
		t.Fatalf("hex text compressed to %.2f of its size, want at most 0.6 (four bits of eight are information)", ratio)
	}
	got, _, err := decompressAll(t, out, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, in) {
		t.Fatal("decompressed hex text differs from the input")
	}
}

// BenchmarkCompress measures compress on 64 MiB each of hex text (no matches, entropy-coded),
// testInput (matches) and random bytes (incompressible):
// go test -bench Compress ./pkg/backup/executor/
func BenchmarkCompress(b *testing.B) {
	random := make([]byte, 64<<20)
	_, _ = rand.NewChaCha8([32]byte{4}).Read(random)
	for _, in := range []struct {
		name string
		data []byte
	}{{"hex", hexText(64<<20, 2)}, {"repeats", testInput(64<<20, 3)}, {"random", random}} {
		b.Run(in.name, func(b *testing.B) {
			var out countingWriter
			b.SetBytes(int64(len(in.data)))
			for range b.N {
				out.n = 0
				if err := compress(&out, bytes.NewReader(in.data)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(out.n)/float64(len(in.data)), "ratio")
		})
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
