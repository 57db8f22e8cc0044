package executor

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestTailKeepsTheLast64KiB writes a stream in writes of every size, small ones and ones
// larger than what is kept, and checks the tail after each.
func TestTailKeepsTheLast64KiB(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var all []byte
	var tl tail
	for i := range 2000 {
		n := 1 + rng.IntN(3000)
		if i%97 == 0 {
			n = tailSize + rng.IntN(tailSize)
		}
		p := make([]byte, n)
		for j := range p {
			p[j] = 'a' + byte(rng.IntN(26))
		}
		tl.Write(p)
		all = append(all, p...)
		want := all[max(0, len(all)-tailSize):]
		if got := tl.String(); got != string(want) {
			t.Fatalf("after write %d (%d bytes): tail holds %d bytes, want the last %d of %d", i, n, len(got), len(want), len(all))
		}
		if cap(tl.buf) > 4*tailSize {
			t.Fatalf("after write %d: buffer grew to %d bytes", i, cap(tl.buf))
		}
	}
	if !bytes.HasSuffix(all, []byte(tl.String())) {
		t.Fatal("tail is not the stream's end")
	}
}
