package transport

import "github.com/lifenet/lifenet/packet"

// udpReplies sends the replies to one receive batch of a UDP server
// together. Handlers run inline on the receive goroutine; with BatchSends
// each peer's replies queue while its handler runs (a cork), and instead
// of one sendto per reply when the handler returns, the session hands its
// queue to the batch (hold). After the batch's last delivery, before the
// next read, flush sends every held queue in one sendmmsg, each datagram
// addressed to its own peer.
//
// Order per peer: a held session keeps s.writing set from hold until
// flush has written its queue, so nothing else writes it meanwhile; sends
// made meanwhile (a second datagram of the peer in the same batch, other
// goroutines) queue behind and leave with it, or after it. A session whose
// queue another goroutine is writing when its handler returns is not held:
// that writer takes the replies, as without batching.
//
// Made only on Linux with UDPReadBatch > 1 and BatchSends; it belongs to
// the receive goroutine.
type udpReplies struct {
	u    *udpServer
	held []heldQueue
	m    *mmsgSender
}

// heldQueue is a session whose writes the batch holds and, once taken,
// its queue.
type heldQueue struct {
	s     *Session
	batch []*packet.Packet
	msgs  int
	dest  int // its index among m's destinations; -1: sent apart
}

// hold takes over the write of s's queue until flush; the caller owns
// s.writing (s.uncorked returned true).
func (r *udpReplies) hold(s *Session) {
	r.held = append(r.held, heldQueue{s: s})
}

// flush sends the held sessions' queues and gives their writes back.
func (r *udpReplies) flush() {
	if len(r.held) == 0 {
		return
	}
	m, batched := r.m, false
	for i := range r.held {
		h := &r.held[i]
		h.s.mu.Lock()
		h.batch, h.msgs = h.s.takeLocked() // nil if the session ended meanwhile
		h.s.mu.Unlock()
		h.dest = -1
		if h.batch != nil {
			h.dest = m.add(h.s.out.(*udpSender).dest(), h.batch)
			batched = batched || h.dest >= 0
		}
	}
	var err error
	if batched {
		err = m.sendAll(r.u.raw)
	}
	for i := range r.held {
		h := &r.held[i]
		s := h.s
		if h.batch != nil {
			var werr error
			if h.dest >= 0 {
				var n int
				n, werr = m.result(h.dest, err)
				s.io.bytesOut.Add(uint64(n))
			} else { // an address sendmmsg cannot take (an IPv6 zone)
				werr = writeDatagrams(s, h.batch, s.out.(*udpSender))
			}
			if !s.settle(h.batch, h.msgs, werr) {
				continue
			}
		}
		s.flush() // what queued meanwhile, if anything; it gives up s.writing
	}
	m.reset()
	clear(r.held)
	r.held = r.held[:0]
}
