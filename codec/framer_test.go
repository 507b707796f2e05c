package codec_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// streams returns, per splitter, a byte stream of frames of awkward sizes
// and the frames it holds.
func streams(t testing.TB) map[string]struct {
	split  codec.Splitter
	stream []byte
	frames [][]byte
} {
	sizes := []int{0, 1, 100, 2047, 2048, 5000, 65534, 65535, 70000, 3}
	out := map[string]struct {
		split  codec.Splitter
		stream []byte
		frames [][]byte
	}{}
	add := func(name string, s codec.Splitter, enc func([]byte) []byte) {
		e := out[name]
		e.split = s
		for i, n := range sizes {
			body := bytes.Repeat([]byte{byte(i + 1)}, n)
			f := enc(body)
			e.frames = append(e.frames, f)
			e.stream = append(e.stream, f...)
		}
		out[name] = e
	}
	add("srmp", codec.SRMPSplitter{}, func(b []byte) []byte {
		f, _ := codec.EncodeSRMP(codec.KindRequest, 1, byte(len(b)), payload(b))
		defer f.Release()
		return f.AppendTo(nil)
	})
	for _, size := range []int{4, -4, 0} {
		lf, _ := codec.NewLengthField(1, size)
		add("lengthfield"+string(rune('0'+size+4)), lf, func(b []byte) []byte {
			f, _ := lf.Encode(payload(b))
			defer f.Release()
			return f.AppendTo(nil)
		})
	}
	add("delimiter", codec.Delimiter{Delim: []byte("\r\n")}, func(b []byte) []byte {
		return append(bytes.ReplaceAll(b, []byte{10}, []byte{11}), '\r', '\n')
	})
	return out
}

// feedAll runs a framer over the chunks and returns the frames' bytes.
func feedAll(t testing.TB, s codec.Splitter, chunks [][]byte, chained bool) [][]byte {
	t.Helper()
	f := codec.NewFramer(s, codec.FramerConfig{MaxFrame: 1 << 20})
	var out [][]byte
	emit := func(fr *packet.Packet) error {
		out = append(out, fr.AppendTo(nil))
		fr.Release()
		return nil
	}
	for _, c := range chunks {
		var p *packet.Packet
		if chained && len(c) > 1 { // the same bytes as a two-segment chain
			p = packet.Get(len(c) / 2)
			copy(p.Bytes(), c)
			q := packet.Get(len(c) - len(c)/2)
			copy(q.Bytes(), c[len(c)/2:])
			p.Chain(q)
		} else {
			p = packet.Get(len(c))
			copy(p.Bytes(), c)
		}
		err := f.Feed(p, emit)
		p.Release()
		if err != nil {
			t.Fatalf("Feed: %v", err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return out
}

func chunked(b []byte, sizes func() int) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := min(max(sizes(), 1), len(b))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// Any split of the input yields the same frames: whole, byte at a time,
// random splits, and chained input segments.
func TestFramerAnySplitSameFrames(t *testing.T) {
	leakcheck.Check(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for name, s := range streams(t) {
		deliveries := map[string][][]byte{
			"whole": {s.stream},
			// one byte at a time through the small frames and the long
			// headers, then larger steps (keeps the race-enabled run short)
			"byte-at-a-time": chunked(s.stream, func() int { return 1 + rng.IntN(2)*rng.IntN(2)*rng.IntN(3000) }),
			"random":         chunked(s.stream, func() int { return rng.IntN(9000) }),
			"header-splits":  chunked(s.stream, func() int { return rng.IntN(9) }),
		}
		for how, chunks := range deliveries {
			for _, chained := range []bool{false, true} {
				got := feedAll(t, s.split, chunks, chained)
				if len(got) != len(s.frames) {
					t.Fatalf("%s/%s chained=%v: %d frames, want %d", name, how, chained, len(got), len(s.frames))
				}
				for i := range got {
					if !bytes.Equal(got[i], s.frames[i]) {
						t.Fatalf("%s/%s chained=%v: frame %d differs (%d vs %d bytes)", name, how, chained, i, len(got[i]), len(s.frames[i]))
					}
				}
			}
		}
	}
}

// A declared length past MaxFrame fails as soon as the header is read,
// before the frame is buffered; exactly MaxFrame passes.
func TestFramerMaxFrame(t *testing.T) {
	leakcheck.Check(t)
	const limit = 1000
	cfg := codec.FramerConfig{MaxFrame: limit}
	atLimit, _ := codec.EncodeSRMP(codec.KindRequest, 0, 1, payload(make([]byte, limit-4)))
	if got := splitAll(t, codec.SRMPSplitter{}, cfg, atLimit.AppendTo(nil)); len(got) != 1 {
		t.Fatalf("frame at the limit: %d frames", len(got))
	}
	atLimit.Release()

	for name, hdr := range map[string][]byte{
		"one past":     {0x01, 0x01, 0xE5, 0x03},                         // 4 + 997 = 1001
		"1 GiB":        {0x01, 0x01, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x40}, // long form
		"negative len": {0x01, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF},
	} {
		f := codec.NewFramer(codec.SRMPSplitter{}, cfg)
		p := packet.Get(len(hdr))
		copy(p.Bytes(), hdr)
		err := f.Feed(p, func(fr *packet.Packet) error { fr.Release(); return nil })
		p.Release()
		if !errors.Is(err, codec.ErrFrameTooLarge) && !errors.Is(err, codec.ErrCorruptFrame) {
			t.Errorf("%s: %v", name, err)
		}
		if f.Buffered() != 0 {
			t.Errorf("%s: %d bytes buffered after the error", name, f.Buffered())
		}
	}
	lf, _ := codec.NewLengthField(0, 4)
	f := codec.NewFramer(lf, cfg)
	p := packet.Wrap([]byte{0xFF, 0xFF, 0xFF, 0x7F})
	if err := f.Feed(p, nil); !errors.Is(err, codec.ErrFrameTooLarge) {
		t.Errorf("length field 2 GiB: %v", err)
	}
	p.Release()
	f = codec.NewFramer(codec.Delimiter{}, codec.FramerConfig{MaxFrame: 10})
	p = packet.Wrap([]byte("0123456789abc"))
	if err := f.Feed(p, nil); !errors.Is(err, codec.ErrFrameTooLarge) {
		t.Errorf("line without delimiter past the limit: %v", err)
	}
	p.Release()
}

func TestFramerExpire(t *testing.T) {
	leakcheck.Check(t)
	f := codec.NewFramer(codec.SRMPSplitter{}, codec.FramerConfig{Expire: 30 * time.Millisecond})
	feed := func(b []byte) error {
		p := packet.Wrap(b)
		defer p.Release()
		return f.Feed(p, func(fr *packet.Packet) error { fr.Release(); return nil })
	}
	if err := feed([]byte{1, 1, 4, 0, 'O'}); err != nil || f.Buffered() != 5 {
		t.Fatalf("partial: %v, %d buffered", err, f.Buffered())
	}
	time.Sleep(60 * time.Millisecond)
	if err := feed([]byte("pen")); !errors.Is(err, codec.ErrFrameExpired) || f.Buffered() != 0 {
		t.Fatalf("stale partial: %v, %d buffered", err, f.Buffered())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Small frames are fitted copies; large ones share the receive buffer;
// frames from plain (caller-owned) input are always copies.
func TestFramerCopyOrShare(t *testing.T) {
	leakcheck.Check(t)
	small, _ := codec.EncodeSRMP(codec.KindRequest, 0, 1, payload(make([]byte, 100)))
	large, _ := codec.EncodeSRMP(codec.KindRequest, 0, 2, payload(make([]byte, 5000)))
	stream := append(small.AppendTo(nil), large.AppendTo(nil)...)
	small.Release()
	large.Release()

	rx := packet.Get(len(stream))
	copy(rx.Bytes(), stream)
	var frames []*packet.Packet
	f := codec.NewFramer(codec.SRMPSplitter{}, codec.FramerConfig{})
	if err := f.Feed(rx, func(fr *packet.Packet) error { frames = append(frames, fr); return nil }); err != nil {
		t.Fatal(err)
	}
	if frames[0].RefCount() != 1 || frames[0].Cap() != 128 {
		t.Errorf("small frame: refs %d cap %d, want a fitted copy", frames[0].RefCount(), frames[0].Cap())
	}
	if frames[1].RefCount() != 2 {
		t.Errorf("large frame: refs %d, want a share of the receive buffer", frames[1].RefCount())
	}
	rx.Release()
	for _, fr := range frames {
		fr.Release()
	}

	plain := packet.Wrap(stream)
	frames = frames[:0]
	f.Feed(plain, func(fr *packet.Packet) error { frames = append(frames, fr); return nil })
	plain.Release()
	for _, fr := range frames {
		if !fr.Owned() || fr.RefCount() != 1 {
			t.Errorf("frame from plain input is not an owned copy")
		}
		fr.Release()
	}
}
