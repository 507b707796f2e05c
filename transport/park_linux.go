package transport

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lifenet/lifenet/internal/mono"
)

const parkSupported = true

// poller watches the connections of a server's parked sessions with one
// epoll instance (edge-triggered: see arm) and wakes each when it has
// bytes, or when its idle or first-byte deadline is due (a sweep each
// second). Its goroutine, the leader, waits on the epoll instance through
// the runtime's own poller, as on a socket: no thread sits blocked in
// epoll_wait. The leader serves the sessions a wait woke itself, one after
// the other (lead): a heartbeat costs one wake of one goroutine by the
// runtime, as a goroutine per connection's would, with no hand-over to
// another goroutine and no thread woken for it. A watchdog hands the lead
// to another goroutine when one serve takes long (takeLead): a handler
// that blocks holds up no other parked session for long. Made with the
// first parked session, ended by stop (the last session that used it, or
// Server.Close).
type poller struct {
	epfd   int      // the epoll instance, owned by file
	file   *os.File // epfd, for the runtime's poller
	raw    syscall.RawConn
	srv    *Server
	parked atomic.Int64

	// The leader's: they pass to the goroutine that takes the lead over
	// (takeLead), never used by two at once.
	events    []unix.EpollEvent
	due       []woken // sessions woken, served from next on
	next      int
	nextSweep int64                 // mono reading of the next sweep (and the file's read deadline)
	waitFn    func(fd uintptr) bool // waitNow, made once
	waitN     int
	waitErr   syscall.Errno

	// serving is the number of the leader's serve in progress (0: none).
	// The watchdog (takeLead, every leadFor while serves go on) takes
	// the lead over from a serve it finds in progress twice; the leader,
	// done, takes serving back to 0 (the one that does leads on).
	serving  atomic.Uint64
	serves   atomic.Uint64
	watching atomic.Bool   // watch is set
	seen     atomic.Uint64 // the serve in progress at the watchdog's last run
	seenAll  atomic.Uint64 // serves then
	watch    *time.Timer

	mu    sync.Mutex
	slots []pollSlot // by index, the epoll event's Fd field
	free  []int32
}

// pollSlot is one session's place in the poller.
type pollSlot struct {
	s      *Session
	wakeAt uint32 // when a parked session must run to end its wait, in wakeUnits of the mono clock, rounded up (0: never)
	gen    uint32 // bumped when the slot is freed: events of its last session are stale
}

// wakeUnitShift makes the unit of a poll slot's wakeAt, 2²⁶ ns (67 ms):
// far finer than the sweep's second, and a 32-bit count of them spans 9
// years of a process's life, so that a slot is 16 bytes.
const wakeUnitShift = 26

// wakeUnits is the mono reading at (0: never) in wakeUnits, rounded up so
// that no sweep finds it due early; one past 9 years of the process's life
// is taken as never.
func wakeUnits(at int64) uint32 {
	if at <= 0 || at > (math.MaxUint32-1)<<wakeUnitShift {
		return 0
	}
	return uint32((at + 1<<wakeUnitShift - 1) >> wakeUnitShift)
}

// sweepEvery is how often the poller wakes parked sessions whose wait has
// ended: the idle and first-byte timeouts of a parked session are kept to
// within it.
const sweepEvery = time.Second

// leadFor is how often the watchdog looks at the leader while it serves
// sessions: a handler that blocks (or a session that ends and runs
// OnClose) keeps the other parked sessions waiting 1 to 2 leadFor at
// most, and a server whose parked sessions wake now and then pays a
// timer's run per leadFor (none once they are quiet), not one per wake.
const leadFor = 50 * time.Millisecond

func newPoller(srv *Server) (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("transport: epoll: %w", err)
	}
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("transport: epoll: %w", err)
	}
	f := os.NewFile(uintptr(epfd), "transport-poller") // non-blocking: the runtime polls it
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("transport: epoll: %w", err)
	}
	p := &poller{epfd: epfd, file: f, raw: raw, srv: srv, events: make([]unix.EpollEvent, 256)}
	p.waitFn = p.waitNow
	p.watch = time.AfterFunc(time.Hour, p.takeLead)
	p.watch.Stop()
	srv.workers.Add(1)
	p.nextSweep = mono.Now() + int64(sweepEvery)
	p.file.SetReadDeadline(mono.Time(p.nextSweep))
	go p.lead()
	return p, nil
}

// arm puts the session's connection on the watch list, edge-triggered,
// with the deadline at which the sweep wakes it (mono reading; 0: none).
// A connection stays on the list while its session parks and wakes
// (readAvailable), so a heartbeat's park costs no system call: an edge
// comes with each arrival of bytes (or the peer's close), and one that
// comes while a goroutine serves the session finds it running and calls
// its next park off (parkWoken), so none is lost. The waiting loop takes
// it off (disarm), so that a busy connection's bytes do not wake the
// poller. arm reports false when the connection cannot be watched (it is
// closed). Only the goroutine serving s calls arm, disarm and release.
func (p *poller) arm(s *Session, wakeAt int64) bool {
	p.mu.Lock()
	if s.pollSlot == 0 {
		p.take(s)
	}
	i := s.pollSlot - 1
	p.slots[i].wakeAt = wakeUnits(wakeAt)
	gen := p.slots[i].gen
	p.mu.Unlock()
	if s.polled {
		return true
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: i, Pad: int32(gen)} // (it escapes: made only when added)
	if p.ctl(s, unix.EPOLL_CTL_ADD, &ev) != nil {
		return false
	}
	s.polled = true
	return true
}

// disarm takes a session that has started to wait for bytes on its own
// goroutine (a busy connection) off the watch list, and clears a wake the
// list gave it meanwhile: the loop reads the bytes that made it. Close and
// a drain, the other wakes of a running session, end its read themselves.
func (p *poller) disarm(s *Session) {
	if !s.polled {
		return
	}
	p.ctl(s, unix.EPOLL_CTL_DEL, nil)
	s.polled = false
	s.parkState.CompareAndSwap(parkWoken, parkRunning)
}

// ctl is epoll_ctl(op) on the session's connection.
func (p *poller) ctl(s *Session, op int, ev *unix.EpollEvent) error {
	var (
		errno syscall.Errno
		err   error
	)
	if c, ok := s.conn.(*fdConn); ok { // called directly, its closure is not made on the heap: a park allocates nothing
		err = c.control(func(fd uintptr) { errno = p.epollCtl(op, fd, ev) })
	} else {
		errno, err = p.ctlRaw(s.conn, op, ev)
	}
	if err != nil {
		return err
	}
	if errno != 0 {
		return os.NewSyscallError("epoll_ctl", errno)
	}
	return nil
}

// ctlRaw is ctl for a net.Conn of the net package, through its RawConn.
func (p *poller) ctlRaw(c net.Conn, op int, ev *unix.EpollEvent) (syscall.Errno, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) { errno = p.epollCtl(op, fd, ev) })
	return errno, err
}

// epollCtl is the epoll_ctl system call on the poller's epoll instance.
func (p *poller) epollCtl(op int, fd uintptr, ev *unix.EpollEvent) syscall.Errno {
	_, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(p.epfd), uintptr(op), fd, uintptr(unsafe.Pointer(ev)), 0, 0)
	return errno
}

// take gives s a slot. Called with p.mu held.
func (p *poller) take(s *Session) {
	var i int32
	if n := len(p.free); n > 0 {
		i, p.free = p.free[n-1], p.free[:n-1]
	} else {
		p.slots = append(p.slots, pollSlot{})
		i = int32(len(p.slots) - 1)
	}
	p.slots[i].s = s
	s.pollSlot = i + 1
}

// release frees an ended session's slot and takes its connection off the
// watch list (a connection handed off stays open).
func (p *poller) release(s *Session) {
	if s.polled {
		p.ctl(s, unix.EPOLL_CTL_DEL, nil)
		s.polled = false
	}
	p.mu.Lock()
	i := s.pollSlot - 1
	p.slots[i] = pollSlot{gen: p.slots[i].gen + 1}
	p.free = append(p.free, i)
	p.mu.Unlock()
	s.pollSlot = 0
}

// lead waits for events and sweeps deadlines, and serves the sessions
// they wake itself, one after the other (up to inlineBatch of a wait's;
// the others go to workers), until stop, or until the watchdog took the
// lead over while it served one (takeLead), which then serves the rest.
func (p *poller) lead() {
	defer p.srv.workers.Done()
	for {
		for p.next < len(p.due) {
			w := p.due[p.next]
			p.due[p.next] = woken{}
			p.next++
			if w.s.claim() && !p.serve(w.s, w.edge) {
				return // another goroutine leads now
			}
		}
		n, err := p.wait()
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return // closed (stop), or the epoll instance failed: nothing can wake a parked session but its deadline
		}
		due := p.due[:0]
		p.mu.Lock()
		for _, ev := range p.events[:n] {
			if sl := &p.slots[ev.Fd]; sl.s != nil && sl.gen == uint32(ev.Pad) {
				due = append(due, woken{sl.s, ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) == 0})
			}
		}
		// The sweep, on the coarse clock (deadlines are kept to within a
		// second): when the file's deadline passed, whatever the coarse
		// clock says, as it may lag the deadline by a tick.
		if t := now(); err != nil || t >= p.nextSweep {
			p.nextSweep = t + int64(sweepEvery)
			p.file.SetReadDeadline(mono.Time(p.nextSweep))
			for i := range p.slots {
				if sl := &p.slots[i]; sl.s != nil && sl.wakeAt != 0 && int64(sl.wakeAt)<<wakeUnitShift <= t && sl.s.parkState.Load() == parkParked {
					due = append(due, woken{s: sl.s})
				}
			}
		}
		p.mu.Unlock()
		if !p.srv.ep.cfg.KeepFreedMemory && memoryBurstEnded() { // it looks at most twice a second
			p.srv.workers.Go(returnFreedMemory)
		}
		if len(due) > inlineBatch { // many at once: workers share them
			for i, w := range due[inlineBatch:] {
				w.s.wake()
				due[inlineBatch+i] = woken{}
			}
			due = due[:inlineBatch]
		}
		if cap(due) > 4*inlineBatch { // a sweep's: not kept
			due = append([]woken(nil), due...)
		}
		p.due, p.next = due, 0
	}
}

// inlineBatch is the most sessions of one wait the leader serves itself.
const inlineBatch = 64

// woken is a session a wait woke: by an edge of its connection's
// readiness that said nothing of the peer's close (edge; see
// Session.readWoken), or else (its deadline, or the peer's close).
type woken struct {
	s    *Session
	edge bool
}

// serve runs s, claimed from parking, on the leader: a session woken
// after a quiet spell reads what came and parks again (Server.serveQuiet);
// any other goes to a worker. It reports false when the watchdog took the
// lead over meanwhile: the caller then no longer leads.
func (p *poller) serve(s *Session, edge bool) bool {
	n := p.serves.Add(1)
	p.serving.Store(n)
	if !p.watching.Load() && p.watching.CompareAndSwap(false, true) {
		p.watch.Reset(leadFor)
	}
	if !p.srv.serveQuiet(s, edge) {
		s.resumed = true
		p.srv.serve(s)
	}
	return p.serving.CompareAndSwap(n, 0)
}

// takeLead is the watchdog, run by watch on a goroutine of its own every
// leadFor while the leader serves sessions. A serve it finds in progress
// at two runs in a row has taken too long: this goroutine takes the lead
// over, and the leader leads no more once done (serve). Once no serve has
// run since its last run, it stops until the next (serve sets it again).
func (p *poller) takeLead() {
	n, all := p.serving.Load(), p.serves.Load()
	if n != 0 && n == p.seen.Load() && p.serving.CompareAndSwap(n, 0) {
		p.seen.Store(0)
		p.seenAll.Store(all)
		p.watch.Reset(leadFor)
		p.srv.workers.Add(1) // (the leader it takes over from is still counted)
		p.lead()
		return
	}
	p.seen.Store(n)
	if n != 0 || all != p.seenAll.Swap(all) {
		p.watch.Reset(leadFor)
		return
	}
	p.watching.Store(false)
	if p.serving.Load() != 0 && p.watching.CompareAndSwap(false, true) { // a serve that began meanwhile found it set
		p.watch.Reset(leadFor)
	}
}

// wait returns the ready events, waiting in the runtime's poller while
// there are none, until the sweep's deadline. Only the leader calls it.
func (p *poller) wait() (n int, err error) {
	err = p.raw.Read(p.waitFn)
	if err == nil && p.waitErr != 0 {
		err = os.NewSyscallError("epoll_wait", p.waitErr)
	}
	return p.waitN, err
}

// waitNow is wait's callback: epoll_wait without waiting, as a raw system
// call (one that never blocks needs none of the scheduler's bookkeeping,
// which would wake the runtime's monitor thread). It reports whether the
// wait is over: events came, or the instance failed.
func (p *poller) waitNow(fd uintptr) bool {
	for {
		r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, fd, uintptr(unsafe.Pointer(&p.events[0])), uintptr(len(p.events)), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		p.waitN, p.waitErr = int(r), e
		if e != 0 {
			p.waitN = 0
		}
		return p.waitN > 0 || e != 0
	}
}

// stop ends the poller once no session is parked (after the server's
// sessions have ended): it closes the epoll instance, on which the leader
// returns (the server's workers count it). It does not wait: the last
// session to end may run it on the leader.
func (p *poller) stop() {
	p.watch.Stop()
	p.file.Close()
}

// readNow reads what the connection holds without waiting for more: n > 0
// bytes, or wouldBlock (nothing there), or an error (io.EOF when the peer
// has closed). It is recv with MSG_DONTWAIT on the descriptor
// RawConn.Control lends (a reference that keeps a concurrent Close from
// freeing the number): no read lock, no deadline and no poller state,
// which a read that never waits needs none of; the session's goroutine
// is its only reader. Its callback is a pooled nowRead's, made once.
func readNow(rc syscall.RawConn, b []byte) (n int, wouldBlock bool, err error) {
	r := nowReads.Get().(*nowRead)
	r.buf = b
	err = rc.Control(r.fn)
	n, errno := r.n, r.errno
	r.buf = nil
	nowReads.Put(r)
	switch {
	case err != nil:
		return 0, false, err
	case errno == unix.EAGAIN:
		return 0, true, nil
	case errno != 0:
		return 0, false, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, false, io.EOF
	}
	return n, false, nil
}

// nowRead is readNow's callback and its results.
type nowRead struct {
	fn    func(fd uintptr)
	buf   []byte
	n     int
	errno syscall.Errno
}

var nowReads = sync.Pool{New: func() any {
	r := new(nowRead)
	r.fn = func(fd uintptr) {
		for {
			if r.n, r.errno = recvNow(int(fd), r.buf); r.errno != unix.EINTR {
				return
			}
		}
	}
	return r
}}

// parkableConn reports whether a session on c may park: a TCP or Unix
// connection the poller can watch.
func parkableConn(c net.Conn) bool {
	switch c.(type) {
	case *fdConn, *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

// detachConn holds the session's connection, about to park, as its
// descriptor alone (fdConn.detach), unless a write is in progress (it
// waits on the connection) or queued: the next park tries again. The
// descriptor's number changes, so a connection on the watch list comes
// off it first (arm puts it back). Only the goroutine serving s calls it.
func (s *Session) detachConn(p *poller) {
	c, ok := s.conn.(*fdConn)
	if !ok || !c.attached() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writing || s.pendingLocked() {
		return
	}
	if s.polled {
		p.ctl(s, unix.EPOLL_CTL_DEL, nil)
		s.polled = false
	}
	c.detach()
}
