package packet

// Loan lends views of another packet's bytes without taking a reference:
// a frame cut from a receive buffer reaches its handler this way, with no
// handle from the pool and no reference-count traffic per frame.
//
// The view Lend returns is valid until the next Lend or End, and only while
// the lender's own handle is held. Its receiver may read it, Keep, Slice,
// Share or Clone it (Keep, Share and Slice take real references or copy, so
// the bytes outlive the loan), and Skip or shrink it. Releasing it does
// nothing; Detach, Write, ExpandHeader and Chain panic with ErrBorrowed. A receive loop
// that lends views of its buffer learns from RefCount whether a receiver
// kept a share, as it does for the buffer itself.
//
// A [Loan] is reused, not pooled: the zero value is ready, and one Loan serves
// one goroutine at a time.
type Loan struct {
	v Packet
}

// Lend points the loan at n bytes of src's first segment from offset off
// and returns the borrowed view. It panics if the range is out of bounds.
func (l *Loan) Lend(src *Packet, off, n int) *Packet {
	src.check()
	// Field by field: a composite literal is built on the stack and copied
	// with wide loads over narrower stores, which stalls store forwarding
	// on every frame (measured: 40 % of the framer's time).
	v := &l.v
	v.o, v.buf, v.start, v.next = src.o, src.buf[:len(src.buf):len(src.buf)][off:off+n:off+n], src.start+off, nil
	v.live, v.lent = true, true
	return v
}

// End ends the current view; in lifenet_debug builds a later use of it
// panics with ErrReleased.
func (l *Loan) End() { l.v = Packet{} }

// Lends reports whether p is the view this loan lends (the packet Lend
// returns, the same for the loan's life): a holder of it is inside the
// lender's call.
func (l *Loan) Lends(p *Packet) bool { return p == &l.v }
