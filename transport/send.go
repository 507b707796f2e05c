package transport

import (
	"errors"
	"fmt"
	"net"
	"os"
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
// itself, so Send may block for up to WriteTimeout. Send fails with a
// *CloseError (matching ErrClosed) once the session is closing, and with
// ErrSlowConsumer — closing the session — when the queue already holds
// bytes and p would take it past SendQueueBytes. (A single packet larger
// than the limit is accepted on an empty queue.)
func (s *Session) Send(p *packet.Packet) error {
	p = p.Keep() // a borrowed view must outlive the call that lent it
	n := p.Total()
	s.mu.Lock()
	if err := s.admitLocked(n); err != nil {
		p.Release()
		return err
	}
	s.sealStageLocked() // later small messages must not go in front of p
	s.queue = append(s.queue, p)
	return s.queuedLocked(n)
}

// SendBytes copies parts, in order, into the send queue as one message and
// sends it; see Send for order, blocking and errors. The caller keeps
// parts. Consecutive small messages share a pooled staging buffer, so a
// stream of short replies costs one copy each and no packet per message;
// for large messages Send with a packet avoids the copy.
func (s *Session) SendBytes(parts ...[]byte) error {
	n := 0
	for _, b := range parts {
		n += len(b)
	}
	s.mu.Lock()
	if err := s.admitLocked(n); err != nil {
		return err
	}
	dst := s.stageLocked(n)
	for _, b := range parts {
		dst = dst[copy(dst, b):]
	}
	return s.queuedLocked(n)
}

// admitLocked checks that n more bytes may be queued. On failure it unlocks
// s.mu (and for a slow consumer closes the session). Called with s.mu held.
func (s *Session) admitLocked(n int) error {
	if s.finished || s.Reason() != ReasonNone {
		s.mu.Unlock()
		return notWritten{s.closedErr()}
	}
	if s.datagram && n > s.maxDatagram() {
		s.mu.Unlock()
		return notWritten{fmt.Errorf("%w: %d bytes", ErrDatagramTooLarge, n)}
	}
	if s.queued > 0 && s.queued+n > s.ep.cfg.SendQueueBytes {
		s.mu.Unlock()
		s.ep.stats.overflows.Add(1)
		s.closeWith(ReasonSlowConsumer, ErrSlowConsumer)
		return notWritten{ErrSlowConsumer}
	}
	return nil
}

// maxDatagram is the largest message one datagram to this session's peer
// carries: MaxDatagram, or 65527 bytes to an IPv6 peer.
func (s *Session) maxDatagram() int {
	if u, ok := s.remote.(*net.UDPAddr); ok && u.IP.To4() == nil {
		return maxDatagram6
	}
	return MaxDatagram
}

// stageLocked returns n bytes at the end of the staging buffer, the last
// packet in the queue, starting a new one when it lacks room. A datagram
// session gets a packet of its own per message: each leaves as one
// datagram. Called with s.mu held.
func (s *Session) stageLocked(n int) []byte {
	if s.datagram {
		p := packet.Get(n)
		s.queue = append(s.queue, p)
		return p.Bytes()
	}
	if k := s.stageLen; s.stage != nil && len(s.stageBuf)-k >= n {
		s.stageLen = k + n
		return s.stageBuf[k : k+n]
	}
	s.sealStageLocked()
	size := stageSize
	if len(s.queue) == 0 {
		size = firstStageSize // most rounds queue a reply or a few
	}
	st := packet.Get(max(n, size))
	st.Resize(st.Cap())
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
// is in progress or OnReceive holds writes back; it unlocks s.mu.
func (s *Session) queuedLocked(n int) error {
	s.queued += n
	s.queuedMsgs++
	if s.writing || s.corks > 0 && s.queued < corkLimit {
		s.mu.Unlock()
		return nil
	}
	s.writing = true
	s.mu.Unlock()
	return s.flush()
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
	s.corks++
	s.mu.Unlock()
}

// uncork writes what was queued while corked, once no cork is left.
func (s *Session) uncork() error {
	s.mu.Lock()
	s.corks--
	if s.corks > 0 || s.writing || len(s.queue) == 0 {
		s.mu.Unlock()
		return nil
	}
	s.writing = true
	s.mu.Unlock()
	return s.flush()
}

// QueuedBytes returns the bytes waiting to be written: a view of the
// session's back-pressure.
func (s *Session) QueuedBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queued
}

// flush writes queued batches until the queue is empty. Only the goroutine
// that set s.writing runs it. Its caller's own bytes are in the first
// batch: a failure there before any byte left is ErrNotWritten, any later
// one may have carried them.
func (s *Session) flush() error {
	s.mu.Lock()
	for first := true; len(s.queue) > 0 && !s.finished && s.Reason() == ReasonNone; first = false {
		s.sealStageLocked()
		batch, msgs := s.queue, s.queuedMsgs
		s.queue, s.spare, s.queued, s.queuedMsgs = s.spare, nil, 0, 0
		s.mu.Unlock()

		sent := s.io.bytesOut.Load() // only this goroutine writes meanwhile
		err := s.out.writeBatch(s, batch)
		if err == nil {
			s.io.messagesOut.Add(uint64(msgs)) // messages, not packets: SendBytes shares staging buffers
		}
		for i, p := range batch {
			p.Release()
			batch[i] = nil
		}
		s.mu.Lock()
		s.spare = batch[:0]
		if err != nil {
			s.writing = false
			s.mu.Unlock()
			s.closeWith(writeReason(err), err)
			cerr := s.closedErr() // names the reason that won, e.g. a slow consumer
			if first && s.io.bytesOut.Load() == sent {
				return notWritten{cerr}
			}
			return cerr
		}
	}
	s.writing = false
	s.mu.Unlock()
	return nil
}

// writeReason classifies a failed write.
func writeReason(err error) Reason {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ReasonWriteTimeout
	case errors.Is(err, net.ErrClosed):
		return ReasonLocal
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
	stages     []*packet.Packet

	tcp       *net.TCPConn // the TCP socket under conn; nil for Unix sockets
	sndbuf    int          // SO_SNDBUF as last set; 0: left to the OS, never touched
	sndbufMax int          // growth limit for sndbuf
	nagle     bool         // NoDelayAuto, Nagle still on: the first large message turns it off
}

func newStreamSender(c net.Conn, cfg *Config) *streamSender {
	w := &streamSender{conn: c, timeout: cfg.WriteTimeout, tcp: tcpOf(c)}
	if w.tcp != nil {
		w.sndbuf, w.sndbufMax = cfg.SocketSendBuffer, cfg.MaxSocketSendBuffer
		w.nagle = cfg.NoDelay == NoDelayAuto
	}
	return w
}

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

func (w *streamSender) writeBatch(s *Session, batch []*packet.Packet) error {
	if w.timeout > 0 {
		// Move the deadline at most once per clock tick; it always lies at
		// least timeout ahead of any write that starts.
		if t := now(); t != w.deadlineAt {
			w.deadlineAt = t
			if err := w.conn.SetWriteDeadline(mono.Time(t).Add(w.timeout + clockTick)); err != nil {
				return err
			}
		}
	}
	var (
		n   int64
		err error
	)
	if w.sndbuf > 0 || w.nagle {
		w.fitLargeMessage(batch)
	}
	if len(batch) == 1 && batch[0].Next() == nil {
		var k int
		k, err = w.conn.Write(batch[0].Bytes())
		n = int64(k)
	} else {
		w.iov = w.iov[:0]
		w.gather(batch)
		w.bufs = w.iov
		n, err = w.bufs.WriteTo(w.conn)
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

func (w *streamSender) close() error { return w.conn.Close() }
