package codec

import (
	"fmt"

	"github.com/lifenet/lifenet/packet"
)

// Replies of one read matched under one lock. A client's read often holds
// many SRMP replies (a window's worth); matching each under the matcher's
// lock, then calling its callback, costs a lock a reply, as much as the
// rest of delivering it. So the SRMP tail stage queues the replies it
// cuts (queueReply) and delivers them together (deliverQueued): the
// matcher gives out the callbacks of as many as it can under one lock
// (takeReplies), then each callback gets its reply, lent in turn, in the
// order of the stream. A reply it cannot give out that way (an error
// reply, a blocking request's, a stream's, a prefixed one's, one that
// matches nothing) and everything after it go by sinkMessage as before, one
// by one. The queue is delivered before any other frame of the read is
// passed on, before a frame from the framer's partial buffer (which does
// not outlive the call), when it is full, and when the read ends (even
// on an error), so the order of the stream is kept.

// replyBatch is how many replies are matched under one lock at most.
const replyBatch = 32

// queuedReply is a reply cut and not yet delivered: n bytes of src from
// off, whose sequence number is seq.
type queuedReply struct {
	src    *packet.Packet
	off, n int
	seq    uint8
}

// replyQueue is a read's queue of SRMP replies, part of its readScratch.
type replyQueue struct {
	q   [replyBatch]queuedReply
	cbs [replyBatch]func(*Message, error)
	n   int
}

// errCallbackPanicked is what the callbacks of replies matched with one
// whose callback panicked get: the panic ends the connection.
var errCallbackPanicked = fmt.Errorf("%w: a callback of an earlier reply in the same read panicked", ErrConnClosed)

// queues reports whether a reply frame from src is queued: the stage is
// the tail of an SRMP connection, src is not the framer's partial buffer,
// and no ReceiveSync turn holder reads (it takes its own reply alone, see
// matcher.self).
func (s *readScratch) queues(src *packet.Packet) bool {
	c := s.ctx
	return c.tail && c.chain.match == MatchSRMP && src != s.f.framer.partial && c.chain.conn.syncLead() == nil
}

// queueReply queues the SRMP reply frame of n bytes of src from off for
// deliverQueued, delivering the queue when it is full.
func (s *readScratch) queueReply(src *packet.Packet, off, n int, seq uint8) error {
	s.replies.q[s.replies.n] = queuedReply{src: src, off: off, n: n, seq: seq}
	if s.replies.n++; s.replies.n == replyBatch {
		return s.deliverQueued()
	}
	return nil
}

// deliverQueued delivers the queued replies in order (see replyBatch's
// comment) and empties the queue.
func (s *readScratch) deliverQueued() error {
	rq := &s.replies
	conn := s.ctx.chain.conn
	for i := 0; i < rq.n; {
		k := 0
		if rq.n > 1 { // a lone reply (a serial caller's) goes by deliver at once: there is no lock to share
			k = conn.requests().takeReplies(s, i)
		}
		s.callMatched(i, i+k)
		if i += k; i == rq.n {
			break
		}
		err := conn.sinkMessage(s.lendQueued(i)) // the one takeReplies left: delivered as any frame
		s.endLend()
		if err != nil {
			rq.n = 0
			return err
		}
		i++
	}
	rq.n = 0
	return nil
}

// lendQueued fills the read's message with queued reply i, lent.
func (s *readScratch) lendQueued(i int) *Message {
	r := &s.replies.q[i]
	hdr, size := srmpHeaderOf(r.src.Bytes()[r.off:])
	s.in.lend(hdr, s.loan.Lend(r.src, r.off+size, r.n-size))
	return &s.in
}

// endLend ends the loan of the read's message.
func (s *readScratch) endLend() {
	s.in = Message{}
	s.loan.End()
}

// callMatched calls the callbacks takeReplies gave out for queued replies
// from to to (none for a blocking request's, delivered already), each
// with its reply lent. If one panics, the rest get errCallbackPanicked
// (their requests are no longer pending, so the connection's end would
// not reach them) and the panic goes on.
func (s *readScratch) callMatched(from, to int) {
	rq := &s.replies
	i := from
	defer func() {
		if i < to { // a callback panicked
			s.endLend()
			rq.cbs[i] = nil
			for j := i + 1; j < to; j++ {
				if cb := rq.cbs[j]; cb != nil {
					rq.cbs[j] = nil
					cb(nil, errCallbackPanicked)
				}
			}
		}
	}()
	for ; i < to; i++ {
		if cb := rq.cbs[i]; cb != nil {
			rq.cbs[i] = nil
			cb(s.lendQueued(i), nil)
			s.endLend()
		}
	}
}

// takeReplies matches, under one lock, the queued replies of s from from
// on that answer requests plainly, as deliver would, and returns how
// many: a RequestAsync callback is given out in s's cbs (callMatched
// calls it), its slot freed; a blocking request gets its kept copy at
// once. It stops at the first reply it cannot match so (an error
// reply is not queued; a stream's, a prefixed request's, a ReceiveSync
// turn holder's own, or one matching nothing), which deliver then takes.
func (m *matcher) takeReplies(s *readScratch, from int) int {
	rq := &s.replies
	m.mu.Lock()
	if m.slots == nil || m.fifo {
		m.mu.Unlock()
		return 0
	}
	for i := from; i < rq.n; i++ {
		key := int(rq.q[i].seq)
		w := &m.slots[key]
		if w.state != slotPending || w.echo > 0 || key == m.hidden || key == m.self || w.async && w.cb.msg == nil {
			m.mu.Unlock()
			return i - from
		}
		if w.async {
			rq.cbs[i] = w.cb.msg
			m.freeSlot(key)
			continue
		}
		w.state = slotDone
		w.ch <- result{answered: true, reply: keep(s.lendQueued(i))}
		s.endLend()
	}
	m.mu.Unlock()
	return rq.n - from
}
