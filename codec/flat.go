package codec

import (
	"sync"
	"sync/atomic"

	"github.com/lifenet/lifenet/packet"
)

// The flat read path. For the common pipeline of one framing stage on a
// stream, the frames of a read are cut in one loop and each goes straight to
// the connection's handler (or, for a reply, to its request; without a
// handler, what is not a reply is dropped, as sink drops it). The loop knows
// its format: SRMP and the default length field (two bytes, little-endian,
// no offset) have their header read once, in the loop, and the view the
// handler gets starts past it; other formats ask the framer's splitter.
// Every frame of a read is lent in the same view (the next frame's Lend
// re-points it), which ends with the read (docs/perf/codec-echo.md has what
// each part costs).
//
// Replies. A small reply to the message the loop lent ([Conn.Reply] or
// [Conn.ReplyError] naming the lent SRMP request, or [Conn.Write] of the
// lent length-field view) can only come from the handler's call (on the
// reading goroutine, or from a goroutine the handler waits for: the lent
// message is not valid after the call). So it is appended, without a lock,
// to a per-read buffer that only those calls and the reader touch, and the
// buffer goes to the session once, when the read's frames are done.
//
// Every other write through the Conn made while a read is handled goes by
// the later queue (later.go), so that writes leave in the order they were
// made without the reader taking a lock per reply.
type flatReplies struct {
	framing *framing // the one stage

	// The reader's own: touched by the reading goroutine and by the reply
	// calls described above, never by another write.
	looping bool   // the loop is lending frames: a reply naming the lent message is the handler's
	own     bool   // buf holds replies (buffered is set)
	buf     []byte // the replies' storage, all of it (len = cap)
	n       int    // the bytes of buf in use

	// Shared with every writer of the connection.
	inRead    atomic.Bool // the reader is handling a read's frames (cleared under mu, once later is handed over)
	buffered  atomic.Bool // buf holds replies: a later write must not overtake them
	deferred  atomic.Bool // later holds writes, or a hand-over runs (set and cleared under mu)
	mu        sync.Mutex  // guards later, spare, the hand-over's state, and the hand-over of buf and later to the session
	later     laterWrites
	spare     laterWrites   // later's other storage, swapped in while a hand-over sends what later held
	handing   bool          // a hand-over is sending, mu released: every write waits in later behind it
	handBytes int           // what that hand-over sends of later's writes, counted in later's bound
	handEnd   chan struct{} // closed when that hand-over ends, for a hand-over that waits for it; made by the first to wait

	rest    packet.Loan // the read's unframed tail, lent to the pipeline path (the framer's loan cuts frames in it)
	format  flatFormat
	max     int              // the framer's MaxFrame
	handler func(*Conn, any) // Options.Handler
}

// How the flat loop cuts frames, and how small replies are encoded.
type flatFormat uint8

const (
	flatSplitter flatFormat = iota // the framer's splitter, the stage's decode
	flatSRMP                       // SRMP, read in the loop
	flatLF16                       // the default length field (2 bytes, little-endian, no offset), read in the loop
)

// flatLimit bounds the per-read reply buffer; past it, replies go to the
// session as they come.
const flatLimit = 64 << 10

// flatStage returns the framing of a one-stage pipeline on a stream, or nil.
func flatStage(ch *Chain) *framing {
	n := len(ch.handlers)
	if n != 1 || ch.Datagram || ch.sess == nil {
		return nil
	}
	if _, lines := ch.handlers[n-1].(*delimiterHandler); lines {
		return nil // lines are scanned, not cut by length: the pipeline path serves them
	}
	return framingOf(ch.handlers[n-1])
}

// newFlat sets up the flat path of the stage f, the tail of the
// connection's pipeline.
func newFlat(f *framing, tail Handler, handler func(*Conn, any)) *flatReplies {
	fr := &flatReplies{framing: f, max: f.framer.max, handler: handler}
	switch h := tail.(type) {
	case srmpHandler:
		fr.format = flatSRMP
	case *lengthFieldHandler:
		if s := h.lf.Size; (s == 0 || s == 2) && h.lf.Offset == 0 {
			fr.format = flatLF16
		}
	}
	return fr
}

// framingOf returns the framing of this package's framing stages, or nil.
func framingOf(h Handler) *framing {
	switch h := h.(type) {
	case srmpHandler:
		return h.framing
	case *lengthFieldHandler:
		return h.framing
	case *delimiterHandler:
		return h.framing
	}
	return nil
}

// flatRead handles the whole frames of p and hands what is left (a partial
// frame, or bytes that break the framing) to the pipeline path. p stays the
// caller's.
func (c *Conn) flatRead(p *packet.Packet) {
	fr := c.flat
	b := p.Bytes()
	fr.inRead.Store(true)
	fr.looping = true
	defer func() {
		if fr.looping { // a handler panicked: the replies to the frames before it still go out
			c.endRead()
		}
	}()
	var off int
	switch fr.format {
	case flatSRMP:
		off = c.flatSRMP(p)
	case flatLF16:
		off = c.flatLF16(p)
	default:
		var err error
		if off, err = c.flatSplit(p, b); err != nil {
			c.endRead()
			c.sess.AbortAfterWrites(err)
			return
		}
	}
	c.endRead()
	if off < len(b) {
		c.read(fr.rest.Lend(p, off, len(b)-off))
		fr.rest.End()
	}
}

// flatLF16 handles the whole frames of p in the default length-field
// format (a 2-byte little-endian length, no offset) and returns the bytes
// they take. A frame past MaxFrame is left to the pipeline path, which
// reports it.
func (c *Conn) flatLF16(p *packet.Packet) int {
	fr := c.flat
	loan := &fr.framing.framer.loan
	m, h, max := c.m, fr.handler, fr.max
	b := p.Bytes()
	off := 0
	for len(b)-off >= 2 {
		r := b[off:]
		n := 2 + (int(r[0]) | int(r[1])<<8)
		if n > len(r) || n > max {
			break
		}
		v := loan.Lend(p, off+2, n-2)
		if m.pending() { // a reply to this side's oldest request
			m.deliver(0, v)
		} else {
			h(c, v)
		}
		off += n
	}
	loan.End()
	return off
}

// flatSRMP handles the whole SRMP frames of p and returns the bytes they
// take. A frame past MaxFrame, or one with a bad length, is left to the
// pipeline path, which reports it.
func (c *Conn) flatSRMP(p *packet.Packet) int {
	fr := c.flat
	loan, in := &fr.framing.framer.loan, &fr.framing.in
	m, h, max := c.m, fr.handler, fr.max
	b := p.Bytes()
	off := 0
	for len(b)-off >= srmpHeaderLen {
		r := b[off:]
		n, hl := srmpHeaderLen+(int(r[2])|int(r[3])<<8), srmpHeaderLen
		if n == srmpHeaderLen+srmpExtMarker {
			k, err := SRMPSplitter{}.FrameLen(r, max)
			if err != nil || k <= 0 {
				break
			}
			n, hl = k, srmpExtHeaderLen
		}
		if n > len(r) || n > max {
			break
		}
		// Field by field, not a composite literal: see packet.Loan.Lend.
		in.Kind, in.Flag, in.Seq, in.borrowed = Kind(r[0]>>srmpKindShift), r[0]&srmpFlagMask, r[1], true
		in.Payload = loan.Lend(p, off+hl, n-hl)
		if in.Kind >= KindReply { // a reply or an error reply
			m.deliver(int(in.Seq), in)
		} else {
			h(c, in)
		}
		off += n
	}
	loan.End()
	*in = Message{}
	return off
}

// flatSplit handles the whole frames of b, p's bytes, cut by the framer's
// splitter, and returns the bytes they take.
func (c *Conn) flatSplit(p *packet.Packet, b []byte) (int, error) {
	f := c.flat.framing
	f.ctx = &c.chain.ctxs[len(c.chain.ctxs)-1]
	off := 0
	for off < len(b) {
		n, err := f.framer.frameLen(b[off:])
		if err != nil || n <= 0 || n > len(b)-off {
			break
		}
		err = f.receiveFrame(f.framer.loan.Lend(p, off, n))
		f.framer.loan.End()
		if err != nil {
			return off, err
		}
		off += n
	}
	return off, nil
}

// endRead ends the loop's read: its replies and the writes that came
// while it ran go to the session, in order.
func (c *Conn) endRead() {
	fr := c.flat
	fr.looping = false
	fr.mu.Lock()
	c.handOffLocked(true)
	fr.inRead.Store(false)
	fr.mu.Unlock()
}

// handOver gives the read's replies so far, then the writes held behind
// them, to the session (the reader's, or a reply call's: see flatReplies).
func (c *Conn) handOver() {
	fr := c.flat
	fr.mu.Lock()
	c.handOffLocked(true)
	fr.mu.Unlock()
}

// handOffLocked gives the later queue to the session and, when reader (the
// read's turn: the reader, or a reply call of its handler), the read's
// reply buffer before it. It is called with mu held and returns with mu
// held, but releases mu while the session may wait for room (for up to its
// SendStallTimeout, when the peer does not read): a write made meanwhile
// waits in later behind what is being handed over (handing), and goes in
// the next round, so that a push never waits for the peer behind a read's
// replies. One hand-over runs at a time; another waits for it to end.
func (c *Conn) handOffLocked(reader bool) {
	fr := c.flat
	for fr.handing {
		fr.waitHandOffLocked()
	}
	if !(reader && fr.own) && !fr.deferred.Load() {
		return
	}
	fr.handing = true
	fr.deferred.Store(true) // a write made meanwhile locks mu, and finds handing
	for {
		var replies []byte
		if reader && fr.own {
			replies, fr.n, fr.own = fr.buf[:fr.n], 0, false // only the read's turn, which waits here, touches buf
		} else if !reader && fr.buffered.Load() {
			break // the read's replies are buffered: what waits now goes behind them, with the reader's hand-over
		}
		if len(replies) == 0 && len(fr.later.items) == 0 {
			break
		}
		batch := fr.later
		fr.later, fr.spare = fr.spare, laterWrites{}
		fr.handBytes = batch.size
		fr.mu.Unlock()
		if len(replies) > 0 {
			c.sess.SendBytes(replies) // a closed session drops them, as it would any write
		}
		c.sendWrites(&batch)
		fr.mu.Lock()
		fr.spare, fr.handBytes = batch, 0
	}
	if reader {
		fr.buffered.Store(false)
	}
	fr.handing = false
	fr.deferred.Store(len(fr.later.items) > 0)
	if fr.handEnd != nil {
		close(fr.handEnd)
		fr.handEnd = nil
	}
}

// waitHandOffLocked waits, with mu held on entry and on return, for the
// hand-over in progress to end.
func (fr *flatReplies) waitHandOffLocked() {
	if fr.handEnd == nil {
		fr.handEnd = make(chan struct{})
	}
	end := fr.handEnd
	fr.mu.Unlock()
	<-end
	fr.mu.Lock()
}

// ownRoom returns n bytes at the end of the read's reply buffer for a
// reply to the lent message (see flatReplies: called by the reader or a
// handler's call), which the caller fills and then ends with ownDone. The
// callers write out its common case (a buffer already marked buffered,
// with room, and no write waiting in later) and call it for the first
// reply after a hand-over, for one that needs the buffer to grow, and for
// one that writes made before it wait for (they go first).
func (c *Conn) ownRoom(n int) []byte {
	fr := c.flat
	if fr.deferred.Load() {
		c.handOver()
	}
	if !fr.own {
		fr.own = true
		fr.buffered.Store(true)
	}
	l := fr.n
	if l+n > len(fr.buf) {
		fr.grow(l + n)
	}
	fr.n = l + n
	return fr.buf[l : l+n : l+n]
}

// ownDone ends a reply ownRoom made room for: past flatLimit the buffer
// goes to the session.
func (c *Conn) ownDone() {
	if c.flat.n >= flatLimit {
		c.handOver()
	}
}

// lent reports whether p is the view the length-field loop lends its
// handler now: a write of it is a reply from the handler's call. The view's
// identity is checked first: only a holder of the lent view (so, one whose
// call the reader waits for) reads looping.
func (fr *flatReplies) lent(p *packet.Packet) bool {
	return fr.format == flatLF16 && fr.framing.framer.loan.Lends(p) && fr.looping
}

// lentRequest reports whether m is the SRMP request the loop lends its
// handler now (identity first, as in lent).
func (fr *flatReplies) lentRequest(m *Message) bool {
	return m == &fr.framing.in && fr.format == flatSRMP && fr.looping
}

// grow makes room for n bytes in buf.
func (fr *flatReplies) grow(n int) {
	nb := make([]byte, max(n, 2*len(fr.buf), 4<<10))
	copy(nb, fr.buf[:fr.n])
	fr.buf = nb
}
