package fleet

import (
	"errors"
	"io"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// On Linux a fleet is a few event loops, each an epoll instance and the
// connections it opened in a slice: no goroutine per connection.

const (
	readBuffer = 64 << 10 // each loop's one read buffer
	maxLoops   = 4
	waitMillis = 10 // epoll_wait's timeout: the heartbeat schedule's resolution
)

type loop struct {
	f      *fleet
	ep     int
	conns  []conn
	hs     []int32 // connections connecting or awaiting their first reply
	buf    []byte
	hello  []byte // this loop's copies: byte 1, the sequence number, is patched per send
	burst  []byte
	events []unix.EpollEvent
	remote unix.Sockaddr
	family int

	cycle int64 // heartbeats: the period and the position in conns reached
	pos   int

	burstPos  int   // the next connection to send its burst
	burstMine int64 // bursts of this loop in flight
	burstDone bool
}

// startLoops starts the event loops; stop ends them and closes every
// connection, and returns once they have.
func startLoops(f *fleet) (stop func(), loops int, err error) {
	n := min(max(runtime.GOMAXPROCS(0), 1), maxLoops, f.cfg.Conns)
	var ls []*loop
	for range n {
		l, err := newLoop(f)
		if err != nil {
			for _, l := range ls {
				unix.Close(l.ep)
			}
			return nil, 0, err
		}
		l.conns = make([]conn, 0, f.cfg.Conns/n+1)
		ls = append(ls, l)
	}
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Go(l.run)
	}
	var once sync.Once
	return func() { once.Do(func() { f.stop.Store(true); wg.Wait() }) }, n, nil
}

func newLoop(f *fleet) (*loop, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	l := &loop{f: f, ep: ep, buf: make([]byte, readBuffer), events: make([]unix.EpollEvent, 256),
		hello: append([]byte(nil), f.hello...), burst: append([]byte(nil), f.burst...), cycle: -1}
	a := f.remote.Addr()
	if a.Is4() {
		l.remote, l.family = &unix.SockaddrInet4{Addr: a.As4(), Port: int(f.remote.Port())}, unix.AF_INET
	} else {
		l.remote, l.family = &unix.SockaddrInet6{Addr: a.As16(), Port: int(f.remote.Port())}, unix.AF_INET6
	}
	return l, nil
}

func (l *loop) run() {
	defer l.closeAll()
	for !l.f.stop.Load() {
		l.open()
		n, err := unix.EpollWait(l.ep, l.events, waitMillis)
		if err != nil && !errors.Is(err, unix.EINTR) {
			err = errors.New("fleet: epoll_wait: " + err.Error())
			l.f.fatal.CompareAndSwap(nil, &err)
			return
		}
		now := l.f.now()
		for _, ev := range l.events[:max(n, 0)] {
			l.event(int(ev.Fd), ev.Events, now)
		}
		l.sweep(now)
		l.heartbeats(now)
		l.bursts(now)
	}
}

func (l *loop) closeAll() {
	for i := range l.conns {
		if l.conns[i].state != stClosed {
			unix.Close(int(l.conns[i].fd))
			l.conns[i].state = stClosed
		}
	}
	unix.Close(l.ep)
}

// open opens connections while the ramp allows and fewer than InFlight
// are connecting, at most 64 per wake-up so that loops share the work.
func (l *loop) open() {
	f := l.f
	for range 64 {
		if f.inflight.Load() >= int64(f.cfg.InFlight) {
			return
		}
		i := f.next.Load()
		if i >= f.allowed.Load() {
			return
		}
		if !f.next.CompareAndSwap(i, i+1) {
			continue
		}
		f.inflight.Add(1)
		l.dial(int(i))
	}
}

// source returns source address i of Config.Sources, and its name
// ("local" when there are none: the kernel picks).
func (l *loop) source(i int) (unix.Sockaddr, string) {
	src := l.f.cfg.Sources
	if len(src) == 0 {
		return nil, "local"
	}
	a := src[i]
	if a.Is4() {
		return &unix.SockaddrInet4{Addr: a.As4()}, a.String()
	}
	return &unix.SockaddrInet6{Addr: a.As16()}, a.String()
}

// dial starts connection i's non-blocking connect.
func (l *loop) dial(i int) {
	now := l.f.now()
	var src int
	if n := len(l.f.cfg.Sources); n > 0 {
		src = i % n
	}
	l.conns = append(l.conns, conn{fd: -1, state: stConnecting, sentAt: now, src: uint16(src)})
	idx := len(l.conns) - 1
	c := &l.conns[idx]
	sa, name := l.source(src)
	fd, err := unix.Socket(l.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		l.f.closed(c, name, err, false, now)
		return
	}
	c.fd = int32(fd)
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if sa != nil {
		// The port is picked at connect, for the 4-tuple, not at bind.
		unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
		if err := unix.Bind(fd, sa); err != nil {
			l.fail(idx, err, now)
			return
		}
	}
	if err := unix.Connect(fd, l.remote); err != nil && !errors.Is(err, unix.EINPROGRESS) {
		l.fail(idx, err, now)
		return
	}
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT, Fd: int32(idx)}); err != nil {
		l.fail(idx, err, now)
		return
	}
	c.flags |= fOut
	l.hs = append(l.hs, int32(idx))
}

// fail closes connection idx, ended by err.
func (l *loop) fail(idx int, err error, now int64) {
	c := &l.conns[idx]
	if c.state == stClosed {
		return
	}
	if c.fd >= 0 {
		unix.Close(int(c.fd))
	}
	refused := errors.Is(err, unix.ECONNREFUSED) ||
		(c.state == stHello && (err == io.EOF || errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE)))
	if err == io.EOF {
		err = errClosedByServer
	}
	if c.state == stHeld && c.msg == msgBurst && c.flags&fPending != 0 {
		l.burstMine--
	}
	_, name := l.source(int(c.src))
	l.f.closed(c, name, err, refused, now)
}

var errClosedByServer = errors.New("closed by the server")

func (l *loop) event(idx int, ev uint32, now int64) {
	if idx < 0 || idx >= len(l.conns) {
		return
	}
	c := &l.conns[idx]
	switch c.state {
	case stClosed:
		return
	case stConnecting:
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return
		}
		errno, err := unix.GetsockoptInt(int(c.fd), unix.SOL_SOCKET, unix.SO_ERROR)
		if err == nil && errno != 0 {
			err = syscall.Errno(errno)
		}
		if err != nil {
			l.fail(idx, err, now)
			return
		}
		c.state = stHello
		l.send(idx, msgHello, now)
		return
	}
	if ev&unix.EPOLLOUT != 0 && c.flags&fWriting != 0 {
		l.flush(idx, now)
		if c.state == stClosed {
			return
		}
	}
	if ev&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		l.read(idx, now)
	}
}

func (l *loop) bytes(c *conn) []byte {
	p := l.hello
	if c.msg == msgBurst {
		p = l.burst
	}
	if l.f.cfg.Proto == ProtoSRMP {
		p[1] = c.seq
	}
	return p
}

// send starts message msg on connection idx.
func (l *loop) send(idx int, msg uint8, now int64) {
	c := &l.conns[idx]
	c.msg, c.wOff, c.sentAt = msg, 0, now
	c.seq++
	c.flags |= fPending | fWriting
	if l.f.cfg.Proto == ProtoEcho {
		c.remain = uint32(len(l.bytes(c)))
	}
	l.flush(idx, now)
}

// flush writes what is left of connection idx's message and registers
// for EPOLLOUT while some is.
func (l *loop) flush(idx int, now int64) {
	c := &l.conns[idx]
	p := l.bytes(c)
	n, err := unix.Write(int(c.fd), p[c.wOff:])
	if err != nil && !errors.Is(err, unix.EAGAIN) {
		l.fail(idx, err, now)
		return
	}
	c.wOff += uint32(max(n, 0))
	want := uint32(unix.EPOLLIN)
	if int(c.wOff) == len(p) {
		c.flags &^= fWriting
	} else {
		want |= unix.EPOLLOUT
	}
	if (want&unix.EPOLLOUT != 0) != (c.flags&fOut != 0) {
		l.interest(idx, want, now)
	}
}

// interest sets connection idx's epoll events.
func (l *loop) interest(idx int, events uint32, now int64) {
	c := &l.conns[idx]
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, int(c.fd), &unix.EpollEvent{Events: events, Fd: int32(idx)}); err != nil {
		l.fail(idx, err, now)
		return
	}
	if events&unix.EPOLLOUT != 0 {
		c.flags |= fOut
	} else {
		c.flags &^= fOut
	}
}

func (l *loop) read(idx int, now int64) {
	c := &l.conns[idx]
	n, err := unix.Read(int(c.fd), l.buf)
	switch {
	case errors.Is(err, unix.EAGAIN):
		return
	case err != nil:
		l.fail(idx, err, now)
		return
	case n == 0:
		l.fail(idx, io.EOF, now)
		return
	}
	p := l.buf[:n]
	if l.f.cfg.Proto == ProtoEcho {
		complete, extra := c.feedEcho(p)
		if extra > 0 {
			l.f.unexpected.Add(1)
		}
		if complete {
			l.answered(idx, false, nil, now)
		}
		return
	}
	var why string
	err = c.feedSRMP(p, func(kind, seq byte, payload []byte) {
		if c.state == stClosed || why != "" {
			return
		}
		k := kind & kindMask
		if c.flags&fPending == 0 || seq != c.seq || (k != kindReply && k != kindError) {
			l.f.unexpected.Add(1)
			return
		}
		why = l.answered(idx, k == kindError, payload, now)
	})
	if err != nil {
		l.fail(idx, err, now)
	}
}

// answered handles the whole reply to connection idx's pending message;
// a failed first call closes it (and returns why).
func (l *loop) answered(idx int, isErr bool, payload []byte, now int64) string {
	c := &l.conns[idx]
	msg := c.msg
	ok, why := l.f.reply(c, isErr, func() string { return errorText(payload) }, now)
	if !ok {
		l.fail(idx, errors.New(why), now)
		return why
	}
	if msg == msgBurst {
		l.burstMine--
	}
	return ""
}

// sweep ends the connects and first calls past Config.Timeout and drops
// the ended ones from hs.
func (l *loop) sweep(now int64) {
	limit := int64(l.f.cfg.Timeout)
	keep := l.hs[:0]
	for _, idx := range l.hs {
		c := &l.conns[idx]
		if c.state == stConnecting || c.state == stHello {
			if now-c.sentAt > limit {
				l.fail(int(idx), errNoReply(l.f.cfg.Timeout), now)
				continue
			}
			keep = append(keep, idx)
		}
	}
	l.hs = keep
}

// heartbeats sends the heartbeats due: in each period the loop walks its
// connections once, evenly, so that their heartbeats spread over it. A
// connection still waiting for its last reply skips one, or is closed
// when that reply is past Config.Timeout.
func (l *loop) heartbeats(now int64) {
	n := len(l.conns)
	period := int64(l.f.cfg.Heartbeat)
	if n == 0 {
		return
	}
	cyc := now / period
	pos := int(float64(now%period) / float64(period) * float64(n))
	if l.cycle < 0 { // the first wake-up: start here
		l.cycle, l.pos = cyc, pos
		return
	}
	if cyc == l.cycle {
		l.beat(l.pos, pos, now)
	} else {
		l.beat(l.pos, n, now)
		l.beat(0, pos, now)
	}
	l.cycle, l.pos = cyc, pos
}

func (l *loop) beat(from, to int, now int64) {
	for i := from; i < to; i++ {
		c := &l.conns[i]
		if c.state != stHeld {
			continue
		}
		if c.flags&fPending != 0 {
			if now-c.sentAt > int64(l.f.cfg.Timeout) {
				l.fail(i, errNoReply(l.f.cfg.Timeout), now)
			} else {
				l.f.skipped.Add(1)
			}
			continue
		}
		l.send(i, msgBeat, now)
	}
}

// bursts sends each held connection's burst once the burst has begun,
// with at most Config.InFlight in flight over all loops.
func (l *loop) bursts(now int64) {
	f := l.f
	if l.burstDone || !f.burstOn.Load() {
		return
	}
	for l.burstPos < len(l.conns) {
		c := &l.conns[l.burstPos]
		if c.state != stHeld {
			l.burstPos++
			continue
		}
		if c.flags&fPending != 0 || f.burstInflight.Load() >= int64(f.cfg.InFlight) {
			return
		}
		f.burstInflight.Add(1)
		l.burstMine++
		l.send(l.burstPos, msgBurst, now) // a failure counts burstMine down
		l.burstPos++
	}
	if l.burstMine <= 0 {
		l.burstDone = true
		f.loopsBurstEnd.Add(1)
	}
}
