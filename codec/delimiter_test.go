package codec_test

import (
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// A partial line is held in a buffer within the size class of MaxFrame,
// however its bytes arrive: here 30 bytes, then the rest of a 1,022-byte
// line and 176 bytes of the next, under the default 1 KiB line limit.
//
// Found by FuzzFramerLimits: Delimiter.FrameLen once asked for 256 bytes
// more than it had even past MaxFrame, so a partial line could take a 2 KiB
// buffer here.
func TestDelimiterPartialLineStaysWithinMaxFrame(t *testing.T) {
	leakcheck.Check(t)
	mark := leakcheck.Mark()
	f := codec.NewFramer(codec.Delimiter{}, codec.FramerConfig{MaxFrame: codec.DefaultMaxLine})
	defer f.Close()
	lines := 0
	for _, b := range [][]byte{filler(30), cat(filler(990), []byte("\r\n"), filler(176))} {
		p := packet.Wrap(b)
		err := f.Feed(p, func(*packet.Packet) error { lines++; return nil })
		p.Release()
		if err != nil {
			t.Fatal(err)
		}
		if held := pooledBytes(mark); held > poolClass(codec.DefaultMaxLine) {
			t.Errorf("%d bytes of a partial line held in %d pooled bytes, line limit %d", f.Buffered(), held, codec.DefaultMaxLine)
		}
	}
	if lines != 1 || f.Buffered() != 176 {
		t.Errorf("%d lines cut, %d bytes held; want 1 and 176", lines, f.Buffered())
	}
}
