package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/lifenet/lifenet/internal/mono"
	"github.com/lifenet/lifenet/packet"
)

// Send queues p (and its chain) for writing and takes ownership of it: p is
// released once written, or at once if Send fails. A borrowed view
// (packet.Loan) is kept with packet.Keep first. Packets from concurrent
// Sends are written in call order; whatever queues up while a write is in
// progress goes out in the next single vectored write (writev).
//
// The caller whose Send finds no write in progress performs the write
// itself, so Send may block for up to WriteTimeout. A message that does
// not fit in the queue's room (SendQueueBytes) waits for it: Send blocks
// until the write in progress has taken what is queued, and senders that
// wait are admitted in the order they came. (A single message larger than
// SendQueueBytes is taken on an empty queue.) The wait ends at the latest
// when the session closes: a peer that takes no byte for SendStallTimeout
// while a sender waits is closed as a slow consumer. SendContext bounds
// the wait by a context; Enqueue never waits.
//
// Send fails with a *[CloseError] (matching [ErrClosed]) once the session is
// closing; if it closed as a slow consumer while Send waited, the error
// matches [ErrSlowConsumer] too.
func (s *Session) Send(p *packet.Packet) error { return s.send(context.Background(), p) }

// SendContext is Send, except that a wait for room in the queue ends with
// ctx: the send then fails with ctx's error (matching [ErrNotWritten]) and
// the session is unaffected. What a write in progress takes, ctx does not
// cut short (WriteTimeout bounds that).
func (s *Session) SendContext(ctx context.Context, p *packet.Packet) error { return s.send(ctx, p) }

func (s *Session) send(ctx context.Context, p *packet.Packet) error {
	p = p.Keep() // a borrowed view must outlive the call that lent it
	n := p.Total()
	s.mu.Lock()
	s.txLocked()
	if err := s.admitLocked(ctx, n); err != nil {
		p.Release()
		return err
	}
	if s.loneLocked(ctx, n) {
		return s.writeLone(p, n)
	}
	s.sealStageLocked() // later small messages must not go in front of p
	s.queue = append(s.queue, p)
	return s.queuedLocked(ctx, n)
}

// loneLocked reports that a message of n bytes may leave at once, skipping
// the queue (writeLone): nothing is queued, being written or held back,
// and queuedLocked would neither start the stall watch nor bound the write
// by ctx. Called with s.mu held.
func (s *Session) loneLocked(ctx context.Context, n int) bool {
	return !s.writing && s.corks == 0 && len(s.queue) == 0 && n <= s.ep.cfg.SendQueueBytes &&
		(n < abandonAt || ctx.Done() == nil)
}

// writeLone writes p, a lone message of n bytes, as flush would write a
// queue of it alone, without the queue, with no lock held while it leaves:
// a datagram in one system call, a stream's message by its sender's write
// of a batch of one (one write call, a chain's one vectored write).
// It holds the session's write turn (s.writing) meanwhile, so other
// senders queue, and it flushes what they queued before it returns. A
// failed write closes the session; it is [ErrNotWritten] when no byte of
// p left. It releases p. Called with s.mu held, which it unlocks.
func (s *Session) writeLone(p *packet.Packet, n int) error {
	out := s.outLocked()
	s.writing = true
	sent := s.io.bytesOut.Load() // only this goroutine writes meanwhile
	s.inflight, s.inflightFrom = n, sent
	var err error
	if w, ok := out.(datagramWriter); ok {
		s.mu.Unlock()
		err = writeDatagram(s, p, w)
	} else {
		if cap(s.spare) == 0 {
			s.spare = make([]*packet.Packet, 0, 1)
		}
		lone := s.spare[:1] // the write turn's, as flush's batch: nobody else touches it meanwhile
		lone[0] = p
		s.mu.Unlock()
		err = out.writeBatch(s, lone)
		lone[0] = nil
	}
	p.Release()
	return s.directDone(err, sent, nil)
}

// SendBytes copies parts, in order, into the send queue as one message and
// sends it; see Send for order, blocking and errors. The caller keeps
// parts. Consecutive small messages share a pooled staging buffer, so a
// stream of short replies costs one copy each and no packet per message;
// for large messages Send with a packet avoids the copy.
func (s *Session) SendBytes(parts ...[]byte) error { return s.sendBytes(context.Background(), parts) }

// SendBytesContext is SendBytes with a wait for room bounded by ctx; see
// SendContext.
func (s *Session) SendBytesContext(ctx context.Context, parts ...[]byte) error {
	return s.sendBytes(ctx, parts)
}

func (s *Session) sendBytes(ctx context.Context, parts [][]byte) error {
	n := total(parts)
	s.mu.Lock()
	s.txLocked()
	if !s.admitsLocked(n) {
		if err := s.admitLocked(ctx, n); err != nil {
			return err
		}
	} else if s.corks == 0 && !s.writing { // nothing held back or being written: it may leave at once
		if w := s.directLocked(n); w != nil {
			return s.writeDirect(w, n, parts)
		}
	}
	s.stageBytesLocked(n, parts)
	return s.queuedLocked(ctx, n)
}

// admitsLocked reports that n more bytes of a stream session may be
// queued at once, in either send mode, with nothing to check further: the
// session is open, no sender waits for room and the queue has room (room
// for admitLocked's bound in both modes). It is the common case, decided
// inline; admitLocked decides the rest. Called with s.mu held.
func (s *Session) admitsLocked(n int) bool {
	return !s.datagram && !s.sendsEnded() && s.waitingLocked() == 0 &&
		s.queued+s.inflight+n <= s.ep.cfg.SendQueueBytes
}

// directMax bounds the messages writeDirect takes: small enough that no
// socket setting depends on them (fitLargeMessage) and that one write
// takes them whole in practice.
const directMax = smallSegment

// directLocked returns the stream sender through which a lone small
// message may be written at once, skipping the queue (writeDirect), or
// nil: only when nothing is queued, and the kept staging buffer is there
// to copy it into. Its caller has seen that nothing is being written or
// held back, and that the message was admitted at once. Called with s.mu
// held.
func (s *Session) directLocked(n int) *streamSender {
	if !s.keepStage || n > directMax || len(s.queue) > 0 || s.spareStage == nil || s.spareStage.Cap() < n {
		return nil
	}
	w, _ := s.outLocked().(*streamSender)
	return w
}

// outLocked returns the session's sender: a stream session's is made with
// its first send, and again after its send state was given back
// (shedSendScratch). Its caller takes the write turn (s.writing) before it
// writes through it. Called with s.mu held, after txLocked.
func (s *Session) outLocked() sender {
	if s.out == nil {
		s.out = newStreamSender(s.conn, &s.ep.cfg)
	}
	return s.out
}

// writeDirect writes a lone small message of n bytes (parts) with one
// write call, as flush would write a queue of it alone, without the
// queue: it copies parts into the kept staging buffer and writes that.
// While it writes it holds the session's write turn (s.writing), so other
// senders queue, and it flushes what they queued before it returns. A
// failed write closes the session; it is [ErrNotWritten] when no byte of
// the message left. Called with s.mu held, which it unlocks.
func (s *Session) writeDirect(w *streamSender, n int, parts [][]byte) error {
	buf := s.spareStage
	s.spareStage = nil
	s.writing = true
	sent := s.io.bytesOut.Load() // only this goroutine writes meanwhile
	s.inflight, s.inflightFrom = n, sent
	s.mu.Unlock()

	buf.Resize(n)
	copyParts(buf.Bytes(), parts)
	return s.directDone(w.writeOne(s, buf.Bytes()), sent, buf)
}

// directDone ends the direct write of a lone message (writeDirect,
// writeLone) that returned err, sent being the bytes written
// before it: it counts the message, keeps the staging buffer buf (nil:
// none) for the next, and gives the write turn back, or first writes
// what others queued meanwhile. A failed write closes the session.
func (s *Session) directDone(err error, sent uint64, buf *packet.Packet) error {
	if err == nil {
		s.io.messagesOut.Add(1)
	}
	s.mu.Lock()
	s.txLocked()
	if buf != nil {
		s.keepSpareLocked(nil, buf)
	}
	n := s.inflight
	s.inflight = 0
	if err != nil {
		return s.writeFailedLocked(err, true, sent)
	}
	s.wroteLocked(n)
	if len(s.queue) == 0 {
		s.writing = false
		s.shedIfParkedLocked()
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	s.flush() // what others queued meanwhile; a failure there closes the session, and this message had left
	return nil
}

// Enqueue queues p for writing like Send, but never waits for the peer:
// it returns once p is queued, and a goroutine of the session writes it
// (a server's push or broadcast, which must not stall on one peer). It
// queues past SendQueueBytes: a session whose unwritten bytes (queued and
// left of the write in progress) then stay past it for SendStallTimeout
// without a byte written is closed as a slow consumer, and one that
// Enqueue would make hold more than twice SendQueueBytes (queued and
// being written) is closed at once ([ReasonSlowConsumer]; Enqueue fails
// with [ErrSlowConsumer]). Order with other sends is call order, as for
// Send. It takes ownership of p.
func (s *Session) Enqueue(p *packet.Packet) error {
	p = p.Keep()
	n := p.Total()
	s.mu.Lock()
	s.txLocked()
	if err := s.admitNoWaitLocked(n); err != nil {
		p.Release()
		return err
	}
	s.sealStageLocked()
	s.queue = append(s.queue, p)
	return s.enqueuedLocked(n)
}

// EnqueueBytes is Enqueue for a copy of parts, as SendBytes is for Send.
func (s *Session) EnqueueBytes(parts ...[]byte) error {
	n := total(parts)
	s.mu.Lock()
	s.txLocked()
	if err := s.admitNoWaitLocked(n); err != nil {
		return err
	}
	s.stageBytesLocked(n, parts)
	return s.enqueuedLocked(n)
}

// total returns the length of parts together, the usual two (a header
// and a body) without a loop (see copyParts).
func total(parts [][]byte) int {
	if len(parts) == 2 {
		return len(parts[0]) + len(parts[1])
	}
	n := 0
	for _, b := range parts {
		n += len(b)
	}
	return n
}

// stageBytesLocked copies the n bytes of parts to the end of the staging
// buffer, the last packet in the queue, starting a new one when it lacks
// room (newStageLocked). Called with s.mu held.
func (s *Session) stageBytesLocked(n int, parts [][]byte) {
	var dst []byte
	if st := s.sendState; st.stageLen+n <= len(st.stageBuf) && st.stage != nil { // the common case (a datagram session has no stage)
		dst = st.stageBuf[st.stageLen:]
		st.stageLen += n
	} else {
		dst = s.newStageLocked(n)
	}
	copyParts(dst, parts)
}

// copyParts copies parts into dst in order, the usual two (a header and a
// body) without a loop: the loop cost more than the copies of a small
// message (42 of 644 instructions a served SRMP frame).
func copyParts(dst []byte, parts [][]byte) {
	if len(parts) == 2 {
		copy(dst[copy(dst, parts[0]):], parts[1])
		return
	}
	for _, b := range parts {
		dst = dst[copy(dst, b):]
	}
}

// openLocked checks that a message of n bytes may be sent at all. On
// failure it unlocks s.mu. Called with s.mu held.
func (s *Session) openLocked(n int) error {
	if s.sendsEnded() {
		s.mu.Unlock()
		return notWritten{s.closedErr()}
	}
	if s.datagram && n > s.maxDatagram() {
		s.mu.Unlock()
		return notWritten{fmt.Errorf("%w: %d bytes", ErrDatagramTooLarge, n)}
	}
	return nil
}

// fitsLocked reports whether n more bytes fit in the queue's room: an
// empty queue takes any message. Called with s.mu held.
func (s *Session) fitsLocked(n int) bool {
	return s.queued == 0 || s.queued+n <= s.ep.cfg.SendQueueBytes
}

// admitLocked checks that n more bytes may be queued, waiting for room
// (until ctx ends) when they do not fit or other
// senders wait before them. On failure it unlocks s.mu. Called with s.mu
// held.
func (s *Session) admitLocked(ctx context.Context, n int) error {
	if s.ep.hooks.NoWaitSends {
		return s.admitNoWaitLocked(n)
	}
	if err := s.openLocked(n); err != nil {
		return err
	}
	if s.waitingLocked() == 0 && s.fitsLocked(n) {
		return nil
	}
	return s.waitRoomLocked(ctx, n)
}

// admitNoWaitLocked checks that n more bytes may be queued by a sender
// that does not wait: up to twice SendQueueBytes held, queued and being
// written (any message when nothing is). Past that the session is closed
// as a slow consumer. On failure it unlocks s.mu. Called with s.mu held.
func (s *Session) admitNoWaitLocked(n int) error {
	if err := s.openLocked(n); err != nil {
		return err
	}
	held := s.queued + s.inflight
	if held > 0 && held+n > 2*s.ep.cfg.SendQueueBytes {
		s.mu.Unlock()
		s.slowConsumer()
		return notWritten{ErrSlowConsumer}
	}
	if held+n > s.ep.cfg.SendQueueBytes {
		s.watchStallLocked() // nobody waits for room: the stall watch judges the peer
	}
	return nil
}

// slowConsumer closes the session as a slow consumer, counted in
// Stats.SendQueueOverflows.
func (s *Session) slowConsumer() {
	s.ep.stats.overflows.Add(1) // first: the close runs OnClose, which may read the stats
	if !s.closeWith(ReasonSlowConsumer, ErrSlowConsumer) {
		s.ep.stats.overflows.Add(^uint64(0)) // it was closing already
	}
}

// waitRoomLocked waits until n more bytes fit in the queue and every
// sender that waited before this one has been admitted, or until the
// session closes or ctx ends. While it waits the queue is
// full: the stall watch runs. If no write is in progress (the queue is held
// back by a cork), it writes the queue itself. Called with s.mu held; it
// returns with s.mu held on success, unlocked on failure.
func (s *Session) waitRoomLocked(ctx context.Context, n int) error {
	w := s.waitsLocked()
	w.tickets++
	me := w.tickets
	w.waitq = append(w.waitq, me)
	s.watchStallLocked()
	done := ctx.Done() // nil for Send's context.Background: the wait ends with room or the session
	for {
		if s.sendsEnded() {
			s.leaveWaitLocked(me)
			s.mu.Unlock()
			return notWritten{s.closedErr()}
		}
		if w.waitq[0] == me && s.fitsLocked(n) {
			s.leaveWaitLocked(me)
			return nil
		}
		if !s.writing && len(s.queue) > 0 {
			s.writing = true
			s.mu.Unlock()
			s.flush() // a failure closes the session, which the loop sees
			s.mu.Lock()
			s.txLocked()
			continue
		}
		if w.room == nil {
			w.room = make(chan struct{})
		}
		room := w.room
		s.mu.Unlock()
		select {
		case <-room:
			s.mu.Lock()
			s.txLocked()
		case <-done:
			s.mu.Lock()
			s.leaveWaitLocked(me)
			s.mu.Unlock()
			return notWritten{ctx.Err()}
		}
	}
}

// leaveWaitLocked takes ticket me off the wait queue and wakes the
// others: the next may now be first. Called with s.mu held.
func (s *Session) leaveWaitLocked(me uint64) {
	w := s.waits()
	for i, t := range w.waitq {
		if t == me {
			w.waitq = append(w.waitq[:i], w.waitq[i+1:]...)
			break
		}
	}
	s.wakeLocked()
}

// wakeLocked wakes the senders waiting for room. Called with s.mu held.
func (s *Session) wakeLocked() {
	if w := s.waits(); w != nil && w.room != nil {
		close(w.room)
		w.room = nil
	}
}

// fullLocked reports whether the queue is full: the bytes not yet written
// (queued, and left of the write in progress) past SendQueueBytes, or a
// sender waiting for room. Called with s.mu held.
func (s *Session) fullLocked() bool {
	return s.unwrittenLocked() > s.ep.cfg.SendQueueBytes || s.waitingLocked() > 0
}

// unwrittenLocked returns the bytes queued and those of the write in
// progress not yet taken by the socket (as far as its pieces show).
// Called with s.mu held.
func (s *Session) unwrittenLocked() int {
	if s.sendState == nil {
		return 0
	}
	n := s.queued
	if s.inflight > 0 {
		n += max(0, s.inflight-int(s.io.bytesOut.Load()-s.inflightFrom))
	}
	return n
}

// watchStallLocked starts the stall watch unless it runs or is off: a
// timer that closes the session as a slow consumer once its queue has been
// full for SendStallTimeout with no byte written. Called with s.mu held.
func (s *Session) watchStallLocked() {
	d := s.ep.cfg.SendStallTimeout
	if d <= 0 {
		return
	}
	w := s.waitsLocked()
	if w.watching {
		return
	}
	w.watching = true
	w.stallOut, w.stallAt = s.io.bytesOut.Load(), mono.Now()
	if w.stall == nil {
		w.stall = time.AfterFunc(stallLook(d), s.lookForStall)
	} else {
		w.stall.Reset(stallLook(d))
	}
}

// stallLook is how often the stall watch looks at a full queue: a stall
// is caught within a quarter of SendStallTimeout past it.
func stallLook(d time.Duration) time.Duration { return max(d/4, time.Millisecond) }

// lookForStall is the stall watch's look (on the timer's goroutine): the
// watch ends when the queue is no longer full; a byte written since the
// last look restarts the stall's clock; a queue full with nothing written
// for SendStallTimeout closes the session as a slow consumer.
func (s *Session) lookForStall() {
	d := s.ep.cfg.SendStallTimeout
	s.mu.Lock()
	w := s.waits() // made before the watch started
	if !w.watching {
		s.mu.Unlock()
		return
	}
	if s.sendsEnded() || !s.fullLocked() {
		w.watching = false
		s.mu.Unlock()
		return
	}
	now := mono.Now()
	if out := s.io.bytesOut.Load(); out != w.stallOut {
		w.stallOut, w.stallAt = out, now
	}
	if left := time.Duration(w.stallAt + int64(d) - now); left > 0 {
		w.stall.Reset(min(stallLook(d), left))
		s.mu.Unlock()
		return
	}
	w.watching = false
	s.mu.Unlock()
	s.slowConsumer()
}

// maxDatagram is the largest message one datagram to this datagram
// session's peer carries: [MaxDatagram], or 65527 bytes to an IPv6 peer
// (datagramMax).
func (s *Session) maxDatagram() int {
	switch w := s.datagramOut().(type) {
	case *datagramSender:
		return w.max
	case *udpSender:
		return w.max
	}
	return MaxDatagram
}

// newStageLocked is stageBytesLocked without room in the staging buffer: a
// datagram's own packet, or a new staging buffer. Called with s.mu held.
func (s *Session) newStageLocked(n int) []byte {
	if s.datagram {
		p := packet.Get(n)
		s.queue = append(s.queue, p)
		return p.Bytes()
	}
	s.sealStageLocked()
	size := stageSize
	if len(s.queue) == 0 {
		size = firstStageSize // most rounds queue a reply or a few
	}
	var st *packet.Packet
	if sp := s.spareStage; sp != nil && sp.Cap() >= n {
		st, s.spareStage = sp, nil
	} else {
		st = packet.Get(max(n, size))
	}
	st.Resize(st.Cap())
	if s.keepStage {
		s.ownStage = st
	}
	s.queue = append(s.queue, st)
	s.stage, s.stageBuf, s.stageLen = st, st.Bytes(), n
	return s.stageBuf[:n]
}

// sealStageLocked ends the staging buffer: its packet keeps the bytes
// written so far and takes no more. Called with s.mu held.
func (s *Session) sealStageLocked() {
	if s.stage != nil {
		s.stage.Resize(s.stageLen)
		s.stage, s.stageBuf, s.stageLen = nil, nil, 0
	}
}

// queuedLocked accounts n queued bytes and writes the queue unless a write
// is in progress or OnReceive holds writes back; it unlocks s.mu. A sender
// that writes a message of abandonAt bytes or more itself gives up its
// write when ctx ends: the session closes (ReasonWriteTimeout, ctx's
// cause), since part of the message may be on the wire, and the call
// returns; a smaller one cannot block long once the queue had room.
func (s *Session) queuedLocked(ctx context.Context, n int) error {
	if s.countQueuedLocked(n) {
		s.mu.Unlock()
		return nil
	}
	return s.writeQueueLocked(ctx, n)
}

// countQueuedLocked counts a message of n bytes just queued, and reports
// whether its write is left to others: to the write in progress, or to the
// end of the cork holding writes back (until corkLimit bytes are queued).
// Called with s.mu held.
func (s *Session) countQueuedLocked(n int) (leftToOthers bool) {
	st := s.sendState
	st.queued += n
	st.queuedMsgs++
	return s.writing || st.corks > 0 && st.queued < corkLimit
}

// writeQueueLocked takes the write turn and writes the queue, for a
// sender whose message of n bytes is in it (see queuedLocked). It unlocks
// s.mu.
func (s *Session) writeQueueLocked(ctx context.Context, n int) error {
	s.writing = true
	s.mu.Unlock()
	if n >= abandonAt && ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { s.abandonWrite(context.Cause(ctx)) })
		defer stop()
	}
	return s.flush()
}

// abandonAt is the size from which a sender's context bounds its own
// write (queuedLocked): a larger message may fill the socket's buffer and
// block on a peer that does not read. Below it the write costs no
// context hook (an allocation).
const abandonAt = 16 << 10

// abandonWrite closes the session because the sender writing it gave up
// at its deadline (cause): the write in progress fails at once.
func (s *Session) abandonWrite(cause error) {
	s.closeWith(ReasonWriteTimeout, fmt.Errorf("transport: a write abandoned at its sender's deadline: %w", cause))
}

// enqueuedLocked is queuedLocked for a sender that does not wait: a
// goroutine of its own writes the queue. It starts the stall watch when
// the queue is past SendQueueBytes. It unlocks s.mu.
func (s *Session) enqueuedLocked(n int) error {
	if s.countQueuedLocked(n) {
		s.mu.Unlock()
		return nil
	}
	s.writing = true
	s.mu.Unlock()
	go s.flush() // a failure closes the session; no caller waits for it
	return nil
}

// corkLimit is how many bytes sends made while writes are held back (during
// OnReceive with BatchSends, or Batch) may queue before they are written
// without waiting.
const corkLimit = 64 << 10

// Batch runs f with this session's writes held back, then writes what f
// (and any other goroutine meanwhile) sent in one vectored write: a
// client that sends many requests at once pays one write system call for
// all of them. Writes are held only up to 64 KiB queued; past that they
// leave as they come. f must not wait for a reply to its own sends (they
// have not left). Batches may nest and run on several goroutines; the
// writes leave when the last one ends. It returns the error of that write,
// if any.
func (s *Session) Batch(f func()) error {
	s.cork()
	defer func() {
		if v := recover(); v != nil {
			s.uncork()
			panic(v)
		}
	}()
	f()
	return s.uncork()
}

// cork holds back writes while OnReceive runs (or Batch), so that the
// replies to all the frames of one read leave in one vectored write
// instead of one write system call each.
func (s *Session) cork() {
	s.mu.Lock()
	s.txLocked()
	s.corks++
	s.mu.Unlock()
}

// uncork writes what was queued while corked, once no cork is left.
func (s *Session) uncork() error {
	s.mu.Lock()
	s.txLocked()
	s.corks--
	if s.corks > 0 || s.writing || len(s.queue) == 0 {
		s.mu.Unlock()
		return nil
	}
	s.writing = true
	s.mu.Unlock()
	return s.flush()
}

// shedSendScratch gives back the send state (its queue's slices and the
// kept staging buffer) and the stream sender (outLocked makes it again),
// for a server's session about to park, unless a write is in progress or
// bytes are queued or held back: a parked connection then holds none of
// them, and its next send takes them again from their pools. A write that
// ends while the session is parked (a reply of a call that ran on a
// goroutine of its own) sheds them then (shedIfParkedLocked).
func (s *Session) shedSendScratch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shedLocked()
}

// shedIfParkedLocked is shedLocked for a session whose write has just
// ended: only when it is parked. Called with s.mu held.
func (s *Session) shedIfParkedLocked() {
	if s.parkState.Load() == parkParked {
		s.shedLocked()
	}
}

// shedLocked is shedSendScratch with s.mu held.
func (s *Session) shedLocked() {
	if s.writing || s.waitingLocked() > 0 {
		return
	}
	if st := s.sendState; st != nil {
		if st.queued > 0 || st.inflight > 0 || len(st.queue) > 0 || st.stage != nil || st.corks > 0 {
			return
		}
		if st.spareStage != nil { // a parked session holds no staging buffer
			st.spareStage.Release()
		}
		s.sendState = nil
		st.recycle()
	}
}

// SendQueue returns the state of the session's send queue now.
func (s *Session) SendQueue() QueueStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return QueueStats{Messages: s.queuedMsgsLocked(), Bytes: int64(s.unwrittenLocked()), Waiting: s.waitingLocked()}
}

// QueuedBytes returns the bytes waiting to be written: a view of the
// session's back-pressure.
func (s *Session) QueuedBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sendState == nil {
		return 0
	}
	return s.queued
}

// flush writes queued batches until the queue is empty. Only the goroutine
// that set s.writing runs it. Its caller's own bytes are in the first
// batch: a failure there before any byte left is [ErrNotWritten], any later
// one may have carried them.
func (s *Session) flush() error {
	s.mu.Lock()
	s.txLocked()
	for first := true; len(s.queue) > 0 && !s.sendsEnded(); first = false {
		s.sealStageLocked()
		batch, msgs, own, out := s.queue, s.queuedMsgs, s.ownStage, s.outLocked()
		sent := s.io.bytesOut.Load() // only this goroutine writes meanwhile
		s.inflight, s.inflightFrom = s.queued, sent
		s.queue, s.spare, s.queued, s.queuedMsgs = s.spare, nil, 0, 0
		s.wakeLocked() // the queue's room is free again
		s.mu.Unlock()

		err := out.writeBatch(s, batch)
		if err == nil {
			s.io.messagesOut.Add(uint64(msgs)) // messages, not packets: SendBytes shares staging buffers
		}
		var keep *packet.Packet // the staging buffer a client keeps for its next SendBytes
		for i, p := range batch {
			if p == own && p.RefCount() == 1 {
				keep = p
			} else {
				p.Release()
			}
			batch[i] = nil
		}
		s.mu.Lock()
		s.txLocked() // (a finish meanwhile dropped it)
		s.keepSpareLocked(own, keep)
		s.spare = batch[:0]
		n := s.inflight
		s.inflight = 0
		if err != nil {
			return s.writeFailedLocked(err, first, sent)
		}
		s.wroteLocked(n)
	}
	s.writing = false
	s.shedIfParkedLocked()
	s.mu.Unlock()
	return nil
}

// writeFailedLocked ends a write that failed with err: it gives up the
// write turn, unlocks s.mu (held), closes the session and returns its
// close error, as [ErrNotWritten] when first (the write held the oldest
// bytes queued) and no byte left since bytesOut read sent.
func (s *Session) writeFailedLocked(err error, first bool, sent uint64) error {
	s.writing = false
	s.mu.Unlock()
	s.closeWith(writeReason(err), err)
	cerr := s.closedErr() // names the reason that won, e.g. a slow consumer
	if first && s.io.bytesOut.Load() == sent {
		return notWritten{cerr}
	}
	return cerr
}

// keepSpareLocked keeps p, the written staging buffer own of a stream
// session (nil when it was released), for its next SendBytes, which then
// takes none from the pool (a serial caller writes one small request per
// round, a server one reply per read). A server's session gives it back
// when it parks (shedSendScratch), so idle connections hold none. own is
// forgotten either way, so that a handle recycled by the pool is never
// taken for it. Called with s.mu held.
func (s *Session) keepSpareLocked(own, p *packet.Packet) {
	if own != nil && s.ownStage == own {
		s.ownStage = nil
	}
	if p == nil {
		return
	}
	if s.spareStage != nil || s.finished() {
		p.Release()
		return
	}
	s.spareStage = p
}

// writeReason classifies a failed write.
func writeReason(err error) Reason {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ReasonWriteTimeout
	case errors.Is(err, net.ErrClosed):
		return ReasonLocal
	case peerGone(err):
		return ReasonPeerClosed // the read side may not have seen it yet
	}
	return ReasonError
}

// streamSender writes to a stream connection (TCP, Unix, TLS).
type streamSender struct {
	conn       net.Conn
	timeout    time.Duration
	deadlineAt int64       // coarse time at which the write deadline was last moved
	iov        [][]byte    // scratch for building a vectored write
	bufs       net.Buffers // the vectored write in progress (a field, so it does not escape per call)
	piece      [1][]byte   // the piece of a large segment being written
	stages     []*packet.Packet

	tcp       tcpSocket // the TCP socket under conn; nil for Unix sockets
	sndbuf    int       // SO_SNDBUF as last set; 0: left to the OS, never touched
	sndbufMax int       // growth limit for sndbuf
	nagle     bool      // NoDelayAuto, Nagle still on: the first large message turns it off
}

// streamSenders keeps the stream senders that parked sessions gave up
// (shedSendScratch), so that a heartbeat's wake makes none.
var streamSenders = sync.Pool{New: func() any { return new(streamSender) }}

func newStreamSender(c net.Conn, cfg *Config) *streamSender {
	w := streamSenders.Get().(*streamSender)
	*w = streamSender{conn: c, timeout: cfg.WriteTimeout, tcp: tcpOf(c), iov: w.iov[:0], stages: w.stages[:0]}
	if w.tcp != nil {
		w.sndbuf, w.sndbufMax = cfg.SocketSendBuffer, cfg.MaxSocketSendBuffer
		w.nagle = cfg.NoDelay == NoDelayAuto
	}
	return w
}

// recycle gives w, which no session uses any more, to streamSenders,
// keeping its scratch slices when they are small.
func (w *streamSender) recycle() {
	iov, stages := w.iov, w.stages
	if cap(iov) > keptScratch || cap(stages) > keptScratch {
		iov, stages = nil, nil
	}
	clear(iov[:cap(iov)])
	clear(stages[:cap(stages)])
	*w = streamSender{iov: iov[:0], stages: stages[:0]}
	streamSenders.Put(w)
}

// keptScratch is the largest capacity of the scratch slices a recycled
// stream sender keeps: a heartbeat's reply needs one or two.
const keptScratch = 4

// Small segments are copied into contiguous staging buffers before a
// vectored write: hundreds of tiny iovecs (one per echoed frame) cost the
// kernel far more than copying a few bytes each.
const (
	smallSegment   = 512
	stageSize      = 64 << 10
	firstStageSize = 4 << 10 // SendBytes' first staging buffer of a round
)

// gather appends the batch's segments to w.iov, copying runs of small
// segments into staging buffers (released by the caller via w.stages).
func (w *streamSender) gather(batch []*packet.Packet) {
	var stage *packet.Packet
	run := -1 // start of the current run of small segments in stage
	endRun := func() {
		if run >= 0 {
			w.iov = append(w.iov, stage.Bytes()[run:])
			run = -1
		}
	}
	for _, p := range batch {
		for seg := p; seg != nil; seg = seg.Next() {
			b := seg.Bytes()
			switch {
			case len(b) == 0:
			case len(b) > smallSegment:
				endRun()
				w.iov = append(w.iov, b)
			default:
				if stage == nil || stage.Len()+len(b) > stageSize {
					endRun()
					stage = packet.Get(stageSize)
					stage.Resize(0)
					w.stages = append(w.stages, stage)
				}
				if run < 0 {
					run = stage.Len()
				}
				stage.Write(b)
			}
		}
	}
	endRun()
}

// armDeadline moves the write deadline, at most once per clock tick: it
// always lies at least timeout ahead of any write that starts.
func (w *streamSender) armDeadline() error {
	if w.timeout > 0 {
		if t := now(); t != w.deadlineAt {
			w.deadlineAt = t
			return w.conn.SetWriteDeadline(timeOf(t).Add(w.timeout + clockTick))
		}
	}
	return nil
}

// writeOne writes one small message b (writeDirect's) and counts its bytes.
func (w *streamSender) writeOne(s *Session, b []byte) error {
	if err := w.armDeadline(); err != nil {
		return err
	}
	k, err := w.conn.Write(b)
	s.io.bytesOut.Add(uint64(k))
	return err
}

func (w *streamSender) writeBatch(s *Session, batch []*packet.Packet) error {
	if err := w.armDeadline(); err != nil {
		return err
	}
	var (
		n   int64
		err error
	)
	if w.sndbuf > 0 || w.nagle {
		w.fitLargeMessage(batch)
	}
	if len(batch) == 1 && batch[0].Next() == nil {
		b := batch[0].Bytes()
		for len(b) > writePiece && err == nil { // a large message: in pieces, so that progress shows
			var k int
			k, err = w.conn.Write(b[:writePiece])
			s.io.bytesOut.Add(uint64(k))
			b = b[k:]
			if err == nil {
				err = w.armDeadline() // WriteTimeout is each call's, not the message's
			}
		}
		if err == nil {
			var k int
			k, err = w.conn.Write(b)
			n = int64(k)
		}
	} else {
		w.iov = w.iov[:0]
		w.gather(batch)
		n, err = w.writeVectored(s)
		clear(w.iov)
		for i, st := range w.stages {
			st.Release()
			w.stages[i] = nil
		}
		w.stages = w.stages[:0]
	}
	s.io.bytesOut.Add(uint64(n))
	return err
}

// writePiece is the most one write call carries. The bytes a peer has
// taken show in the session's counters (and to its stall watch, see
// Config.SendStallTimeout) only when a call returns, so a large batch
// goes out in pieces: a peer reading slowly shows progress every piece
// instead of once per batch. It costs a system call per 256 KiB, which the
// copy of those bytes dwarfs.
const writePiece = 256 << 10

// writeVectored writes w.iov in vectored writes of at most writePiece
// bytes each, counting all but the last one's bytes in s (the caller
// counts those). A segment larger than a piece is cut.
func (w *streamSender) writeVectored(s *Session) (int64, error) {
	iov := w.iov
	for {
		size, k := 0, 0
		for k < len(iov) && size+len(iov[k]) <= writePiece {
			size += len(iov[k])
			k++
		}
		switch {
		case k == len(iov):
			w.bufs = iov
			return writeBuffers(w.conn, &w.bufs)
		case k == 0: // a segment larger than a piece: its first piece
			w.piece[0] = iov[0][:writePiece]
			iov[0] = iov[0][writePiece:]
			w.bufs = w.piece[:]
		default:
			w.bufs = iov[:k]
			iov = iov[k:]
		}
		n, err := writeBuffers(w.conn, &w.bufs)
		s.io.bytesOut.Add(uint64(n))
		if err == nil {
			err = w.armDeadline() // WriteTimeout is each piece's, not the batch's
		}
		if err != nil {
			return 0, err
		}
	}
}

func (w *streamSender) close() error { return w.conn.Close() }

// buffersWriter is a connection with a vectored write of its own (a
// server's fdConn): net.Buffers.WriteTo makes one only for the net
// package's connections.
type buffersWriter interface {
	writeBuffers(*net.Buffers) (int64, error)
}

// writeBuffers writes b to c whole, consuming it, with vectored writes.
func writeBuffers(c net.Conn, b *net.Buffers) (int64, error) {
	if bw, ok := c.(buffersWriter); ok {
		return bw.writeBuffers(b)
	}
	return b.WriteTo(c)
}
