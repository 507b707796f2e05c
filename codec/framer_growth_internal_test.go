package codec

import (
	"encoding/binary"
	"testing"

	"github.com/lifenet/lifenet/packet"
)

// A partial frame's buffer grows as its bytes arrive and never past the
// frame's declared size (a 5 MB frame held 8 MiB when growth doubled).
func TestPartialFrameGrowsToItsDeclaredSizeOnly(t *testing.T) {
	const size = 5_000_000
	f := NewFramer(LengthField{Size: 4}, FramerConfig{MaxFrame: 8 << 20})
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], size)
	chunk := make([]byte, 100_000)
	got := 0
	emit := func(p *packet.Packet) error { got = p.Len(); return nil }
	feed := func(b []byte) {
		p := packet.Wrap(b)
		defer p.Release()
		if err := f.Feed(p, emit); err != nil {
			t.Fatal(err)
		}
	}
	feed(hdr[:])
	if c := f.partial.Cap(); c > 4<<10 {
		t.Fatalf("a bare header reserved %d bytes", c)
	}
	for sent := 0; sent < size; sent += len(chunk) {
		feed(chunk[:min(len(chunk), size-sent)])
		if f.partial != nil && f.partial.Cap() > size+4 {
			t.Fatalf("after %d bytes the partial buffer holds %d, more than the %d-byte frame", sent, f.partial.Cap(), size+4)
		}
	}
	if got != size+4 || f.Buffered() != 0 {
		t.Fatalf("emitted %d bytes, %d still buffered", got, f.Buffered())
	}
}
