package transport

import (
	"sync"

	"github.com/lifenet/lifenet/packet"
)

// sendState is a session's send queue, staging buffers and sender. A
// stream session makes it with its first send (txLocked) and gives it
// back when it parks with nothing queued, held back or being written
// (shedLocked), so that an idle connection holds none of it (a 160-byte
// object, pooled); a datagram session has it from the start to the end,
// for its sender. Without it a session has nothing queued or being
// written (heldLocked). Guarded by the session's mu, like the fields of
// the Session it is embedded in; every function that locks mu and then
// reads or writes these fields calls txLocked first (after each lock: it
// may have been dropped meanwhile).
type sendState struct {
	queue      []*packet.Packet // waiting to be written
	stage      *packet.Packet   // the queue's last packet while SendBytes may append to it
	stageBuf   []byte           // stage's storage, written up to stageLen
	stageLen   int
	spare      []*packet.Packet // the previous batch's slice, reused
	ownStage   *packet.Packet   // the staging buffer made last (keepStage)
	spareStage *packet.Packet   // a written staging buffer kept for reuse (keepStage)
	queuedMsgs int              // messages in queue (Send and SendBytes calls)
	corks      int              // OnReceive (BatchSends) or Batch is running: queue sends, write them after it

	queued       int    // bytes in queue
	inflight     int    // bytes of the batch being written
	inflightFrom uint64 // bytesOut when its write began

	// out writes the batches: a stream session's *streamSender, made by
	// its first write (outLocked) and given back with the state; a
	// datagram session's sender, set when the session is made and kept
	// for its life, with the state (datagramOut).
	out sender
}

// sendStates keeps the send states that parked sessions gave back, so
// that a heartbeat's reply makes none.
var sendStates = sync.Pool{New: func() any { return new(sendState) }}

// txLocked makes sure the session has its send state. Called with s.mu
// held.
func (s *Session) txLocked() {
	if s.sendState == nil {
		s.sendState = sendStates.Get().(*sendState)
	}
}

// queuedMsgsLocked is the messages in the queue. Called with s.mu held.
func (s *Session) queuedMsgsLocked() int {
	if s.sendState == nil {
		return 0
	}
	return s.queuedMsgs
}

// heldLocked is the bytes queued and being written. Called with s.mu
// held.
func (s *Session) heldLocked() int {
	if s.sendState == nil {
		return 0
	}
	return s.queued + s.inflight
}

// pendingLocked reports whether messages are queued. Called with s.mu
// held.
func (s *Session) pendingLocked() bool {
	return s.sendState != nil && len(s.queue) > 0
}

// dropSendStateLocked releases what the send state holds (queued packets,
// staging buffers), the session having ended, and gives the state back
// unless a write is in progress, whose end still uses it. Called with
// s.mu held.
func (s *Session) dropSendStateLocked() {
	st := s.sendState
	if st == nil {
		return
	}
	for i, p := range st.queue {
		p.Release()
		st.queue[i] = nil
	}
	st.queue = st.queue[:0]
	st.queued = 0
	st.stage, st.stageBuf, st.stageLen, st.ownStage = nil, nil, 0, nil
	if st.spareStage != nil {
		st.spareStage.Release()
		st.spareStage = nil
	}
	if !s.writing && !s.datagram { // a datagram session's state holds its sender
		s.sendState = nil
		st.recycle()
	}
}

// recycle gives st, which no session uses any more, to sendStates,
// keeping its slices when they are small. Its packets are released or
// handed on already.
func (st *sendState) recycle() {
	queue, spare := st.queue, st.spare
	if cap(queue) > keptScratch || cap(spare) > keptScratch {
		queue, spare = nil, nil
	}
	clear(queue[:cap(queue)])
	clear(spare[:cap(spare)])
	if w, ok := st.out.(*streamSender); ok { // used only under the write turn, which nobody holds
		w.recycle()
	}
	*st = sendState{queue: queue[:0], spare: spare[:0]}
	sendStates.Put(st)
}
