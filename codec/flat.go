package codec

import (
	"sync"
	"sync/atomic"

	"github.com/lifenet/lifenet/packet"
)

// The flat read path. For the common pipeline of one framing stage on a
// stream, the frames of a read are cut in one loop and each goes straight to
// the connection's sink; replies to the borrowed requests being handled are
// appended to a per-read buffer and handed to the session once, when the
// read's frames are done (docs/perf/codec-echo.md has what each costs).
//
// Order: every other write through the Conn made while a read is in
// progress (a push, a request, a reply that is not small, from any
// goroutine) first hands the buffered replies to the session, so writes
// leave in the order they were made.
type flatReplies struct {
	framing *framing    // the one stage
	inRead  atomic.Bool // the reading goroutine is handling a read's frames
	mu      sync.Mutex  // guards buf: replies may (wrongly, but safely) come from other goroutines
	buf     []byte
	rest    packet.Loan // the read's unframed tail, lent to the pipeline path (the framer's loan cuts frames in it)
}

// flatLimit bounds the per-read reply buffer; past it, replies go to the
// session as they come.
const flatLimit = 64 << 10

// flatStage returns the framing of a one-stage pipeline on a stream (or of
// a prelude and one framing stage), or nil.
func flatStage(ch *Chain) *framing {
	n := len(ch.handlers)
	if n == 0 || n > 2 || (n == 2 && ch.prelude == nil) || ch.Datagram || ch.sess == nil {
		return nil
	}
	if _, lines := ch.handlers[n-1].(*delimiterHandler); lines {
		return nil // lines are scanned, not cut by length: the pipeline path serves them
	}
	return framingOf(ch.handlers[n-1])
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
	f := fr.framing
	b := p.Bytes()
	f.ctx = &c.chain.ctxs[len(c.chain.ctxs)-1]
	fr.inRead.Store(true)
	defer func() {
		if fr.inRead.Load() { // a handler panicked: the replies to the frames before it still go out
			c.endRead()
		}
	}()
	off := 0
	for off < len(b) {
		n, err := f.framer.frameLen(b[off:])
		if err != nil || n <= 0 || n > len(b)-off {
			break
		}
		v := f.framer.loan.Lend(p, off, n)
		switch f.decode { // receiveFrame's common cases, in the loop: a call less per frame
		case decodeSRMP:
			f.in.lend(v)
			err = c.sink(&f.in)
			f.in = Message{}
		case decodeHeader:
			v.Skip(f.header)
			err = c.sink(v)
		default:
			err = f.receiveFrame(v)
		}
		f.framer.loan.End()
		if err != nil {
			c.endRead()
			c.sess.AbortAfterWrites(err)
			return
		}
		off += n
	}
	c.endRead()
	if off < len(b) {
		c.read(fr.rest.Lend(p, off, len(b)-off))
		fr.rest.End()
	}
}

// endRead hands the read's replies to the session.
func (c *Conn) endRead() {
	fr := c.flat
	fr.mu.Lock()
	fr.inRead.Store(false)
	c.sendRepliesLocked()
	fr.mu.Unlock()
}

// flushReplies hands the replies buffered so far to the session before
// another write, so that writes keep their order.
func (c *Conn) flushReplies() {
	if fr := c.flat; fr != nil && fr.inRead.Load() {
		fr.mu.Lock()
		c.sendRepliesLocked()
		fr.mu.Unlock()
	}
}

func (c *Conn) sendRepliesLocked() {
	if fr := c.flat; len(fr.buf) > 0 {
		c.sess.SendBytes(fr.buf) // a closed session drops them, as it would any write
		fr.buf = fr.buf[:0]
	}
}

// appendReply buffers a small reply (header, then payload) made while a
// read is handled; it reports false when the reply must take the other path.
func (c *Conn) appendReply(header []byte, payload *packet.Packet) bool {
	fr := c.flat
	if fr == nil || !fr.inRead.Load() || payload == nil || !small(payload) {
		return false
	}
	fr.mu.Lock()
	if !fr.inRead.Load() {
		fr.mu.Unlock()
		return false
	}
	fr.buf = append(fr.buf, header...)
	fr.buf = append(fr.buf, payload.Bytes()...)
	if len(fr.buf) >= flatLimit {
		c.sendRepliesLocked()
	}
	fr.mu.Unlock()
	payload.Release() // nothing for a borrowed view
	return true
}
