package transport

import (
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/lifenet/lifenet/internal/mono"
	"github.com/lifenet/lifenet/packet"
)

// Parking: a server's stream session that has had nothing to read for
// Config.ParkAfter gives its receive goroutine and read buffer up. The
// kernel's readiness (epoll, park_linux.go) or a wake (Close, a drain, a
// deadline due) hands it to a worker goroutine again, which reads on where
// the last one stopped. An idle connection then costs its structs alone.
// docs/design/parking.md says why and what it costs.

// Park states of a session (Session.parkState).
const (
	parkRunning uint32 = iota // a goroutine serves the session
	parkParked                // none does: a wake starts one
	parkWoken                 // a wake came while one ran: its next park is called off
)

// parkable reports whether the session may park: a server's own TCP or
// Unix connection (not TLS, not an adopted one) where the OS has a poller.
func (s *Session) parkable() bool {
	if !parkSupported || s.owner() == nil || s.has(flagAdopted) || s.noPark || s.ep.cfg.ParkAfter <= 0 {
		return false
	}
	return parkableConn(s.conn)
}

// endOfWait returns when a read with nothing to read must end the session
// (ReasonIdle, or ReasonFirstByte before the first byte), or the zero time
// for never.
func (s *Session) endOfWait() time.Time {
	cfg := &s.ep.cfg
	if s.gotFirst {
		if cfg.IdleTimeout > 0 {
			return timeOf(s.lastRxAt()).Add(cfg.IdleTimeout + clockTick)
		}
		return time.Time{}
	}
	if fb := s.firstByteTimeout(); fb > 0 {
		return mono.Time(s.created).Add(fb)
	}
	return time.Time{}
}

// readDeadline returns the deadline of the next read, and whether it is
// the one to park at (Config.ParkAfter from now, on the coarse clock, so
// up to a tick less) rather than the end of the wait. fresh is for the
// first read of a session woken from parking: it gets a clock tick more,
// so that it reads the bytes that woke it (a read past its deadline reads
// nothing), and that deadline serves its next reads too.
func (s *Session) readDeadline(fresh bool) (at time.Time, park bool) {
	end := s.endOfWait()
	if !s.parkable() {
		return end, false
	}
	wait := s.ep.cfg.ParkAfter
	if fresh {
		wait += clockTick
	}
	if p := timeOf(now()).Add(wait); end.IsZero() || p.Before(end) {
		return p, true
	}
	return end, false
}

// firstByteTimeout is the time an accepted connection has to send its
// first byte (0: no limit): a client's and an adopted connection's have none.
func (s *Session) firstByteTimeout() time.Duration {
	if s.owner() == nil || s.has(flagAdopted) {
		return 0
	}
	return s.ep.cfg.FirstByteTimeout
}

// park gives up the session's receive goroutine, which must then return
// without finishing the session; end is the end of its wait (endOfWait),
// when the sweep wakes it. It reports false when the session cannot park
// now (a wake came meanwhile, or the poller failed): read on.
func (s *Session) park(end time.Time) bool {
	if h, ok := s.handler.(ParkHandler); ok {
		h.Parked(s)
	}
	s.shedSendScratch()
	p := s.poll
	if p == nil {
		if p = s.owner().acquirePoller(); p == nil {
			s.noPark = true // no poller: this session stays on its goroutine
			return false
		}
		s.poll = p
	}
	var wakeAt int64
	if !end.IsZero() {
		wakeAt = mono.Of(end)
	}
	s.detachConn(p)
	if !p.arm(s, wakeAt) {
		s.noPark = true // a connection the poller cannot watch: this session stays on its goroutine
		return false
	}
	if s.parkState.CompareAndSwap(parkRunning, parkParked) {
		p.parked.Add(1)
		parkedSessions.Add(1)
		return true
	}
	s.parkState.Store(parkRunning) // woken meanwhile: what woke it is read now
	return false
}

// How readAvailable ended.
const (
	wokeParked  = iota // the session parked again
	wokeEnded          // the session ended
	wokeRunning        // it could not park (a wake came meanwhile): read on, waiting
)

// readAvailable serves a session woken after a quiet spell (nothing
// received for ParkAfter before the wake: a device's heartbeat, say):
// it reads and delivers what has come, without waiting, and parks again as
// soon as nothing is left, with no read deadline, timer or wait in
// between. A session that gets bytes again within ParkAfter of these
// is woken into the waiting loop instead (receiveStream), which keeps it
// off the poller while it is busy.
func (s *Session) readAvailable(buf **packet.Packet, size *int) int {
	return s.readWoken(buf, size, false)
}

// readWoken is readAvailable; with edge, the session was woken by an edge
// of its connection's readiness that said nothing of the peer's close
// (poller.lead): a read that leaves room in the buffer has then emptied
// the socket, and the session parks without reading again to find it
// empty. Bytes, or the close, that come after the edge make another (the
// connection stays on the watch list), which finds the session running
// and calls its park off (parkWoken): the next read sees them.
func (s *Session) readWoken(buf **packet.Packet, size *int, edge bool) int {
	rc, err := s.conn.(syscall.Conn).SyscallConn()
	if err != nil {
		return s.readOn()
	}
	for {
		if s.draining() {
			s.drainSends()
			s.endDrain()
			return wokeEnded
		}
		b := (*buf).Bytes()
		n, wouldBlock, err := readNow(rc, b)
		switch {
		case n > 0:
			s.gotFirst = true
			s.deliver(*buf, n)
			*buf, *size = s.nextBuffer(*buf, n, *size)
			if !edge || n == len(b) || s.draining() {
				continue
			}
			fallthrough // emptied: park
		case wouldBlock:
			end := s.endOfWait()
			if !end.IsZero() && !timeOf(now()).Before(end) { // the sweep woke it: the wait is over
				s.closeWith(s.readReason(os.ErrDeadlineExceeded, s.gotFirst), nil)
				return wokeEnded
			}
			if s.park(end) {
				return wokeParked
			}
			return s.readOn()
		default:
			if s.draining() {
				continue // a drain's interrupt: the loop's top drains
			}
			s.closeWith(s.readReason(err, s.gotFirst), causeOf(err))
			return wokeEnded
		}
	}
}

// readOn readies a session that could not park for the waiting loop: a
// parking deadline may be left, expired, which would fail its reads
// (readNow reads past deadlines).
func (s *Session) readOn() int {
	s.conn.SetReadDeadline(time.Time{})
	return wokeRunning
}

// wake makes sure a goroutine serves the session: it starts one for a
// parked session, and tells a running one not to park at its next try. For
// events a parked session must see: readiness, Close, a drain, a deadline.
func (s *Session) wake() {
	if s.claim() {
		s.resumed = true
		s.owner().serve(s)
	}
}

// claim is a wake's: it reports true when the session was parked, and
// the caller must now serve it; a running one is told not to park at its
// next try.
func (s *Session) claim() bool {
	for {
		switch s.parkState.Load() {
		case parkRunning:
			if s.parkState.CompareAndSwap(parkRunning, parkWoken) {
				return false
			}
		case parkParked:
			if s.parkState.CompareAndSwap(parkParked, parkRunning) {
				s.poll.parked.Add(-1)
				parkedSessions.Add(-1)
				return true
			}
		default:
			return false
		}
	}
}

// serveQuiet serves a session claimed from parking on the calling
// goroutine (the poller's leader), if it has opened and was woken after a
// quiet spell, or while maxWaiting sessions wait in goroutines of their
// own (a burst: it then takes no goroutine of its own either): it reads
// what came, delivers it and parks again (readWoken, with edge as given),
// or ends, as receiveStream would. It reports false, having done nothing,
// for any other session, which the caller hands to a worker; a session
// that could not park again goes to one too.
func (srv *Server) serveQuiet(s *Session, edge bool) bool {
	if !s.has(flagStarted) || s.draining() || s.rxAge(now()) < s.ep.cfg.ParkAfter && srv.waiting.Load() < maxWaiting {
		return false
	}
	size := min(s.ep.cfg.ReadBufferSize, FirstReadSize)
	buf := s.getReadBuffer(size)
	ended := true
	defer func() {
		s.putReadBuffer(buf, size)
		if size > FirstReadSize {
			bigReadsBack.Add(1) // a large message's buffer back: memoryBurstEnded counts them
		}
		if v := recover(); v != nil {
			s.logPanic(v)
			s.closeWith(ReasonError, &PanicError{Value: v})
			ended = true
		}
		if ended {
			s.finish()
			srv.wg.Done()
		}
	}()
	switch s.readWoken(&buf, &size, edge) {
	case wokeParked:
		ended = false
	case wokeRunning:
		ended = false
		s.resumed = true
		srv.serve(s)
	}
	return true
}

// runSession serves a stream session on the calling goroutine until it
// ends or parks; the server's WaitGroup counts it until it ends.
func (srv *Server) runSession(s *Session) (parked bool) {
	if s.serveStream() {
		return true // its wake serves it again
	}
	srv.wg.Done()
	return false
}

// Workers. A session that starts, or wakes from parking, is served by a
// goroutine that served one before, when one is waiting for work: a new
// goroutine would start with a small stack and grow it (copying it) on
// the way to the handler, once per wake. The worker that waited last is
// given the next session (a stack, not a queue), so that a server whose
// wakes a few workers keep up with lets the others end: each waits at
// most workerIdle, and at most maxIdleWorkers wait. Each holds a stack of
// a few KiB, which a server holding many idle connections counts.
const (
	maxIdleWorkers = 256
	workerIdle     = 2 * time.Second
)

// maxWaiting is the most sessions that wait for their next bytes in a
// goroutine each (receiveStream's loop, which keeps a busy session off
// the poller). Past it a session woken from parking reads what has come
// and parks again at once, as a quiet one does: a burst on 20,000
// connections at once then runs on a few goroutines rather than one a
// connection, and the runtime keeps every goroutine a program ran at once
// (~0.5 KB each) for good.
const maxWaiting = 256

// worker is a goroutine of Server.work waiting for a session (Server.idle).
type worker struct {
	next chan *Session // the session to serve (buffered: the giver never waits)
}

// serve runs s on the worker that waited last, or on a new one.
func (srv *Server) serve(s *Session) {
	srv.idleMu.Lock()
	if n := len(srv.idle); n > 0 {
		w := srv.idle[n-1]
		srv.idle[n-1] = nil
		srv.idle = srv.idle[:n-1]
		srv.idleMu.Unlock()
		w.next <- s
		return
	}
	srv.idleMu.Unlock()
	srv.workers.Add(1)
	go srv.work(s)
}

// work serves s, then the sessions given to it while it waits, until it
// has waited workerIdle, too many wait, or the server stops. It waits only
// after a session parked: one whose session ended returns, as the
// session's own goroutine did before there were parked sessions to wake.
func (srv *Server) work(s *Session) {
	defer srv.workers.Done()
	var w *worker
	var idle *time.Timer
	for {
		if !srv.runSession(s) {
			return
		}
		if w == nil {
			w = &worker{next: make(chan *Session, 1)}
		}
		if !srv.waitIdle(w) {
			return
		}
		if idle == nil {
			idle = time.NewTimer(workerIdle)
		} else {
			idle.Reset(workerIdle)
		}
		select {
		case s = <-w.next:
			idle.Stop()
			continue
		case <-idle.C:
		case <-srv.stopped:
			idle.Stop()
		}
		if srv.leaveIdle(w) {
			return
		}
		s = <-w.next // given a session as it stopped waiting: serve it
	}
}

// waitIdle puts w on the idle stack, unless maxIdleWorkers wait already.
func (srv *Server) waitIdle(w *worker) bool {
	srv.idleMu.Lock()
	defer srv.idleMu.Unlock()
	if len(srv.idle) >= maxIdleWorkers {
		return false
	}
	srv.idle = append(srv.idle, w)
	return true
}

// leaveIdle takes w off the idle stack; false when it was no longer on it
// (serve took it: a session is on its way).
func (srv *Server) leaveIdle(w *worker) bool {
	srv.idleMu.Lock()
	defer srv.idleMu.Unlock()
	i := slices.Index(srv.idle, w)
	if i < 0 {
		return false
	}
	srv.idle = slices.Delete(srv.idle, i, i+1)
	return true
}

// acquirePoller returns the server's poller, made on first use, for a
// session that will park: the poller lasts while sessions that used it
// last (releasePoller), so that a server whose parked connections have all
// gone holds neither its goroutine nor its descriptor. It returns nil when
// the poller cannot be made or the server is closing.
func (srv *Server) acquirePoller() *poller {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.poll == nil && !srv.closing && srv.pollErr == nil {
		srv.poll, srv.pollErr = newPoller(srv)
		if srv.pollErr != nil {
			srv.ep.reportError(srv.pollErr)
		}
	}
	if srv.poll != nil {
		srv.pollUsers++
	}
	return srv.poll
}

// releasePoller is an ended session's release of the poller it acquired;
// the last one stops it.
func (srv *Server) releasePoller(p *poller) {
	srv.mu.Lock()
	srv.pollUsers--
	last := srv.pollUsers == 0
	if last {
		srv.poll = nil
	}
	srv.mu.Unlock()
	if last {
		p.stop()
	}
}

// parkedCount is the number of sessions parked now.
func (p *poller) parkedCount() int64 {
	if p == nil {
		return 0
	}
	return p.parked.Load()
}
