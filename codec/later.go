package codec

import (
	"context"
	"fmt"

	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// The later queue: writes through a Conn made while its reader handles a
// read on the flat path (flat.go). The reader appends the replies to the
// lent messages without a lock, so no other write may touch that buffer or
// overtake it; such a write waits in this queue instead, and goes to the
// session right behind the buffered replies: when the read's frames are
// done, or at the next reply to a lent message. A write made during a read
// while no reply is buffered goes to the session at once, after what waits
// here, as it would outside a read; except a small Write or Reply, which is
// copied here too, so that the replies to one read's frames cost one
// session call (requests and the pipeline's own writes, such as
// ReplyBytes', are not batched). Such a small write from another goroutine
// waits for the read's end even when nothing is buffered: a handler that
// blocks the reading goroutine holds it back as it holds back the
// connection's next frames. A write that must not wait for the peer (a
// push, by Enqueue) never hands the queue over itself: it waits in it
// whenever writes wait there, and the read's end takes it. A hand-over
// releases the lock while the session waits for room, so writes made then
// wait in the queue, behind it, and are not held up by the peer.
//
// The queue holds at most maxLater bytes, a hand-over's included, besides
// one write of any size;
// past that a write fails with [ErrBacklogFull] and is not written. It
// fills only while a handler keeps the reading goroutine after a reply to
// a lent message was buffered, by its own call or by an earlier frame's of
// the same read (every read ends the wait), so a handler should make its
// replies to the lent message last when it writes much else.
//
// A write that waits here reports what is known when it is made: the
// bound, and a session already closed (it is then refused at once, as
// outside a read). It waits for the session's room when it is handed
// over, as the replies do, bounded by the session's stall timeout rather
// than by the writer's context; a refusal then (a slow consumer's queue)
// ends the session as it would, without reaching the writer.
type laterWrites struct {
	items []laterWrite
	bytes []byte // the copies of the small writes, in order
	size  int    // the bytes held
}

// A laterWrite is a packet, or a run of bytes, or a close.
type laterWrite struct {
	p        *packet.Packet // owned; nil for bytes[from:to]
	from, to int
	noWait   bool // by the session's Enqueue: never waits for room
	close    bool // Close: the session closes once what came before it is written
}

// maxLater bounds the later queue (the default room of a session's send
// queue, transport.DefaultSendQueueBytes).
const maxLater = 4 << 20

// laterBytesMax bounds the copied runs kept between reads: past it the
// storage is dropped, so one burst does not pin its size.
const laterBytesMax = 64 << 10

// lockLater decides whether a write made now waits in the later queue:
// when a hand-over is sending, when a read is in progress and replies are
// buffered, or, if batch, for any write during a read (a small reply
// joining the read's hand-over: the replies to one read's frames then cost
// one session call), or, if noWait, when writes wait there already (a
// write that must not wait for the peer does not hand them over itself:
// the read's end does). It returns true with mu held; otherwise the caller
// writes at once, and what waited in later has gone to the session first,
// so writes keep their order.
func (c *Conn) lockLater(batch, noWait bool) bool {
	fr := c.flat
	if fr == nil || !fr.inRead.Load() || !batch && !fr.buffered.Load() && !fr.deferred.Load() {
		return false
	}
	fr.mu.Lock()
	if c.sess.Reason() == transport.ReasonNone &&
		(fr.handing || fr.inRead.Load() && (batch || fr.buffered.Load() || noWait && fr.deferred.Load())) {
		return true
	}
	// Written at once: no read, nothing buffered, or a session that has
	// closed, whose refusal the writer then gets as it would outside a read
	// (nothing is written, so the order behind the replies is moot).
	if !noWait {
		c.handOffLocked(false)
	}
	fr.mu.Unlock()
	return false
}

// deferBytes takes a copy of parts, one message, when lockLater says it
// waits (batch: a small reply may join the read's hand-over); it reports
// whether it took them. The caller keeps parts.
func (c *Conn) deferBytes(noWait, batch bool, parts ...[]byte) (bool, error) {
	if fr := c.flat; fr == nil || !fr.inRead.Load() { // outside a read (most writes): before counting parts
		return false, nil
	}
	n := 0
	for _, b := range parts {
		n += len(b)
	}
	if !c.lockLater(batch && n < copyBelow, noWait) {
		return false, nil
	}
	fr := c.flat
	defer fr.mu.Unlock()
	if err := fr.admit(n); err != nil {
		return true, err
	}
	fr.later.appendBytes(noWait, n, parts)
	fr.deferred.Store(true)
	if !noWait && !fr.handing && fr.later.size >= flatLimit && !fr.buffered.Load() {
		c.handOffLocked(false) // batched writes, nothing buffered: no need to hold them longer
	}
	return true, nil
}

// deferPacket takes p (and its ownership) when it must wait behind
// buffered replies; it reports whether it took p. A borrowed p is kept
// first.
func (c *Conn) deferPacket(p *packet.Packet, noWait bool) (bool, error) {
	if !c.lockLater(false, noWait) {
		return false, nil
	}
	fr := c.flat
	defer fr.mu.Unlock()
	n := p.Total()
	if err := fr.admit(n); err != nil {
		p.Release()
		return true, err
	}
	fr.later.items = append(fr.later.items, laterWrite{p: p.Keep(), noWait: noWait})
	fr.later.size += n
	fr.deferred.Store(true)
	return true, nil
}

// deferClose queues a close behind buffered replies; it reports whether
// it did.
func (c *Conn) deferClose() bool {
	if !c.lockLater(false, false) {
		return false
	}
	fr := c.flat
	defer fr.mu.Unlock()
	fr.later.items = append(fr.later.items, laterWrite{close: true})
	fr.deferred.Store(true)
	return true
}

// admit checks that n more bytes fit: in later, beside what a hand-over
// in progress sends of it (called with mu held).
func (fr *flatReplies) admit(n int) error {
	if held := fr.later.size + fr.handBytes; held > 0 && held+n > maxLater {
		return fmt.Errorf("%w: %d bytes wait, %d more", ErrBacklogFull, held, n)
	}
	return nil
}

// appendBytes copies the n bytes of parts as one message, joining the run
// before it when that run goes the same way.
func (q *laterWrites) appendBytes(noWait bool, n int, parts [][]byte) {
	from := len(q.bytes)
	for _, b := range parts {
		q.bytes = append(q.bytes, b...)
	}
	q.size += n
	if k := len(q.items) - 1; k >= 0 && q.items[k].p == nil && !q.items[k].close && q.items[k].noWait == noWait {
		q.items[k].to = len(q.bytes)
		return
	}
	q.items = append(q.items, laterWrite{from: from, to: len(q.bytes), noWait: noWait})
}

// sendWrites hands q's writes to the session, in order, and empties q,
// keeping its storage (called by a hand-over, without mu). Errors are the
// session's: a closed session drops the writes, as it would have dropped
// them made at once.
func (c *Conn) sendWrites(q *laterWrites) {
	for i := range q.items {
		w := &q.items[i]
		switch {
		case w.close:
			c.sess.CloseAfterWrites()
		case w.p != nil && w.noWait:
			c.sess.Enqueue(w.p)
		case w.p != nil:
			c.sess.SendContext(context.Background(), w.p)
		case w.noWait:
			c.sess.EnqueueBytes(q.bytes[w.from:w.to])
		default:
			c.sess.SendBytes(q.bytes[w.from:w.to])
		}
		*w = laterWrite{}
	}
	q.items, q.size = q.items[:0], 0
	if cap(q.bytes) > laterBytesMax {
		q.bytes = nil
	} else {
		q.bytes = q.bytes[:0]
	}
}

// sendBytes hands parts, one message, to the session, or to the later
// queue during a read; a wait for room ends with ctx. The caller keeps parts.
func (c *Conn) sendBytes(ctx context.Context, parts ...[]byte) error {
	if fr := c.flat; fr != nil && fr.inRead.Load() {
		if took, err := c.deferBytes(false, false, parts...); took {
			return err
		}
	}
	return c.sess.SendBytesContext(ctx, parts...)
}

// sendPacket is sendBytes for a packet, whose ownership it takes.
func (c *Conn) sendPacket(ctx context.Context, p *packet.Packet) error {
	if took, err := c.deferPacket(p, false); took {
		return err
	}
	return c.sess.SendContext(ctx, p)
}
