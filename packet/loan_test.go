package packet_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// mustPanicWith runs f and fails unless it panics with an error matching
// want.
func mustPanicWith(t *testing.T, name string, want error, f func()) {
	t.Helper()
	v := mustPanic(t, f)
	if err, _ := v.(error); !errors.Is(err, want) {
		t.Errorf("%s: panic %v, want %v", name, v, want)
	}
}

// Lend returns a borrowed view of the range, clipped to it, that aliases the
// lender's bytes and takes no reference; releasing it does nothing.
func TestLoanLendsBorrowedView(t *testing.T) {
	leakcheck.Check(t)
	src := packet.Get(100)
	fill(src, 0)
	var l packet.Loan // the zero value is ready
	v := l.Lend(src, 10, 20)
	if !v.Borrowed() || src.Borrowed() {
		t.Fatalf("Borrowed: view %v, source %v; want true, false", v.Borrowed(), src.Borrowed())
	}
	if v.Len() != 20 || v.Cap() != 20 || v.Total() != 20 || v.NumSegments() != 1 || v.Next() != nil {
		t.Fatalf("view len %d cap %d total %d segments %d; want 20, 20, 20, 1",
			v.Len(), v.Cap(), v.Total(), v.NumSegments())
	}
	if !bytes.Equal(v.Bytes(), src.Bytes()[10:30]) || cap(v.Bytes()) != 20 {
		t.Fatalf("view bytes %v, want %v", v.Bytes(), src.Bytes()[10:30])
	}
	if !v.Pooled() || v.RefCount() != 1 || src.RefCount() != 1 || packet.OwnerOf(v) != packet.OwnerOf(src) {
		t.Fatalf("view owned %v refs %d, source refs %d; want the source's storage, 1 reference",
			v.Pooled(), v.RefCount(), src.RefCount())
	}
	// The view aliases the source: writes through either are seen by both.
	src.SetAt(10, 0xAA)
	v.SetAt(1, 0xBB)
	if v.At(0) != 0xAA || src.At(11) != 0xBB {
		t.Fatalf("view does not alias the source: %#x %#x", v.At(0), src.At(11))
	}

	rc, done := packet.CountRecycles()
	defer done()
	v.Release()
	v.Release() // still nothing: a view holds no reference
	if src.RefCount() != 1 || rc.Total() != 0 || !v.Borrowed() || v.Len() != 20 {
		t.Fatalf("after releasing the view: source refs %d, recycled %d, view borrowed %v len %d",
			src.RefCount(), rc.Total(), v.Borrowed(), v.Len())
	}
	// Skip and shrink work in place on the view, not on the source.
	v.Skip(5)
	v.Resize(10)
	if v.Len() != 10 || v.At(0) != src.At(15) || src.Len() != 100 {
		t.Fatalf("after Skip(5), Resize(10): view len %d first %#x; source len %d",
			v.Len(), v.At(0), src.Len())
	}
	l.End()
	key := packet.OwnerOf(src)
	src.Release()
	if rc.Of(key) != 1 {
		t.Fatalf("source storage recycled %d times, want 1", rc.Of(key))
	}
}

// A Loan is reused: each Lend points it at a new range.
func TestLoanReuse(t *testing.T) {
	leakcheck.Check(t)
	src := packet.Get(64)
	fill(src, 0)
	var l packet.Loan
	for off := 0; off+8 <= 64; off += 8 {
		v := l.Lend(src, off, 8)
		if !v.Borrowed() || v.Len() != 8 || v.At(0) != byte(off) || v.At(7) != byte(off+7) {
			t.Fatalf("Lend(%d, 8): borrowed %v len %d bytes %v", off, v.Borrowed(), v.Len(), v.Bytes())
		}
	}
	if v := l.Lend(src, 64, 0); v.Len() != 0 || v.Cap() != 0 {
		t.Fatalf("empty view at the end: len %d cap %d", v.Len(), v.Cap())
	}
	l.End()
	if src.RefCount() != 1 {
		t.Fatalf("source refs %d after lending, want 1", src.RefCount())
	}
	src.Release()
}

// Lend panics on a range outside the source's bytes, including one that
// lies within its capacity but past its length.
func TestLoanLendOutOfRange(t *testing.T) {
	leakcheck.Check(t)
	src := packet.Get(100) // capacity 128: its size class
	defer src.Release()
	if src.Cap() <= src.Len() {
		t.Fatalf("test needs spare capacity: len %d cap %d", src.Len(), src.Cap())
	}
	var l packet.Loan
	for _, r := range []struct{ off, n int }{{-1, 5}, {0, 101}, {90, 20}, {101, 0}, {100, 1}, {0, -1}} {
		mustPanic(t, func() { l.Lend(src, r.off, r.n) })
	}
	l.End()
}

// Share and Slice of a view take real references to the lender's storage:
// they stay valid after End and after the lender lets go, and the storage
// is recycled once, when the last of them is released.
func TestLoanShareAndSliceOutliveEnd(t *testing.T) {
	leakcheck.Check(t)
	rc, done := packet.CountRecycles()
	defer done()
	src := packet.Get(100)
	fill(src, 0)
	key := packet.OwnerOf(src)
	var l packet.Loan
	v := l.Lend(src, 10, 20)
	s := v.Share()
	if s.Borrowed() || s.RefCount() != 2 || src.RefCount() != 2 || packet.OwnerOf(s) != key {
		t.Fatalf("share borrowed %v refs %d, source refs %d; want an owning share, 2 references",
			s.Borrowed(), s.RefCount(), src.RefCount())
	}
	if s.Len() != 20 || s.Cap() > 20 {
		t.Fatalf("share len %d cap %d: it must not reach past the view", s.Len(), s.Cap())
	}
	sl := v.Slice(5, 10)
	if sl.Borrowed() || src.RefCount() != 3 || sl.Len() != 10 || sl.At(0) != 15 || sl.Cap() > 15 {
		t.Fatalf("slice borrowed %v len %d first %d cap %d, source refs %d",
			sl.Borrowed(), sl.Len(), sl.At(0), sl.Cap(), src.RefCount())
	}
	want := append([]byte(nil), src.Bytes()[10:30]...)
	l.End()
	src.Release()
	if rc.Of(key) != 0 || s.RefCount() != 2 {
		t.Fatalf("storage recycled %d times with two shares live (refs %d)", rc.Of(key), s.RefCount())
	}
	if !bytes.Equal(s.Bytes(), want) || !bytes.Equal(sl.Bytes(), want[5:15]) {
		t.Fatalf("share %v / slice %v after End, want %v", s.Bytes(), sl.Bytes(), want)
	}
	// A share is an ordinary owning handle: it may be written (which moves
	// it off the shared storage) and chained.
	s.Write([]byte{1, 2, 3})
	if s.Len() != 23 || !bytes.Equal(s.Bytes()[:20], want) || sl.At(0) != 15 {
		t.Fatalf("write to share: len %d bytes %v; slice first %d", s.Len(), s.Bytes(), sl.At(0))
	}
	s.Chain(sl).Release()
	if rc.Of(key) != 1 {
		t.Fatalf("storage recycled %d times, want 1", rc.Of(key))
	}
}

// Keep copies a view shorter than KeepCopyBelow into a fitted buffer of its
// own (the lender's buffer stays unshared), shares a longer one, and
// returns a packet that is not borrowed as it is.
func TestLoanKeep(t *testing.T) {
	leakcheck.Check(t)
	size := packet.KeepCopyBelow + 100
	src := packet.Get(size)
	fill(src, 0)
	key := packet.OwnerOf(src)
	var l packet.Loan

	for _, n := range []int{0, 1, 100, packet.KeepCopyBelow - 1} {
		v := l.Lend(src, 50, n)
		k := v.Keep()
		if k == v || k.Borrowed() || k.Len() != n || !bytes.Equal(k.Bytes(), src.Bytes()[50:50+n]) {
			t.Fatalf("Keep of %d bytes: same %v borrowed %v len %d", n, k == v, k.Borrowed(), k.Len())
		}
		if src.RefCount() != 1 || k.RefCount() != 1 || packet.OwnerOf(k) == key {
			t.Fatalf("Keep of %d bytes shares the lender's storage: source refs %d, kept refs %d",
				n, src.RefCount(), k.RefCount())
		}
		if n > 0 {
			src.SetAt(50, ^src.At(50)) // the lender reuses its buffer
			if k.At(0) == src.At(50) {
				t.Fatalf("Keep of %d bytes sees the lender's later writes", n)
			}
			src.SetAt(50, ^src.At(50))
		}
		k.Release()
	}

	for _, n := range []int{packet.KeepCopyBelow, packet.KeepCopyBelow + 100 - 50} {
		v := l.Lend(src, 50, n)
		k := v.Keep()
		if k == v || k.Borrowed() || k.Len() != n || !bytes.Equal(k.Bytes(), src.Bytes()[50:50+n]) {
			t.Fatalf("Keep of %d bytes: same %v borrowed %v len %d", n, k == v, k.Borrowed(), k.Len())
		}
		if src.RefCount() != 2 || packet.OwnerOf(k) != key {
			t.Fatalf("Keep of %d bytes: source refs %d, same storage %v; want a share",
				n, src.RefCount(), packet.OwnerOf(k) == key)
		}
		l.End()
		if k.Len() != n || k.At(0) != src.At(50) {
			t.Fatalf("kept share of %d bytes changed after End", n)
		}
		k.Release()
		if src.RefCount() != 1 {
			t.Fatalf("source refs %d after releasing the kept share", src.RefCount())
		}
	}

	// A packet that is not borrowed is kept as it is.
	if k := src.Keep(); k != src || src.RefCount() != 1 {
		t.Fatalf("Keep of an owned packet returned %p (source %p), refs %d", k, src, src.RefCount())
	}
	w := packet.Wrap([]byte("plain"))
	if k := w.Keep(); k != w {
		t.Fatal("Keep of a plain view did not return it")
	}
	w.Release()
	src.Release()
}

// A view of caller memory (a Wrap'd lender) holds no storage to share:
// Keep copies it whatever its size.
func TestLoanOfPlainView(t *testing.T) {
	leakcheck.Check(t)
	mem := bytes.Repeat([]byte{7}, 2*packet.KeepCopyBelow)
	src := packet.Wrap(mem)
	var l packet.Loan
	v := l.Lend(src, 0, len(mem))
	if !v.Borrowed() || v.Pooled() || v.RefCount() != 0 {
		t.Fatalf("view of caller memory: borrowed %v owned %v refs %d", v.Borrowed(), v.Pooled(), v.RefCount())
	}
	k := v.Keep()
	if k.Borrowed() || !k.Pooled() || k.RefCount() != 1 || !bytes.Equal(k.Bytes(), mem) {
		t.Fatalf("Keep: borrowed %v owned %v refs %d", k.Borrowed(), k.Pooled(), k.RefCount())
	}
	mem[0] = 8
	if k.At(0) != 7 {
		t.Fatal("kept copy sees later writes to the caller's memory")
	}
	l.End()
	k.Release()
	src.Release()
}

// A view cannot give away or replace a reference it does not hold:
// Detach, Write, ExpandHeader and Chain (either way round) panic with
// ErrBorrowed and change nothing.
func TestLoanGiveAwayPanics(t *testing.T) {
	leakcheck.Check(t)
	src := packet.GetWithHeadroom(16, 100)
	fill(src, 0)
	other := packet.Get(10)
	var l packet.Loan
	v := l.Lend(src, 0, 50)
	for name, f := range map[string]func(){
		"Detach":            func() { v.Detach() },
		"Write":             func() { v.Write([]byte{1}) },
		"ExpandHeader":      func() { v.ExpandHeader(4) },
		"ExpandHeader(0)":   func() { v.ExpandHeader(0) },
		"Chain (receiver)":  func() { v.Chain(other) },
		"Chain (argument)":  func() { other.Chain(v) },
		"Chain (with self)": func() { v.Chain(v) },
	} {
		mustPanicWith(t, name, packet.ErrBorrowed, f)
	}
	if v.Len() != 50 || v.Next() != nil || other.Next() != nil || other.NumSegments() != 1 ||
		src.RefCount() != 1 || src.Len() != 100 || !v.Borrowed() {
		t.Fatalf("a refused operation changed state: view len %d next %v, other next %v, source refs %d len %d",
			v.Len(), v.Next(), other.Next(), src.RefCount(), src.Len())
	}
	for i := range 50 {
		if v.At(i) != byte(i) {
			t.Fatalf("view byte %d = %d after refused operations", i, v.At(i))
		}
	}
	l.End()
	other.Release()
	src.Release()
}

// Lends knows the loan's own view, across Lends and after End, and no
// other packet: not another loan's view, not the lender, not a copy.
func TestLoanLendsItsViewOnly(t *testing.T) {
	leakcheck.Check(t)
	src := packet.Get(16)
	defer src.Release()
	var l, other packet.Loan
	v := l.Lend(src, 0, 4)
	if !l.Lends(v) || !l.Lends(l.Lend(src, 4, 8)) {
		t.Fatal("Lends does not know the loan's view")
	}
	w := other.Lend(src, 0, 4)
	kept := v.Keep()
	defer kept.Release()
	for name, p := range map[string]*packet.Packet{"another loan's view": w, "the lender": src, "a kept copy": kept, "nil": nil} {
		if l.Lends(p) {
			t.Errorf("Lends(%s) = true", name)
		}
	}
	l.End()
	other.End()
}
