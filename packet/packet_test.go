package packet_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// mustPanic runs f and returns the value it panicked with, failing the test
// if it did not panic.
func mustPanic(t *testing.T, f func()) (v any) {
	t.Helper()
	defer func() {
		v = recover()
		if v == nil {
			t.Fatal("expected a panic")
		}
	}()
	f()
	return nil
}

func fill(p *packet.Packet, from byte) {
	b := p.Bytes()
	for i := range b {
		b[i] = from + byte(i)
	}
}

func TestGetSizeClasses(t *testing.T) {
	leakcheck.Check(t)
	cases := []struct{ n, cap int }{
		{0, 64}, {1, 64}, {64, 64}, {65, 128}, {1000, 1024}, {4096, 4096},
		{64<<10 + 1, 128 << 10}, {packet.MaxPooled, packet.MaxPooled},
		{packet.MaxPooled + 1, packet.MaxPooled + 1},
	}
	for _, c := range cases {
		p := packet.Get(c.n)
		if p.Len() != c.n || p.Cap() != c.cap || !p.Pooled() || p.RefCount() != 1 {
			t.Errorf("Get(%d): len %d cap %d owned %v refs %d; want len %d cap %d owned, 1 ref",
				c.n, p.Len(), p.Cap(), p.Pooled(), p.RefCount(), c.n, c.cap)
		}
		p.Release()
	}
	mustPanic(t, func() { packet.Get(-1) })
}

func TestPooledStorageIsReused(t *testing.T) {
	leakcheck.Check(t)
	rc, done := packet.CountRecycles()
	defer done()
	p := packet.Get(100)
	key := packet.OwnerOf(p)
	p.Release()
	if rc.Of(key) != 1 {
		t.Fatalf("recycled %d times, want 1", rc.Of(key))
	}
	// Oversized storage is never pooled, but its release still counts once.
	big := packet.Get(packet.MaxPooled + 1)
	bigKey := packet.OwnerOf(big)
	big.Release()
	if rc.Of(bigKey) != 1 {
		t.Fatalf("oversized recycled %d times, want 1", rc.Of(bigKey))
	}
}

func TestSliceSharesAndReleasesIndependently(t *testing.T) {
	leakcheck.Check(t)
	rc, done := packet.CountRecycles()
	defer done()

	p := packet.Get(100)
	fill(p, 0)
	key := packet.OwnerOf(p)
	s := p.Slice(10, 20)
	if p.RefCount() != 2 || s.RefCount() != 2 {
		t.Fatalf("refs after Slice: %d/%d, want 2", p.RefCount(), s.RefCount())
	}
	if s.Len() != 20 || s.At(0) != 10 || s.At(19) != 29 {
		t.Fatalf("slice sees %v", s.Bytes())
	}
	s.SetAt(0, 0xAA) // shared storage: visible through p
	if p.At(10) != 0xAA {
		t.Fatal("Slice copied instead of sharing")
	}
	p.Release()
	if rc.Of(key) != 0 || s.RefCount() != 1 {
		t.Fatalf("storage recycled while a slice is live (recycles %d, refs %d)", rc.Of(key), s.RefCount())
	}
	if s.At(1) != 11 {
		t.Fatal("slice lost its bytes when the parent was released")
	}
	s.Release()
	if rc.Of(key) != 1 {
		t.Fatalf("recycled %d times, want exactly 1", rc.Of(key))
	}
}

func TestSliceBounds(t *testing.T) {
	leakcheck.Check(t)
	p := packet.Get(10)
	defer p.Release()
	for _, r := range [][2]int{{-1, 1}, {0, 11}, {11, 0}, {5, 6}, {0, -1}} {
		mustPanic(t, func() { p.Slice(r[0], r[1]) })
	}
	e := p.Slice(10, 0)
	if e.Len() != 0 || e.RefCount() != 2 {
		t.Fatalf("empty slice: len %d refs %d", e.Len(), e.RefCount())
	}
	e.Release()
}

func TestDoubleReleasePanics(t *testing.T) {
	leakcheck.Check(t)
	p := packet.Get(10)
	p.Release()
	v := mustPanic(t, func() { p.Release() })
	if err, ok := v.(error); !ok || !errors.Is(err, packet.ErrReleased) {
		t.Fatalf("panic value %v, want ErrReleased", v)
	}
}

func TestOverReleasePanics(t *testing.T) {
	leakcheck.Check(t)
	p := packet.Get(10)
	s := p.Share()
	packet.ReleaseOwner(p) // a reference dropped behind the handles' backs
	p.Release()            // count reaches zero: storage recycled
	v := mustPanic(t, func() { s.Release() })
	if err, ok := v.(error); !ok || !errors.Is(err, packet.ErrOverRelease) {
		t.Fatalf("panic value %v, want ErrOverRelease", v)
	}
}

func TestChainAcrossSegments(t *testing.T) {
	leakcheck.Check(t)
	a := packet.Get(3)
	fill(a, 0) // 0 1 2
	b := packet.Wrap([]byte{3, 4})
	c := packet.Get(4)
	fill(c, 5) // 5 6 7 8
	p := a.Chain(b).Chain(c)
	if p != a || p.Total() != 9 || p.NumSegments() != 3 || p.Len() != 3 {
		t.Fatalf("chain: total %d segments %d len %d", p.Total(), p.NumSegments(), p.Len())
	}
	for i := range 9 {
		if p.At(i) != byte(i) {
			t.Fatalf("At(%d) = %d", i, p.At(i))
		}
	}
	p.SetAt(4, 40)
	if got := p.AppendTo(nil); !bytes.Equal(got, []byte{0, 1, 2, 3, 40, 5, 6, 7, 8}) {
		t.Fatalf("AppendTo = %v", got)
	}
	dst := make([]byte, 5)
	if n := p.CopyTo(dst); n != 5 || !bytes.Equal(dst, []byte{0, 1, 2, 3, 40}) {
		t.Fatalf("CopyTo = %d %v", n, dst)
	}
	if bufs := p.AppendBuffers(nil); len(bufs) != 3 || len(bufs[1]) != 2 {
		t.Fatalf("AppendBuffers = %v", bufs)
	}
	s := p.Slice(2, 5) // 2 | 3 40 | 5 6
	if s.NumSegments() != 3 || !bytes.Equal(s.AppendTo(nil), []byte{2, 3, 40, 5, 6}) {
		t.Fatalf("cross-segment slice: %d segments, %v", s.NumSegments(), s.AppendTo(nil))
	}
	mustPanic(t, func() { p.At(9) })
	mustPanic(t, func() { p.At(-1) })
	mustPanic(t, func() { p.Chain(c) }) // already in the chain
	mustPanic(t, func() { c.Chain(a) }) // would close a loop
	s.Release()
	p.Release()
}

func TestWriteAppendsAndGrowsThroughPool(t *testing.T) {
	leakcheck.Check(t)
	p := packet.Get(0)
	var want []byte
	for i := range 300 {
		chunk := bytes.Repeat([]byte{byte(i)}, i%7+1)
		if n, err := p.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		want = append(want, chunk...)
	}
	if !bytes.Equal(p.AppendTo(nil), want) || !p.Pooled() || p.NumSegments() != 1 {
		t.Fatal("Write lost or reordered bytes")
	}
	p.Release()
}

func TestWriteNeverTouchesBytesOfAnotherView(t *testing.T) {
	leakcheck.Check(t)
	x := packet.Get(10)
	fill(x, 0)
	a, b := x.Slice(0, 5), x.Slice(5, 5)
	x.Release()
	a.Write([]byte{99}) // a has spare capacity, but b lives there
	if b.At(0) != 5 {
		t.Fatalf("Write through a clobbered b: %v", b.Bytes())
	}
	if !bytes.Equal(a.Bytes(), []byte{0, 1, 2, 3, 4, 99}) {
		t.Fatalf("a = %v", a.Bytes())
	}
	a.Release()
	b.Release()
}

func TestWriteToWrappedViewMovesToPool(t *testing.T) {
	leakcheck.Check(t)
	caller := []byte{1, 2, 3}
	p := packet.Wrap(caller)
	p.Write([]byte{4})
	if !p.Pooled() || !bytes.Equal(p.Bytes(), []byte{1, 2, 3, 4}) || !bytes.Equal(caller, []byte{1, 2, 3}) {
		t.Fatalf("owned %v bytes %v caller %v", p.Pooled(), p.Bytes(), caller)
	}
	p.Release()
}

func TestExpandHeader(t *testing.T) {
	leakcheck.Check(t)

	p := packet.GetWithHeadroom(4, 10)
	fill(p, 10)
	q := p.ExpandHeader(4)
	if q != p || q.NumSegments() != 1 || q.Len() != 14 || q.At(4) != 10 || q.At(13) != 19 {
		t.Fatalf("slack reuse: same %v, %s", q == p, q)
	}
	q.Release()

	// Shared storage: the slack may be another view's bytes, so prepend.
	p = packet.GetWithHeadroom(4, 10)
	s := p.Share()
	q = p.ExpandHeader(4)
	if q == p || q.NumSegments() != 2 || q.Total() != 14 || q.Next() != p {
		t.Fatalf("shared: %s", q)
	}
	q.Release()
	s.Release()

	// No slack, and plain views: prepend a segment.
	for _, p := range []*packet.Packet{packet.Get(10), packet.Wrap(make([]byte, 10))} {
		q := p.ExpandHeader(2)
		if q.NumSegments() != 2 || q.Len() != 2 || q.Total() != 12 {
			t.Fatalf("prepend: %s", q)
		}
		q.Release()
	}
	p = packet.Get(1)
	mustPanic(t, func() { p.ExpandHeader(-1) })
	p.Release()
}

func TestResizeAndSkip(t *testing.T) {
	leakcheck.Check(t)
	p := packet.Get(100)
	fill(p, 0)
	p.Resize(10)
	p.Resize(p.Cap())
	if p.Len() != 128 || p.At(99) != 99 {
		t.Fatalf("grow while sole owner: len %d", p.Len())
	}
	s := p.Slice(0, 1)
	p.Resize(50)
	v := mustPanic(t, func() { p.Resize(60) })
	if err, _ := v.(error); !errors.Is(err, packet.ErrShared) {
		t.Fatalf("grow while shared: panic %v", v)
	}
	mustPanic(t, func() { p.Resize(p.Cap() + 1) })
	mustPanic(t, func() { p.Resize(-1) })
	p.Skip(5)
	if p.Len() != 45 || p.At(0) != 5 || p.Cap() != 123 {
		t.Fatalf("Skip: len %d first %d cap %d", p.Len(), p.At(0), p.Cap())
	}
	mustPanic(t, func() { p.Skip(46) })
	s.Release()
	p.Release()
}

func TestDetach(t *testing.T) {
	leakcheck.Check(t)
	p := packet.Get(3)
	fill(p, 7)
	s := p.Share()
	mustPanic(t, func() { p.Detach() })
	s.Release()
	if b := p.Detach(); !bytes.Equal(b, []byte{7, 8, 9}) {
		t.Fatalf("Detach = %v", b)
	}
	// leakcheck passes: detached storage is no longer outstanding.
}

func TestCloneIsIndependentAndFitted(t *testing.T) {
	leakcheck.Check(t)
	p := packet.Get(200)
	fill(p, 0)
	p.Chain(packet.Wrap([]byte{1, 2}))
	c := p.Clone()
	if c.NumSegments() != 1 || c.Len() != 202 || c.Cap() != 256 || c.RefCount() != 1 {
		t.Fatalf("clone: %s cap %d", c, c.Cap())
	}
	p.SetAt(0, 0xFF)
	if c.At(0) != 0 || c.At(201) != 2 {
		t.Fatal("clone shares bytes with its source")
	}
	c.Release()
	p.Release()
}

func TestWrapIsPlain(t *testing.T) {
	leakcheck.Check(t)
	b := []byte("hello world")
	p := packet.Wrap(b)
	if p.Pooled() || p.RefCount() != 0 {
		t.Fatal("Wrap made an owned packet")
	}
	s := p.Slice(6, 5)
	p.Release()
	if string(s.Bytes()) != "world" || s.Cap() != 5 {
		t.Fatalf("slice of plain view: %q cap %d", s.Bytes(), s.Cap())
	}
	s.SetAt(0, 'W')
	if string(b) != "hello World" {
		t.Fatal("plain view copied the caller's memory")
	}
	s.Release()
}

func TestHex(t *testing.T) {
	leakcheck.Check(t)
	p := packet.Wrap([]byte{0x01, 0xab}).Chain(packet.Wrap([]byte{0xff, 0x00, 0x10}))
	defer p.Release()
	if got := p.Hex(0); got != "01 ab ff 00 10" {
		t.Errorf("Hex(0) = %q", got)
	}
	if got := p.Hex(3); got != "01 ab ff …(+2 bytes)" {
		t.Errorf("Hex(3) = %q", got)
	}
	if !strings.Contains(p.String(), "total=5") {
		t.Errorf("String = %q", p.String())
	}
}
