package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/lifenet/lifenet/packet"
)

// interrupted is a read deadline in the past: setting it wakes a blocked
// read (Shutdown, a cancelled [ReceiveSync]).
var interrupted = time.Unix(1, 0)

// serveStream runs a stream session on the calling goroutine until it
// ends (OnOpen, the receive loop, then finish: OnClose) or parks: it
// reports true when the session gave its goroutine up, idle, and a wake
// will serve it again ([Server.runSession]).
func (s *Session) serveStream() (parked bool) {
	defer func() {
		if v := recover(); v != nil {
			s.logPanic(v)
			s.closeWith(ReasonError, &PanicError{Value: v})
			parked = false
		}
		if !parked {
			s.finish()
		}
	}()
	if !s.handshake() {
		return false
	}
	return s.receiveStream()
}

// handshake runs an accepted TLS connection's handshake within
// HandshakeTimeout; false when it failed and the session closed.
func (s *Session) handshake() bool {
	tc, ok := s.conn.(*tls.Conn)
	d := s.ep.cfg.HandshakeTimeout
	if !ok || s.owner() == nil || d <= 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), d) // (Close ends it sooner: it closes the connection)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		r := ReasonProtocol
		if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
			r = ReasonFirstByte
		}
		s.closeWith(r, fmt.Errorf("transport: TLS handshake: %w", err))
		return false
	}
	return true
}

// receiveStream reads into one pooled buffer and hands each read to
// OnReceive. If the handler kept a share of the buffer, the next read goes
// into a fresh one; otherwise the same buffer is reused, so steady-state
// reads allocate nothing (NewLife's round-end adjudication). It returns
// true when the session parked (park.go): the buffer goes back to the
// pool, and the next goroutine starts with another.
func (s *Session) receiveStream() (parked bool) {
	beforeFirst := !s.gotFirst
	size := min(s.ep.cfg.ReadBufferSize, FirstReadSize)
	buf := s.getReadBuffer(size)
	defer func() { s.putReadBuffer(buf, size) }()

	if !s.has(flagStarted) {
		if s.ep.hooks.Route != nil && !s.has(flagAdopted) {
			n, st := s.route(&buf, &size)
			if st != routeServe {
				return st == routeParked
			}
			s.open()
			s.gotFirst = true
			s.deliver(buf, n)
			buf, size = s.nextBuffer(buf, n, size)
		} else {
			s.open()
		}
	}
	// The read deadline moves when a receive moves lastRx (at most once a
	// clock tick) or the first byte comes: not once per read.
	armedRx, armedFirst, parkAt := uint32(0), false, false
	fresh := s.resumed
	s.resumed = false
	// A session woken after a quiet spell, and a server's connection that
	// has sent nothing yet, read what has come and park again at once: a
	// ramp of connections then holds no goroutine each while their first
	// bytes are on the way (goroutines a program made stay in the runtime's
	// list for good, ~0.5 KB each).
	// So does one woken while maxWaiting sessions wait in this loop already
	// (a burst on many connections at once): each holds a goroutine.
	srv := s.owner()
	parkable := srv != nil && s.parkable()
	if fresh && (s.rxAge(now()) >= s.ep.cfg.ParkAfter || parkable && srv.waiting.Load() >= maxWaiting) ||
		beforeFirst && parkable {
		switch s.readAvailable(&buf, &size) {
		case wokeParked:
			return true
		case wokeEnded:
			return false
		}
	}
	if parkable {
		srv.waiting.Add(1)
		defer srv.waiting.Add(-1)
	}
	if s.polled { // busy now: its bytes are read here, not watched (park.go)
		s.poll.disarm(s)
	}
	for {
		if rx := s.lastRx.Load(); rx != armedRx || s.gotFirst != armedFirst {
			armedRx, armedFirst = rx, s.gotFirst
			var at time.Time
			at, parkAt = s.readDeadline(fresh)
			s.conn.SetReadDeadline(at)
		}
		// Checked after the deadline moves: a drain started by another
		// goroutine sets draining before its interrupting deadline, which
		// the move above may have overwritten; the read would then wait
		// for the peer or the idle timeout.
		if s.draining() {
			s.drainSends()
			s.endDrain()
			return false
		}
		n, err := s.conn.Read(buf.Bytes())
		if n > 0 {
			s.gotFirst = true
			s.deliver(buf, n)
			buf, size = s.nextBuffer(buf, n, size)
			if fresh {
				fresh = false
				if parkAt { // the deadline woken with lies ParkAfter past this receive: it stays
					armedRx, armedFirst = s.lastRx.Load(), s.gotFirst
				}
			}
		}
		if n == 0 && err == nil { // an empty datagram: the peer ended the session
			s.closeWith(ReasonPeerClosed, nil)
			return false
		}
		if err != nil && !s.draining() { // a drain's interrupt is no error: the loop's top drains
			if parkAt && errors.Is(err, os.ErrDeadlineExceeded) {
				if s.park(s.endOfWait()) {
					return true
				}
				armedRx = 0 // not parked: the deadline is set again
				continue
			}
			s.closeWith(s.readReason(err, s.gotFirst), causeOf(err))
			return false
		}
	}
}

// FirstReadSize is the receive buffer a stream session's read loop starts
// with (or Config.ReadBufferSize, if smaller); the first read that fills it
// moves the loop to ReadBufferSize. A session that sends a little now and
// then (a device's heartbeat) never takes more, and a burst of connections
// takes 4 KiB each, not 64.
const FirstReadSize = 4 << 10

// nextBuffer returns the buffer for the read after one of n bytes into buf
// (of size bytes), and its size: buf again, unless the handler kept a share
// of it, or the read filled it and a larger one is allowed.
func (s *Session) nextBuffer(buf *packet.Packet, n, size int) (*packet.Packet, int) {
	if n == size && size < s.ep.cfg.ReadBufferSize {
		s.putReadBuffer(buf, size)
		size = s.ep.cfg.ReadBufferSize
		return s.getReadBuffer(size), size
	}
	if buf.RefCount() == 1 {
		buf.Resize(size)
		return buf, size
	}
	s.putReadBuffer(buf, size)
	return s.getReadBuffer(size), size
}

// getReadBuffer takes a receive buffer of size bytes, counted in
// Stats.ReadBufferBytes until putReadBuffer.
func (s *Session) getReadBuffer(size int) *packet.Packet {
	s.ep.stats.readBuffers.Add(int64(size))
	return packet.Get(size)
}

// putReadBuffer gives a receive buffer of size bytes back (a share the
// handler kept keeps its bytes alive; the session no longer counts them).
func (s *Session) putReadBuffer(buf *packet.Packet, size int) {
	s.ep.stats.readBuffers.Add(-int64(size))
	buf.Release()
}

// drainSends waits until everything queued has been written, writing it
// itself if no other goroutine is, or until the session is closed.
func (s *Session) drainSends() {
	for s.Reason() == ReasonNone {
		s.mu.Lock()
		pending, writing := s.pendingLocked(), s.writing
		if pending && !writing {
			s.writing = true
		}
		s.mu.Unlock()
		switch {
		case pending && !writing:
			s.flush()
		case !pending && !writing:
			return
		default:
			time.Sleep(time.Millisecond)
		}
	}
}

// deliver hands n received bytes of buf to the session's handler or
// OnReceive (in a pull-mode client, to its queue).
func (s *Session) deliver(buf *packet.Packet, n int) {
	s.received(n)
	buf.Resize(n)
	ep := s.ep
	switch {
	case ep.pull != nil:
		ep.pull(s, buf)
	case s.handler != nil:
		if ep.hooks.BatchSends {
			s.cork()
			defer s.uncork() // also when the handler panics
		}
		s.handler.Receive(s, buf)
	case ep.hooks.OnReceive != nil:
		if ep.hooks.BatchSends {
			s.cork()
			defer s.uncork()
		}
		ep.hooks.OnReceive(s, buf)
	}
}

// received counts a read (or datagram) of n bytes.
func (s *Session) received(n int) {
	// The coarse clock moves every 250 ms: most receives find lastRx
	// current, and a load costs less than a store (a locked exchange on
	// amd64) on a line that [Stats] and the UDP sweep read.
	if t := stampOf(now()); s.lastRx.Load() != t {
		s.lastRx.Store(t)
	}
	s.io.bytesIn.Add(uint64(n))
	s.io.messagesIn.Add(1)
}

// readReason classifies a failed read.
func (s *Session) readReason(err error, gotFirst bool) Reason {
	var we *WriteError
	switch {
	case errors.As(err, &we):
		return writeReason(we.Err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		if gotFirst {
			return ReasonIdle
		}
		return ReasonFirstByte
	case errors.Is(err, io.EOF), peerGone(err):
		return ReasonPeerClosed
	case errors.Is(err, net.ErrClosed):
		return ReasonLocal
	}
	return ReasonError
}

// causeOf drops the causes that the reason already says in full.
func causeOf(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}
