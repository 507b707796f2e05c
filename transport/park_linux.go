package transport

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lifenet/lifenet/internal/mono"
)

const parkSupported = true

// poller watches the connections of a server's parked sessions with one
// epoll instance (one-shot: an event disarms its connection until it
// parks again) and wakes each when it has bytes, or when its idle or
// first-byte deadline is due (a sweep each second). Its goroutine waits on
// the epoll instance through the runtime's own poller, as on a socket: no
// thread sits blocked in epoll_wait. Made with the first parked session,
// ended by Server.Close.
type poller struct {
	epfd   int      // the epoll instance, owned by file
	file   *os.File // epfd, for the runtime's poller
	raw    syscall.RawConn
	srv    *Server
	parked atomic.Int64

	returning sync.WaitGroup // memory returns in progress

	mu    sync.Mutex
	slots []pollSlot // by index, the epoll event's Fd field
	free  []int32
	done  chan struct{}
}

// pollSlot is one session's place in the poller.
type pollSlot struct {
	s      *Session
	wakeAt int64  // mono reading at which a parked session must run to end its wait (0: never)
	gen    uint32 // bumped when the slot is freed: events of its last session are stale
}

// sweepEvery is how often the poller wakes parked sessions whose wait has
// ended: the idle and first-byte timeouts of a parked session are kept to
// within it.
const sweepEvery = time.Second

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
	p := &poller{epfd: epfd, file: f, raw: raw, srv: srv, done: make(chan struct{})}
	go p.run()
	return p, nil
}

// arm registers the session's connection for one readiness event, with
// the deadline at which the sweep wakes it (mono reading; 0: none). It
// reports false when the connection cannot be watched (it is closed).
func (p *poller) arm(s *Session, wakeAt int64) bool {
	sc, ok := s.conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	p.mu.Lock()
	if s.pollSlot == 0 {
		p.take(s)
	}
	i := s.pollSlot - 1
	p.slots[i].wakeAt = wakeAt
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: i, Pad: int32(p.slots[i].gen)}
	p.mu.Unlock()
	op := unix.EPOLL_CTL_MOD
	if !s.polled {
		op = unix.EPOLL_CTL_ADD
	}
	var ctlErr error
	if err := rc.Control(func(fd uintptr) { ctlErr = unix.EpollCtl(p.epfd, op, int(fd), &ev) }); err != nil {
		return false
	}
	if ctlErr != nil {
		return false
	}
	s.polled = true
	return true
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
		if sc, ok := s.conn.(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				rc.Control(func(fd uintptr) { unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, int(fd), nil) })
			}
		}
		s.polled = false
	}
	p.mu.Lock()
	i := s.pollSlot - 1
	p.slots[i] = pollSlot{gen: p.slots[i].gen + 1}
	p.free = append(p.free, i)
	p.mu.Unlock()
	s.pollSlot = 0
}

// run waits for events and sweeps deadlines until stop.
func (p *poller) run() {
	defer close(p.done)
	events := make([]unix.EpollEvent, 256)
	var due []*Session
	nextSweep := time.Now().Add(sweepEvery)
	p.file.SetReadDeadline(nextSweep)
	for {
		n, err := p.wait(events)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return // closed (stop), or the epoll instance failed: nothing can wake a parked session but its deadline
		}
		due = due[:0]
		p.mu.Lock()
		for _, ev := range events[:n] {
			if sl := &p.slots[ev.Fd]; sl.s != nil && sl.gen == uint32(ev.Pad) {
				due = append(due, sl.s)
			}
		}
		if t := time.Now(); !t.Before(nextSweep) {
			nextSweep = t.Add(sweepEvery)
			p.file.SetReadDeadline(nextSweep)
			now := mono.Of(t)
			for i := range p.slots {
				if sl := &p.slots[i]; sl.s != nil && sl.wakeAt != 0 && sl.wakeAt <= now && sl.s.parkState.Load() == parkParked {
					due = append(due, sl.s)
				}
			}
		}
		p.mu.Unlock()
		if !p.srv.ep.cfg.KeepFreedMemory && memoryBurstEnded() { // it looks at most twice a second
			p.returning.Go(returnFreedMemory)
		}
		for i, s := range due {
			s.wake()
			due[i] = nil
		}
	}
}

// wait returns the ready events, waiting in the runtime's poller while
// there are none, until the sweep's deadline.
func (p *poller) wait(events []unix.EpollEvent) (n int, err error) {
	var werr error
	err = p.raw.Read(func(fd uintptr) bool {
		n, werr = unix.EpollWait(int(fd), events, 0)
		return n > 0 || (werr != nil && werr != unix.EINTR)
	})
	if err == nil {
		err = werr
	}
	return max(n, 0), err
}

// stop ends the poller once no session is parked (after the server's
// sessions have ended) and closes the epoll instance.
func (p *poller) stop() {
	p.file.Close()
	<-p.done
	p.returning.Wait()
}

// readNow reads what the connection holds without waiting for more: n > 0
// bytes, or wouldBlock (nothing there), or an error (io.EOF when the peer
// has closed).
func readNow(rc syscall.RawConn, b []byte) (n int, wouldBlock bool, err error) {
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, rerr = unix.Read(int(fd), b)
			if rerr != unix.EINTR {
				return true // never wait in the runtime's poller
			}
		}
	})
	switch {
	case err != nil:
		return 0, false, err
	case rerr == unix.EAGAIN:
		return 0, true, nil
	case rerr != nil:
		return 0, false, os.NewSyscallError("read", rerr)
	case n == 0:
		return 0, false, io.EOF
	}
	return n, false, nil
}
