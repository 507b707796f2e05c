package transport

import (
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/internal/mono"
)

// Parking: a server's stream session that has had nothing to read for
// Config.ParkAfter gives its receive goroutine and read buffer up. The
// kernel's readiness (epoll, park_linux.go) or a wake (Close, a drain, a
// deadline due) starts a goroutine for it again, which reads on where the
// last one stopped. An idle connection then costs its structs alone.
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
	if !parkSupported || s.owner == nil || s.adopted || s.noPark || s.ep.cfg.ParkAfter <= 0 {
		return false
	}
	switch s.conn.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

// endOfWait returns when a read with nothing to read must end the session
// (ReasonIdle, or ReasonFirstByte before the first byte), or the zero time
// for never.
func (s *Session) endOfWait() time.Time {
	cfg := &s.ep.cfg
	if s.gotFirst {
		if cfg.IdleTimeout > 0 {
			return mono.Time(s.lastRx.Load()).Add(cfg.IdleTimeout + clockTick)
		}
		return time.Time{}
	}
	if fb := s.firstByteTimeout(); fb > 0 {
		return s.created.Add(fb)
	}
	return time.Time{}
}

// readDeadline returns the deadline of the next read, and whether it is
// the one to park at (Config.ParkAfter from now) rather than the end of
// the wait. fresh is for the first read of a session woken from parking:
// it gets a clock tick more, so that it reads the bytes that woke it even
// if its goroutine starts late (a read past its deadline reads nothing).
func (s *Session) readDeadline(fresh bool) (at time.Time, park bool) {
	end := s.endOfWait()
	if !s.parkable() {
		return end, false
	}
	wait := s.ep.cfg.ParkAfter
	if fresh {
		wait += clockTick
	}
	if p := time.Now().Add(wait); end.IsZero() || p.Before(end) {
		return p, true
	}
	return end, false
}

// firstByteTimeout is the time an accepted connection has to send its
// first byte (0: no limit): a client's and an adopted connection's have none.
func (s *Session) firstByteTimeout() time.Duration {
	if s.owner == nil || s.adopted {
		return 0
	}
	return s.ep.cfg.FirstByteTimeout
}

// park gives up the session's receive goroutine, which must then return
// without finishing the session. It reports false when the session cannot
// park now (a wake came meanwhile, or the poller failed): read on.
func (s *Session) park() bool {
	p := s.owner.poller()
	var wakeAt int64
	if end := s.endOfWait(); !end.IsZero() {
		wakeAt = mono.Of(end)
	}
	if p == nil || !p.arm(s, wakeAt) {
		s.noPark = true // no poller, or a connection it cannot watch: this session stays on its goroutine
		return false
	}
	if s.parkState.CompareAndSwap(parkRunning, parkParked) {
		p.parked.Add(1)
		return true
	}
	s.parkState.Store(parkRunning) // woken meanwhile: what woke it is read now
	return false
}

// wake makes sure a goroutine serves the session: it starts one for a
// parked session, and tells a running one not to park at its next try. For
// events a parked session must see: readiness, Close, a drain, a deadline.
func (s *Session) wake() {
	for {
		switch s.parkState.Load() {
		case parkRunning:
			if s.parkState.CompareAndSwap(parkRunning, parkWoken) {
				return
			}
		case parkParked:
			if s.parkState.CompareAndSwap(parkParked, parkRunning) {
				s.owner.poll.unparked()
				s.resumed = true
				go s.owner.runSession(s)
				return
			}
		default:
			return
		}
	}
}

// runSession serves a stream session on the calling goroutine until it
// ends or parks; the server's WaitGroup counts it until it ends.
func (srv *Server) runSession(s *Session) {
	if s.serveStream() {
		return // parked: its wake runs runSession again
	}
	srv.wg.Done()
}

// poller returns the server's poller, made on first use; nil when it
// cannot be made or the server is closing.
func (srv *Server) poller() *poller {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.poll == nil && !srv.closing && srv.pollErr == nil {
		srv.poll, srv.pollErr = newPoller(srv)
		if srv.pollErr != nil {
			srv.ep.reportError(srv.pollErr)
		}
	}
	return srv.poll
}

// unparked counts a session leaving the parked state, and the low-water
// mark of parked sessions that the memory watch compares with.
func (p *poller) unparked() {
	n := p.parked.Add(-1)
	for {
		low := p.lowParked.Load()
		if n >= low || p.lowParked.CompareAndSwap(low, n) {
			return
		}
	}
}

// parkedCount is the number of sessions parked now.
func (p *poller) parkedCount() int64 {
	if p == nil {
		return 0
	}
	return p.parked.Load()
}

// parkCounter is the poller's count of parked sessions.
type parkCounter = atomic.Int64

// Giving memory back. The goroutine stacks and buffers of sessions that
// parked go back to Go's heap, which keeps them (and the pools their
// buffers went to) until later collections, and returns the pages to the
// OS over minutes. A gateway's memory would then stay at its peak after a
// burst. So when the sessions running at once fall far (see
// [Config.KeepFreedMemory]), the poller has the runtime collect and return
// what is free.

// parkWave reports whether sessions parking, from low parked at once
// since the last return to now, is the end of a burst worth a
// collection: at least memoryWaveMin of them, and a quarter of those
// parked now. Heartbeats, which wake and park a steady trickle, never are.
func parkWave(low, now int64) bool {
	return now-low >= max(memoryWaveMin, now/4)
}

const (
	memoryWaveMin   = 1024            // sessions
	memoryReturnGap = 5 * time.Second // at most one return per process per gap
)

var lastReturn struct {
	sync.Mutex
	at time.Time
}

// returnFreedMemory collects twice (the buffer pools drop what they hold
// over two collections) and returns the free pages to the OS, unless that
// happened less than memoryReturnGap ago in this process.
func returnFreedMemory() {
	lastReturn.Lock()
	if !lastReturn.at.IsZero() && time.Since(lastReturn.at) < memoryReturnGap {
		lastReturn.Unlock()
		return
	}
	lastReturn.at = time.Now()
	lastReturn.Unlock()
	runtime.GC()
	debug.FreeOSMemory()
}

// returnWait is the poller's count of memory returns in progress.
type returnWait = sync.WaitGroup
