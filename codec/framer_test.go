package codec_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
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
	for _, size := range []int{4, -4, codec.VarintLength} {
		lf := codec.LengthField{Offset: 1, Size: size}
		add(fmt.Sprintf("lengthfield%d", size), lf, func(b []byte) []byte {
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

// feedAll runs a framer over the chunks and returns the frames' bytes,
// copied while the framer lends them.
func feedAll(t testing.TB, s codec.Splitter, chunks [][]byte, chained bool) [][]byte {
	t.Helper()
	f := codec.NewFramer(s, codec.FramerConfig{MaxFrame: 1 << 20})
	var out [][]byte
	emit := func(fr *packet.Packet) error {
		out = append(out, fr.AppendTo(nil))
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
		err := f.Feed(p, func(*packet.Packet) error { return nil })
		p.Release()
		if !errors.Is(err, codec.ErrFrameTooLarge) && !errors.Is(err, codec.ErrCorruptFrame) {
			t.Errorf("%s: %v", name, err)
		}
		if f.Buffered() != 0 {
			t.Errorf("%s: %d bytes buffered after the error", name, f.Buffered())
		}
	}
	f := codec.NewFramer(codec.LengthField{Size: 4}, cfg)
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

// A partial frame older than Expire fails the next feed. The framer reads
// the clock, so the test runs in a synctest bubble, where sleeping moves
// the fake clock at once.
func TestFramerExpire(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		f := codec.NewFramer(codec.SRMPSplitter{}, codec.FramerConfig{Expire: 30 * time.Millisecond})
		feed := func(b []byte) error {
			p := packet.Wrap(b)
			defer p.Release()
			return f.Feed(p, func(*packet.Packet) error { return nil })
		}
		if err := feed([]byte{1, 1, 4, 0, 'O'}); err != nil || f.Buffered() != 5 {
			t.Fatalf("partial: %v, %d buffered", err, f.Buffered())
		}
		time.Sleep(30 * time.Millisecond) // exactly Expire: not yet past it
		if f.Expired(time.Now()) {
			t.Fatal("expired at exactly Expire")
		}
		time.Sleep(time.Millisecond)
		if err := feed([]byte("pen")); !errors.Is(err, codec.ErrFrameExpired) || f.Buffered() != 0 {
			t.Fatalf("stale partial: %v, %d buffered", err, f.Buffered())
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// Frames are lent: a frame that lies whole in one input is a borrowed view
// of that input (no copy, no pooled buffer, no reference taken), Release on
// it does nothing, and Keep gives an owned handle: a fitted copy below
// packet.KeepCopyBelow, a share of the input (seen in its RefCount) above.
// Frames of plain (caller-owned) input are views too; Keep copies them.
func TestFramerLendsViews(t *testing.T) {
	leakcheck.Check(t)
	small := encodeSRMP(t, codec.KindRequest, 0, 1, bytes.Repeat([]byte{1}, 100))
	large := encodeSRMP(t, codec.KindRequest, 0, 2, bytes.Repeat([]byte{2}, 5000))
	stream := append(append([]byte(nil), small...), large...)

	rx := packet.Get(len(stream))
	copy(rx.Bytes(), stream)
	var kept []*packet.Packet
	f := codec.NewFramer(codec.SRMPSplitter{}, codec.FramerConfig{})
	err := f.Feed(rx, func(fr *packet.Packet) error {
		if !fr.Borrowed() || !fr.Pooled() || fr.RefCount() != 1 {
			t.Errorf("frame of %d bytes: borrowed %v owned %v refs %d, want a borrowed view of the input holding no reference",
				fr.Len(), fr.Borrowed(), fr.Pooled(), fr.RefCount())
		}
		fr.Release() // does nothing: the loan holds no reference
		if rx.RefCount() != 1 || fr.Len() == 0 {
			t.Errorf("Release on a lent frame changed something: input refs %d, frame len %d", rx.RefCount(), fr.Len())
		}
		k := fr.Keep()
		if k.Borrowed() {
			t.Error("Keep returned a borrowed packet")
		}
		wantRefs := 1 // a copy: the input is free for reuse
		if fr.Len() >= packet.KeepCopyBelow {
			wantRefs = 2 // a share of the input
		}
		if rx.RefCount() != wantRefs {
			t.Errorf("after Keep of %d bytes the input has %d refs, want %d", fr.Len(), rx.RefCount(), wantRefs)
		}
		kept = append(kept, k)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The receive loop would now reuse or replace rx: scribble over it and
	// release our handle; the kept frames must be intact.
	if rx.RefCount() == 1 {
		t.Fatal("the input should still be shared by the kept large frame")
	}
	rx.Release()
	if len(kept) != 2 || !bytes.Equal(kept[0].AppendTo(nil), small) || !bytes.Equal(kept[1].AppendTo(nil), large) {
		t.Fatalf("kept frames differ from the input")
	}
	for _, k := range kept {
		k.Release()
	}

	buf := append([]byte(nil), stream...)
	plain := packet.Wrap(buf)
	kept = kept[:0]
	f.Feed(plain, func(fr *packet.Packet) error {
		if !fr.Borrowed() || fr.Pooled() {
			t.Errorf("frame of plain input: borrowed %v owned %v", fr.Borrowed(), fr.Pooled())
		}
		k := fr.Keep()
		if !k.Pooled() || k.RefCount() != 1 {
			t.Errorf("Keep of a frame of plain input is not an owned copy")
		}
		kept = append(kept, k)
		return nil
	})
	plain.Release()
	clear(buf) // the caller reuses its memory
	if len(kept) != 2 || !bytes.Equal(kept[0].AppendTo(nil), small) || !bytes.Equal(kept[1].AppendTo(nil), large) {
		t.Fatalf("kept frames of plain input differ")
	}
	for _, k := range kept {
		k.Release()
	}
}

// A frame that spans inputs is assembled in the framer's own buffer and
// lent from there; the inputs are never referenced, and a kept frame stays
// intact after the framer frees its buffer and the inputs are reused.
func TestFramerPartialFrameLent(t *testing.T) {
	leakcheck.Check(t)
	for _, size := range []int{100, 5000, 70000} { // copied and shared by Keep; long SRMP header
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			body := make([]byte, size)
			for i := range body {
				body[i] = byte(i * 7)
			}
			frame := encodeSRMP(t, codec.KindRequest, 3, 9, body)
			next := encodeSRMP(t, codec.KindOneWay, 0, 0, []byte("after"))
			f := codec.NewFramer(codec.SRMPSplitter{}, codec.FramerConfig{})
			in := packet.Get(64 << 10) // one receive buffer, reused for every read
			var kept []*packet.Packet
			emit := func(fr *packet.Packet) error {
				if !fr.Borrowed() {
					t.Error("frame not borrowed")
				}
				kept = append(kept, fr.Keep())
				return nil
			}
			stream := append(append([]byte(nil), frame...), next...)
			for rest := stream; len(rest) > 0; {
				n := min(len(rest), 3000)
				in.Resize(n)
				copy(in.Bytes(), rest[:n])
				if err := f.Feed(in, emit); err != nil {
					t.Fatal(err)
				}
				if in.RefCount() != 1 {
					t.Fatalf("input referenced by a frame assembled across reads (refs %d)", in.RefCount())
				}
				in.Resize(in.Cap())
				for i := range in.Bytes() { // the next read overwrites the buffer
					in.Bytes()[i] = 0xEE
				}
				rest = rest[n:]
			}
			in.Release()
			if f.Buffered() != 0 {
				t.Fatalf("%d bytes still buffered", f.Buffered())
			}
			if len(kept) != 2 || !bytes.Equal(kept[0].AppendTo(nil), frame) || !bytes.Equal(kept[1].AppendTo(nil), next) {
				t.Fatalf("kept frames differ (%d frames)", len(kept))
			}
			for _, k := range kept {
				k.Release()
			}
		})
	}
}

// A lent frame cannot be given away: Write, Chain and Detach panic with
// packet.ErrBorrowed. In lifenet_debug builds, using it after emit returns
// panics with packet.ErrReleased.
func TestFramerLentFrameMisuse(t *testing.T) {
	leakcheck.Check(t)
	f := codec.NewFramer(codec.Delimiter{}, codec.FramerConfig{})
	in := packet.Get(4)
	copy(in.Bytes(), "ab\r\n")
	var stale *packet.Packet
	f.Feed(in, func(fr *packet.Packet) error {
		stale = fr
		for name, op := range map[string]func(){
			"Write":  func() { fr.Write([]byte("x")) },
			"Detach": func() { fr.Detach() },
			"Chain":  func() { q := packet.Get(1); defer q.Release(); fr.Chain(q) },
		} {
			if r := panicOf(op); r != packet.ErrBorrowed {
				t.Errorf("%s on a lent frame: panic %v, want ErrBorrowed", name, r)
			}
		}
		return nil
	})
	in.Release()
	if debugBuild {
		if r := panicOf(func() { stale.Len() }); r != packet.ErrReleased {
			t.Errorf("use of a frame after its loan ended: panic %v, want ErrReleased", r)
		}
	}
}

func panicOf(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// DefaultFramerConfig spells out the zero config's defaults; Validate and
// NewFramer refuse a negative MaxFrame with ErrConfig.
func TestFramerConfigValidate(t *testing.T) {
	def := codec.DefaultFramerConfig()
	if def.MaxFrame != codec.DefaultMaxFrame || def.Expire != codec.DefaultExpire {
		t.Fatalf("DefaultFramerConfig() = %+v", def)
	}
	for _, c := range []codec.FramerConfig{{}, def, {MaxFrame: 1, Expire: -1}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := codec.FramerConfig{MaxFrame: -1}
	if err := bad.Validate(); !errors.Is(err, codec.ErrConfig) {
		t.Fatalf("negative MaxFrame: %v, want ErrConfig", err)
	}
	r := panicOf(func() { codec.NewFramer(codec.SRMPSplitter{}, bad) })
	if err, ok := r.(error); !ok || !errors.Is(err, codec.ErrConfig) {
		t.Fatalf("NewFramer with a bad config panicked with %v, want ErrConfig", r)
	}
}
