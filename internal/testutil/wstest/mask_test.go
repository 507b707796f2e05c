package wstest_test

import (
	"bytes"
	"testing"

	ws "github.com/lifenet/lifenet/internal/testutil/wstest"
)

// refMask is the byte-at-a-time definition of RFC 6455 §5.3.
func refMask(p []byte, mask [4]byte, offset int) {
	for i := range p {
		p[i] ^= mask[(offset+i)%4]
	}
}

func TestUnmaskMatchesReference(t *testing.T) {
	mask := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	for size := range 80 {
		for offset := range 9 {
			got, want := seq(size), seq(size)
			ws.Unmask(got, mask, offset)
			refMask(want, mask, offset)
			if !bytes.Equal(got, want) {
				t.Fatalf("size %d offset %d: % x, want % x", size, offset, got, want)
			}
			ws.Unmask(got, mask, offset)
			if !bytes.Equal(got, seq(size)) {
				t.Fatalf("size %d offset %d: unmasking twice is not the identity", size, offset)
			}
		}
	}
}

func TestUnmaskRFCExample(t *testing.T) {
	p := []byte{0x7f, 0x9f, 0x4d, 0x51, 0x58}
	ws.Unmask(p, [4]byte{0x37, 0xfa, 0x21, 0x3d}, 0)
	if string(p) != "Hello" {
		t.Fatalf("got %q", p)
	}
}

// TestUnmaskPiecewise unmasks a payload in pieces of every size pattern and
// compares with unmasking it whole.
func TestUnmaskPiecewise(t *testing.T) {
	mask := [4]byte{0xa1, 0xb2, 0xc3, 0xd4}
	const size = 300
	whole := seq(size)
	ws.Unmask(whole, mask, 0)
	for first := range 40 {
		for step := 1; step <= 37; step += 3 {
			p := seq(size)
			ws.Unmask(p[:first], mask, 0)
			for off := first; off < size; off += step {
				end := min(off+step, size)
				ws.Unmask(p[off:end], mask, off)
			}
			if !bytes.Equal(p, whole) {
				t.Fatalf("first %d step %d: piecewise differs from whole", first, step)
			}
		}
	}
}
