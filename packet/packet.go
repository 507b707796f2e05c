package packet

import "fmt"

// Packet is a handle to bytes: a view of pooled storage (from Get) or of
// caller memory (from Wrap), optionally followed by more segments (Next).
// The zero value is not usable; a released handle must not be used again.
// See the package documentation for ownership and concurrency rules.
type Packet struct {
	o     *owner // nil for plain views of caller memory
	buf   []byte // this segment's bytes; cap runs to the end of the storage
	start int    // offset of buf within o.buf: the front slack
	next  *Packet
	live  bool
	lent  bool // a Loan's view: holds no reference, cannot be released
}

// Get returns a packet of n bytes from the size-class pools. The contents
// are unspecified. The caller owns the handle and must Release it.
func Get(n int) *Packet { return GetWithHeadroom(0, n) }

// GetWithHeadroom returns a packet of n bytes with at least headroom bytes of
// front slack before it, so that ExpandHeader(headroom) needs no copy and no
// new segment.
func GetWithHeadroom(headroom, n int) *Packet {
	if n < 0 || headroom < 0 {
		panic(fmt.Sprintf("packet: Get(%d, %d): negative size", headroom, n))
	}
	o := newOwner(headroom + n)
	p := homeOf(o)
	p.o, p.start, p.buf, p.live = o, headroom, o.buf[headroom:headroom+n], true
	return p
}

// Wrap returns a plain, non-owning view of b: no copy, no pool. Release
// recycles only the handle; b stays the caller's. The view may be resized up
// to cap(b).
func Wrap(b []byte) *Packet {
	p := newView()
	p.buf, p.live = b, true
	return p
}

// Len returns the length of this segment (not of the chain; see Total).
func (p *Packet) Len() int {
	p.check()
	return len(p.buf)
}

// Cap returns how long this segment may become with Resize.
func (p *Packet) Cap() int {
	p.check()
	return cap(p.buf)
}

// Bytes returns this segment's bytes (not the chain's). The slice aliases the
// packet's storage and is valid until the handle is released; its capacity
// is clipped so that append cannot write past the view.
func (p *Packet) Bytes() []byte {
	p.check()
	return p.buf[:len(p.buf):len(p.buf)]
}

// Pooled reports whether this segment views pooled storage (as opposed to
// caller memory).
func (p *Packet) Pooled() bool {
	p.check()
	return p.o != nil
}

// RefCount returns the number of live handles to this segment's storage, or
// 0 for a plain view. A receive loop reuses its buffer when this is 1.
func (p *Packet) RefCount() int {
	p.check()
	if p.o == nil {
		return 0
	}
	return int(p.o.refs.Load())
}

// Release gives up this handle and every segment chained after it. Storage
// returns to its pool when its last handle is released. Releasing a released
// handle panics with ErrReleased. Releasing a [Loan]'s view does nothing: it
// holds no reference.
func (p *Packet) Release() {
	for p != nil {
		next := p.next
		p.releaseSegment()
		p = next
	}
}

func (p *Packet) releaseSegment() {
	if !p.live {
		panic(ErrReleased)
	}
	if p.lent {
		return // a loan holds no reference; its lender releases
	}
	o, home := p.o, p.isHome()
	*p = Packet{}
	if o != nil {
		o.release() // may pool o, and with it home: p is not touched after
	}
	if !home {
		freeView(p)
	}
}

// Slice returns a new handle chain viewing n bytes of the chain from offset
// off, sharing storage (each covered owner gains a reference). Both the
// receiver and the result must be released. It panics if the range is out
// of bounds, like slicing a Go slice.
func (p *Packet) Slice(off, n int) *Packet {
	p.check()
	if total := p.Total(); off < 0 || n < 0 || off > total || n > total-off {
		panic(fmt.Sprintf("packet: Slice(%d, %d) out of range of %d bytes", off, n, total))
	}
	if n == 0 {
		return p.sub(0, 0)
	}
	var head, tail *Packet
	for s := p; n > 0; s = s.next {
		if off >= len(s.buf) {
			off -= len(s.buf)
			continue
		}
		k := min(len(s.buf)-off, n)
		v := s.sub(off, k)
		if head == nil {
			head = v
		} else {
			tail.next = v
		}
		tail, n, off = v, n-k, 0
	}
	return head
}

// Share returns a new handle chain viewing the whole chain.
func (p *Packet) Share() *Packet { return p.Slice(0, p.Total()) }

// sub returns a new handle for bytes [off, off+k) of this segment.
func (p *Packet) sub(off, k int) *Packet {
	v := newView()
	if p.o != nil {
		p.o.retain()
		v.buf = p.buf[off : off+k]
	} else {
		v.buf = p.buf[off : off+k : off+k]
	}
	v.o, v.start, v.live = p.o, p.start+off, true
	return v
}

// Skip drops the first n bytes of this segment in place (they become front
// slack). It panics if n is out of [0, Len()].
func (p *Packet) Skip(n int) {
	p.check()
	p.buf = p.buf[n:] // out of range: the runtime's bounds panic
	p.start += n
}

// Resize sets this segment's length to n. Shrinking is always allowed;
// growing up to Cap() is allowed for plain views and for owned packets whose
// storage no other handle shares (else it panics with [ErrShared], because the
// new bytes may belong to another view). It panics if n is out of [0, Cap()].
func (p *Packet) Resize(n int) {
	p.check()
	if uint(n) > uint(len(p.buf)) {
		p.resizeUp(n)
		return
	}
	p.buf = p.buf[:n] // shrinking: always allowed, and inline
}

// resizeUp is Resize past the segment's length (or to a negative n).
func (p *Packet) resizeUp(n int) {
	if n < 0 || n > cap(p.buf) {
		panic(fmt.Sprintf("packet: Resize(%d) out of range of capacity %d", n, cap(p.buf)))
	}
	if p.o != nil && p.o.refs.Load() != 1 {
		panic(ErrShared)
	}
	p.buf = p.buf[:n]
}

// Detach ends the handle and returns its bytes, which leave the pool for
// good and become ordinary garbage-collected memory. It panics with
// [ErrShared] if other handles share the storage or the packet is chained.
func (p *Packet) Detach() []byte {
	p.check()
	p.owning()
	if p.next != nil || (p.o != nil && p.o.refs.Load() != 1) {
		panic(ErrShared)
	}
	b := p.Bytes()
	home := p.isHome()
	if p.o != nil {
		p.o.abandon()
	}
	*p = Packet{}
	if !home { // a home goes to the garbage collector with its abandoned owner
		freeView(p)
	}
	return b
}

// String describes the packet for debugging; see Hex for its bytes.
func (p *Packet) String() string {
	if !p.live {
		return "Packet(released)"
	}
	return fmt.Sprintf("Packet(len=%d, total=%d, segments=%d, refs=%d)", len(p.buf), p.Total(), p.NumSegments(), p.RefCount())
}

// owning panics with [ErrBorrowed] if p is a [Loan]'s view: the operation would
// give away or replace a reference the view does not hold.
func (p *Packet) owning() {
	if p.lent {
		panic(ErrBorrowed)
	}
}

// Borrowed reports whether p is a [Loan]'s view (see Loan), which its
// receiver must not keep past the call that lent it.
func (p *Packet) Borrowed() bool {
	p.check()
	return p.lent
}

// KeepCopyBelow is the size under which Keep copies a borrowed view rather
// than sharing its storage: a small copy frees a large receive buffer for
// reuse at once, where a share would pin all of it.
const KeepCopyBelow = 2 << 10

// Keep returns a handle the caller owns for p's bytes: p itself, unless p is
// a [Loan]'s view; then a fitted copy if it is shorter than [KeepCopyBelow],
// else a share of its storage. Functions that take ownership of a packet
// call Keep, so that a borrowed view can be passed to them safely.
func (p *Packet) Keep() *Packet {
	p.check()
	switch {
	case !p.lent:
		return p
	case len(p.buf) < KeepCopyBelow || p.o == nil:
		return p.Clone()
	}
	return p.Share()
}

// check panics on use of a released handle in lifenet_debug builds; in
// normal builds it compiles to nothing.
func (p *Packet) check() {
	if debug && !p.live {
		panic(ErrReleased)
	}
}
