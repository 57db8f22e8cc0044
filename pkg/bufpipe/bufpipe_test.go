package bufpipe

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// TestBytesArriveInOrder sends random data in random-sized writes through buffers smaller
// than, equal to and larger than the writes, so the buffered bytes wrap around often.
func TestBytesArriveInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 256<<10)
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	for _, size := range []int{1, 7, 4096, 100_000, 2 << 20} {
		r, w := New(size)
		go func() {
			rest := data
			for len(rest) > 0 {
				k := min(len(rest), 1+rng.IntN(9000))
				if _, err := w.Write(rest[:k]); err != nil {
					w.CloseWithError(err)
					return
				}
				rest = rest[k:]
			}
			w.Close()
		}()
		var got bytes.Buffer
		buf := make([]byte, 5000)
		for {
			n, err := r.Read(buf[:1+rand.IntN(len(buf))])
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("size %d: read: %v", size, err)
			}
		}
		if !bytes.Equal(got.Bytes(), data) {
			t.Fatalf("size %d: read %d bytes that differ from the %d written", size, got.Len(), len(data))
		}
	}
}

func TestWriterErrorReachesReaderAfterBufferedBytes(t *testing.T) {
	r, w := New(16)
	boom := errors.New("tool failed")
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	w.CloseWithError(boom)
	b, err := io.ReadAll(r)
	if string(b) != "abc" || !errors.Is(err, boom) {
		t.Fatalf("ReadAll = %q, %v; want \"abc\", %v", b, err, boom)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("write after close: %v, want %v", err, io.ErrClosedPipe)
	}
}

// TestFullBufferHoldsTheWriter: the buffer bounds memory. A write larger than the room left
// waits for the reader, and a reader that goes away releases it with the reader's error.
func TestFullBufferHoldsTheWriter(t *testing.T) {
	r, w := New(8)
	done := make(chan error, 1)
	go func() {
		_, err := w.Write([]byte("0123456789"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a write of 10 bytes into 8 returned (%v) before anything was read", err)
	case <-time.After(50 * time.Millisecond):
	}
	buf := make([]byte, 4)
	if n, err := io.ReadFull(r, buf); n != 4 || err != nil || string(buf) != "0123" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if err := <-done; err != nil {
		t.Fatalf("write after room was made: %v", err)
	}

	// Full again; the reader closes with an error.
	go func() {
		_, err := w.Write([]byte("abcdefgh"))
		done <- err
	}()
	stop := errors.New("upload failed")
	time.Sleep(20 * time.Millisecond)
	r.CloseWithError(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("blocked write after the reader closed: %v, want %v", err, stop)
	}
	if _, err := r.Read(buf); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("read after the reader closed: %v, want %v", err, io.ErrClosedPipe)
	}
}

func TestCloseWakesAWaitingReader(t *testing.T) {
	r, w := New(8)
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 4))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	w.Close()
	if err := <-done; err != io.EOF {
		t.Fatalf("read of an empty closed pipe: %v, want EOF", err)
	}
}

// BenchmarkThroughput copies 64 KiB writes through a 4 MiB pipe, against io.Pipe.
func BenchmarkThroughput(b *testing.B) {
	chunk := make([]byte, 64<<10)
	for _, c := range []struct {
		name string
		new  func() (io.Reader, io.WriteCloser)
	}{
		{"bufpipe", func() (io.Reader, io.WriteCloser) { return New(4 << 20) }},
		{"io.Pipe", func() (io.Reader, io.WriteCloser) { return io.Pipe() }},
	} {
		b.Run(c.name, func(b *testing.B) {
			r, w := c.new()
			b.SetBytes(int64(len(chunk)))
			go func() {
				for range b.N {
					w.Write(chunk)
				}
				w.Close()
			}()
			io.Copy(io.Discard, r)
		})
	}
}
