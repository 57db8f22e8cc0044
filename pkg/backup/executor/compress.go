package executor

import (
	"errors"
	"io"
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// segmentSize is how much of a backup one zstd frame holds. Frames are compressed on several
// cores at once; a frame is independent of the others, which costs little ratio at the
// fastest level (its matches are short-range anyway).
const segmentSize = 2 << 20

// compress writes src to dst as zstd frames of segmentSize bytes of input each, compressed
// on up to GOMAXPROCS cores (at most 4) and written in order. Concatenated frames are one zstd
// stream to any decoder, Decompress included. zstd's own stream encoder compresses one block
// at a time: on the benchmark's 1 GiB that one core was the backup's slowest stage.
// Memory: (workers + 1) × 2 segments, whatever the size of src.
func compress(dst io.Writer, src io.Reader) error {
	workers := frameWorkers()
	// All literals entropy-coded: at the fastest level a block in which no match is found is
	// otherwise stored as it is, and text without repeats (hex, base64, numbers) then does not
	// compress at all. BenchmarkCompress on 2 cores: hex text 0.5 of its size at 0.7-0.9 GB/s
	// (without: 1.0 at 1.6-3.1 GB/s); random bytes stay as they are at 1.6-1.9 GB/s (3.5 GB/s
	// without), still faster than a dump tool writes.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(workers),
		zstd.WithAllLitEntropyCompression(true))
	if err != nil {
		return err
	}
	defer enc.Close()

	type segment struct {
		in, out []byte
		done    chan struct{}
	}
	free := make(chan *segment, workers+1)
	for range workers + 1 {
		free <- &segment{in: make([]byte, segmentSize), done: make(chan struct{}, 1)}
	}
	// Segments go to the writer in input order and are compressed meanwhile; free bounds how
	// many are in flight.
	ordered := make(chan *segment, workers+1)
	writeErr := make(chan error, 1)
	failed := make(chan struct{})
	go func() {
		var err error
		wrote := false
		for s := range ordered {
			<-s.done
			if err == nil {
				if _, err = dst.Write(s.out); err != nil {
					close(failed)
				}
				wrote = true
			}
			free <- s
		}
		if err == nil && !wrote {
			// An empty input is still one (empty) frame, as the stream encoder wrote.
			_, err = dst.Write(enc.EncodeAll(nil, nil))
		}
		writeErr <- err
	}()

	var readErr error
	for readErr == nil {
		var s *segment
		select {
		case s = <-free:
		case <-failed:
			readErr = errStopped
			continue
		}
		n, err := io.ReadFull(src, s.in)
		if n == 0 {
			free <- s
		} else {
			go func(in []byte) {
				s.out = enc.EncodeAll(in, s.out[:0])
				s.done <- struct{}{}
			}(s.in[:n])
			ordered <- s
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			readErr = io.EOF
		case err != nil:
			readErr = err
		}
	}
	close(ordered)
	if err := <-writeErr; err != nil {
		return err
	}
	if readErr != io.EOF {
		return readErr
	}
	return nil
}

// frameWorkers is how many frames compress and Decompress work on at once: one per core the
// process may use, at most 4.
func frameWorkers() int { return min(max(runtime.GOMAXPROCS(0), 1), 4) }

// errStopped ends reading once writing failed; the write's error is the one returned.
var errStopped = errors.New("stopped")
