package executor

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// testInput is size bytes that compress about as a backup does: half random letters, half
// repeats, something for both of zstd's stages to do.
func testInput(size int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	in := make([]byte, size)
	for i := range in {
		if i%2048 < 1024 {
			in[i] = 'a' + byte(rng.IntN(26))
		} else {
			in[i] = in[i-1024]
		}
	}
	return in
}

func compressed(t testing.TB, in []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := compress(&out, bytes.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// streamEncoded is in as zstd's stream encoder writes it: one frame without a declared size,
// as backups were written before compress.
func streamEncoded(t testing.TB, in []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	enc, err := zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// decompressAll reads all of z through Read (viaWriteTo false) or WriteTo, and says how many
// frames (or rests of the stream) went to the stream decoder.
func decompressAll(t *testing.T, z []byte, viaWriteTo bool) (out []byte, streamed int, err error) {
	t.Helper()
	rc, err := Decompress(&shortReader{r: bytes.NewReader(z), rng: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if viaWriteTo {
		_, err = rc.(io.WriterTo).WriteTo(&buf)
	} else {
		_, err = io.Copy(&buf, struct{ io.Reader }{rc})
	}
	streamed = rc.(*frameDecoder).streamed
	rc.Close()
	return buf.Bytes(), streamed, err
}

// TestDecompress: compress's frames are decoded on their own; a frame that decodes to more, or
// may, by the stream decoder from memory; anything else by the stream decoder from there to the
// end. Either way the output is the input, through Read and WriteTo.
func TestDecompress(t *testing.T) {
	small, large := testInput(3*segmentSize+5, 1), testInput(maxParallelFrame+1, 2)
	oneFrame := func(in []byte) []byte {
		enc, _ := zstd.NewWriter(nil)
		defer enc.Close()
		return enc.EncodeAll(in, nil)
	}
	// Random bytes do not compress: the stream encoder's frame is larger than maxParallelFrame.
	noise := make([]byte, maxParallelFrame+segmentSize)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	skippable := []byte{0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'}
	for _, tc := range []struct {
		name         string
		z, want      []byte
		wantStreamed int
	}{
		{"frames of compress", compressed(t, small), small, 0},
		{"empty input to compress", compressed(t, nil), nil, 0},
		{"nothing at all", nil, nil, 0},
		{"one frame of a stream encoder", streamEncoded(t, small), small, 0},
		{"a stream encoder's frame larger than a parallel one", streamEncoded(t, large), large, 1},
		{"compress's frames, then a stream encoder's", append(compressed(t, small), streamEncoded(t, large)...), append(append([]byte{}, small...), large...), 1},
		{"compress's frames, then a frame too large to hold", append(compressed(t, small), streamEncoded(t, noise)...), append(append([]byte{}, small...), noise...), 1},
		{"a frame that declares more than a parallel one", oneFrame(large), large, 1},
		{"compress's frames around a skippable frame", append(append(compressed(t, small), skippable...), compressed(t, small)...), append(append([]byte{}, small...), small...), 1},
	} {
		for _, viaWriteTo := range []bool{false, true} {
			got, streamed, err := decompressAll(t, tc.z, viaWriteTo)
			if err != nil {
				t.Fatalf("%s (WriteTo %v): %v", tc.name, viaWriteTo, err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("%s (WriteTo %v): decompressed %d bytes that differ from the %d of the input", tc.name, viaWriteTo, len(got), len(tc.want))
			}
			if streamed != tc.wantStreamed {
				t.Errorf("%s (WriteTo %v): %d frames or rests streamed, want %d", tc.name, viaWriteTo, streamed, tc.wantStreamed)
			}
		}
	}
}

// TestDecompressDamaged: a stream cut anywhere inside a frame, or with a changed byte, is an
// error, never a shorter output that looks whole.
func TestDecompressDamaged(t *testing.T) {
	in := testInput(2*segmentSize+100, 3)
	z := compressed(t, in)
	first := frameLen(t, z)
	cuts := []int{1, 4, 5, 6, 9, 100, first - 5, first - 1, first + 1, first + 3, len(z) - 1}
	for _, cut := range cuts {
		for _, viaWriteTo := range []bool{false, true} {
			if _, _, err := decompressAll(t, z[:cut], viaWriteTo); err == nil {
				t.Errorf("cut after %d of %d bytes (WriteTo %v): no error", cut, len(z), viaWriteTo)
			}
		}
	}
	// A cut between frames leaves a valid, shorter stream: the recorded checksum catches it.
	if got, _, err := decompressAll(t, z[:first], false); err != nil || !bytes.Equal(got, in[:segmentSize]) {
		t.Errorf("cut between frames: %d bytes, %v; want the first segment", len(got), err)
	}
	for _, at := range []int{first / 2, first + 200, len(z) - 2} {
		bad := bytes.Clone(z)
		bad[at] ^= 0x55
		if _, _, err := decompressAll(t, bad, false); err == nil {
			t.Errorf("byte %d changed: no error", at)
		}
	}
	if _, _, err := decompressAll(t, []byte("not a zstd stream at all"), false); err == nil {
		t.Error("not zstd: no error")
	}
}

// frameLen is the length of z's first frame.
func frameLen(t *testing.T, z []byte) int {
	t.Helper()
	f, whole, err := readFrame(bufio.NewReader(bytes.NewReader(z)), nil)
	if err != nil || !whole {
		t.Fatalf("read the first frame: whole %v, %v", whole, err)
	}
	return len(f)
}

// watchedReader counts reads that start after closed is set.
type watchedReader struct {
	r           io.Reader
	closed      atomic.Bool
	readsClosed atomic.Int32
}

func (w *watchedReader) Read(p []byte) (int, error) {
	if w.closed.Load() {
		w.readsClosed.Add(1)
	}
	return w.r.Read(p[:min(len(p), 64<<10)])
}

// TestDecompressClose: closed half way, the decoder stops reading its input before Close
// returns (a restore then reads the rest itself to check the object's sum).
func TestDecompressClose(t *testing.T) {
	in := testInput(8*segmentSize, 4)
	src := &watchedReader{r: bytes.NewReader(compressed(t, in))}
	rc, err := Decompress(src)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, segmentSize+10)
	if _, err := io.ReadFull(rc, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, in[:len(got)]) {
		t.Fatal("the first bytes differ from the input")
	}
	rc.Close()
	src.closed.Store(true)
	rest, err := io.ReadAll(src.r)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) == 0 {
		t.Error("the decoder read the whole input though it was closed after a frame")
	}
	if n := src.readsClosed.Load(); n != 0 {
		t.Errorf("%d reads of the input after Close returned", n)
	}
	if err := rc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestDecompressReaderError: the input's error reaches the reader.
func TestDecompressReaderError(t *testing.T) {
	z := compressed(t, testInput(3*segmentSize, 5))
	broken := errors.New("download broke")
	rc, err := Decompress(io.MultiReader(bytes.NewReader(z[:len(z)/2]), errReader{broken}))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.Copy(io.Discard, rc); !errors.Is(err, broken) {
		t.Fatalf("read = %v, want the input's error", err)
	}
}

// BenchmarkDecompress compares zstd's stream decoder (what Decompress was) with the frame
// decoder on compress's output.
func BenchmarkDecompress(b *testing.B) {
	in := testInput(64<<20, 6)
	z := compressed(b, in)
	run := func(b *testing.B, open func(io.Reader) (io.ReadCloser, error)) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			rc, err := open(bytes.NewReader(z))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, rc); err != nil {
				b.Fatal(err)
			}
			rc.Close()
		}
	}
	b.Run("stream", func(b *testing.B) {
		run(b, func(r io.Reader) (io.ReadCloser, error) {
			d, err := zstd.NewReader(bufio.NewReaderSize(r, 1<<20))
			if err != nil {
				return nil, err
			}
			return d.IOReadCloser(), nil
		})
	})
	b.Run("frames", func(b *testing.B) { run(b, Decompress) })
}
