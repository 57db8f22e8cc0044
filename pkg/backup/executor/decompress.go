package executor

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// maxParallelFrame bounds a frame decoded on its own, before and after decompression. compress
// writes frames of segmentSize bytes of input, well below it. A frame that decodes to more, or
// may (it does not declare its size), is decoded by zstd's stream decoder from memory; one that
// is larger itself (a backup written by the stream encoder, before compress) ends the parallel
// decoding: from there on the stream decoder reads the rest.
const maxParallelFrame = 4 * segmentSize

// Decompress returns a reader of the original stream of a backup written by Run. Frames of
// compress's size are decoded on up to GOMAXPROCS cores (at most 4) and read in order: zstd's
// stream decoder decodes one block at a time, which on 2 cores made a restore's decompression
// slower than the tool it feeds. Memory: (workers + 2) frames, whatever the stream's size.
// Close waits until the stream is no longer read.
func Decompress(r io.Reader) (io.ReadCloser, error) {
	workers := frameWorkers()
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(workers), zstd.WithDecoderMaxMemory(maxParallelFrame))
	if err != nil {
		return nil, fmt.Errorf("open zstd stream: %w", err)
	}
	d := &frameDecoder{
		dec:     dec,
		free:    make(chan *frame, workers+2),
		results: make(chan *frame, workers+2),
		stop:    make(chan struct{}),
		split:   make(chan struct{}),
	}
	for range workers + 2 {
		d.free <- &frame{done: make(chan struct{}, 1)}
	}
	go d.splitFrames(bufio.NewReaderSize(r, 1<<20))
	return d, nil
}

// frame is one zstd frame: its bytes, and once done, what it decodes to. When streamed is set,
// it decodes to more than a frame decoded on its own may, and the stream decoder reads in
// instead; when rest is set, the frame did not fit in memory and the stream decoder reads rest.
type frame struct {
	in, out  []byte
	err      error
	streamed bool
	rest     io.Reader
	done     chan struct{}
}

// frameDecoder reads frames in order while later ones are decoded.
type frameDecoder struct {
	dec     *zstd.Decoder
	free    chan *frame
	results chan *frame   // in the stream's order; closed after the last
	stop    chan struct{} // closed by Close
	split   chan struct{} // closed when splitFrames no longer reads

	cur    *frame
	out    []byte        // what is left of cur's output
	stream *zstd.Decoder // cur's output when it is streamed, or the rest of the stream
	rest   bool          // stream reads the rest of the stream
	// streamed counts the frames, or the rest, that the stream decoder read (for tests).
	streamed int
	err      error
	closed   bool
}

// splitFrames reads whole frames and starts decoding each.
func (d *frameDecoder) splitFrames(r *bufio.Reader) {
	defer close(d.split)
	defer close(d.results)
	for {
		var f *frame
		select {
		case f = <-d.free:
		case <-d.stop:
			return
		}
		f.out, f.err, f.streamed, f.rest = f.out[:0], nil, false, nil
		var whole bool
		f.in, whole, f.err = readFrame(r, f.in[:0])
		// After an error, or a frame that does not fit, the reader has the stream to itself.
		last := f.err != nil || !whole
		switch {
		case f.err == io.EOF && len(f.in) == 0:
			return
		case f.err != nil:
			if f.err == io.EOF {
				f.err = io.ErrUnexpectedEOF
			}
			f.err = fmt.Errorf("read zstd frame: %w", f.err)
			f.done <- struct{}{}
		case !whole:
			// The frame's start, then the rest of the stream as it comes.
			f.rest = io.MultiReader(bytes.NewReader(f.in), r)
			f.done <- struct{}{}
		default:
			go func() {
				f.out, f.err = d.dec.DecodeAll(f.in, f.out[:0])
				switch {
				case errors.Is(f.err, zstd.ErrDecoderSizeExceeded) || errors.Is(f.err, zstd.ErrWindowSizeExceeded):
					f.out, f.err, f.streamed = f.out[:0], nil, true
				case f.err != nil:
					f.err = fmt.Errorf("decode zstd frame: %w", f.err)
				}
				f.done <- struct{}{}
			}()
		}
		select {
		case d.results <- f:
		case <-d.stop:
			<-f.done // Close must not close the decoder under a frame still decoding
			return
		}
		if last {
			return
		}
	}
}

// zstd's frame format (RFC 8878, section 3.1.1).
const (
	frameMagic      = 0xFD2FB528
	blockHeaderSize = 3
)

// readFrame appends the next frame of r to buf. whole is false when the frame is not one to
// decode from memory (another kind of frame, or larger than maxParallelFrame); buf then holds
// what was read of it, and r the rest. At the end of r it returns io.EOF, with buf empty if the
// stream ended between frames.
func readFrame(r *bufio.Reader, buf []byte) (frame []byte, whole bool, err error) {
	// Magic number and frame header descriptor.
	if buf, err = readN(r, buf, 5); err != nil {
		return buf, false, err
	}
	if binary.LittleEndian.Uint32(buf) != frameMagic {
		return buf, false, nil
	}
	fhd := buf[4]
	// The window descriptor unless single segment, the dictionary ID and the content size (RFC
	// 8878, 3.1.1.1); their values do not matter here: the decoder checks them.
	single := fhd&0x20 != 0
	fcsSize := [4]int{0, 2, 4, 8}[fhd>>6]
	if fhd>>6 == 0 && single {
		fcsSize = 1
	}
	rest := [4]int{0, 1, 2, 4}[fhd&0x03] + fcsSize
	if !single {
		rest++
	}
	if buf, err = readN(r, buf, rest); err != nil {
		return buf, false, err
	}
	for last := false; !last; {
		if buf, err = readN(r, buf, blockHeaderSize); err != nil {
			return buf, false, err
		}
		h := buf[len(buf)-blockHeaderSize:]
		bh := uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16
		last = bh&1 != 0
		size := int(bh >> 3)
		switch (bh >> 1) & 3 {
		case 1: // RLE: one byte, repeated size times
			size = 1
		case 3:
			return buf, false, errors.New("reserved zstd block type")
		}
		if len(buf)+size > maxParallelFrame {
			return buf, false, nil
		}
		if buf, err = readN(r, buf, size); err != nil {
			return buf, false, err
		}
	}
	if fhd&0x04 != 0 { // content checksum
		if buf, err = readN(r, buf, 4); err != nil {
			return buf, false, err
		}
	}
	return buf, true, nil
}

// readN appends the next n bytes of r to buf. It returns io.EOF only when r ended before the
// first of them and buf was empty, io.ErrUnexpectedEOF when it ended in between.
func readN(r io.Reader, buf []byte, n int) ([]byte, error) {
	l := len(buf)
	buf = append(buf, make([]byte, n)...)
	got, err := io.ReadFull(r, buf[l:])
	buf = buf[:l+got]
	if err == io.EOF && l > 0 {
		err = io.ErrUnexpectedEOF
	}
	return buf, err
}

// next makes the next frame current, streamed if it must be, or the stream decoder once a
// frame did not fit.
func (d *frameDecoder) next() error {
	if d.stream != nil {
		d.stream.Close()
		d.stream = nil
	}
	if d.cur != nil {
		d.free <- d.cur
		d.cur = nil
	}
	f, ok := <-d.results
	if !ok {
		return io.EOF
	}
	<-f.done
	if f.err != nil {
		return f.err
	}
	if f.streamed || f.rest != nil {
		in := f.rest
		if in == nil {
			in = bytes.NewReader(f.in)
		} else {
			d.rest = true
		}
		s, err := zstd.NewReader(in, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return fmt.Errorf("open zstd stream: %w", err)
		}
		d.stream = s
		d.streamed++
	}
	d.cur, d.out = f, f.out
	return nil
}

// Read implements io.Reader.
func (d *frameDecoder) Read(p []byte) (int, error) {
	for len(d.out) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		if d.stream != nil {
			n, err := d.stream.Read(p)
			switch {
			case err == nil || (err == io.EOF && n > 0):
				return n, nil
			case err != io.EOF || d.rest:
				d.err = err
				return n, err
			}
		}
		d.err = d.next()
	}
	n := copy(p, d.out)
	d.out = d.out[n:]
	return n, nil
}

// WriteTo implements io.WriterTo: each frame's output goes to w in one write.
func (d *frameDecoder) WriteTo(w io.Writer) (int64, error) {
	var written int64
	for {
		if len(d.out) > 0 {
			n, err := w.Write(d.out)
			written += int64(n)
			d.out = d.out[n:]
			if err != nil {
				return written, err
			}
		}
		if d.stream != nil {
			n, err := d.stream.WriteTo(w)
			written += n
			if err != nil || d.rest {
				return written, err
			}
		}
		switch {
		case d.err == io.EOF:
			return written, nil
		case d.err != nil:
			return written, d.err
		}
		d.err = d.next()
	}
}

// Close stops the decoding and waits until the stream is no longer read.
func (d *frameDecoder) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	close(d.stop)
	<-d.split
	// Frames still being decoded finish on their own; the decoder waits for them.
	for f := range d.results {
		<-f.done
	}
	if d.stream != nil {
		d.stream.Close()
	}
	d.dec.Close()
	return nil
}
