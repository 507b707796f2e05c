package transport

import (
	"cmp"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lifenet/lifenet/internal/mono"
)

// fdConn is a server's accepted TCP or Unix connection held as its file
// descriptor, so that an idle one costs the descriptor and this struct
// alone: no net.netFD, no addresses and no runtime poll descriptor
// (~1.2 KB of each idle connection, docs/perf/connections.md).
//
// It is detached while nothing waits on it: reads that do not wait
// (RawConn.Control, readNow) and writes that the socket takes at once are
// system calls on the descriptor. Anything that must wait (Read, a write
// the socket has no room for, RawConn.Read or Write) first attaches it:
// the descriptor goes to the runtime's poller inside an *os.File, whose
// deadlines and Close work as a net.Conn's. detach, run by the session's
// receive side when it parks, gives the *os.File up again: it duplicates
// the descriptor and closes the file (which takes the poller's place
// back), so the number changes then, and only then.
//
// All methods are safe for concurrent use. c.mu guards fd and file, and is
// held across the system calls on a detached descriptor (none waits), so
// that Close never frees a number one of them is using. detach must not
// run while a read or write is in progress on the *os.File: the session
// calls it from its receive side with its write turn free (park).
type fdConn struct {
	mu       sync.Mutex
	fd       int32    // the descriptor; -1 once closed
	peerPort uint16   // the peer's port
	peer4    bool     // the peer's address is IPv4, in peerIP's first 4 bytes
	unixSock bool     // a Unix socket (no peer address)
	file     *os.File // attached: fd in the runtime's poller; nil while detached
	peerIP   [16]byte // the peer's address: a netip.AddrPort would take 32 bytes of a 48-byte object
	rdl, wdl uint32   // read and write deadlines as stamps (deadlineStamp; 0: none), kept for the next attach
}

// setPeer keeps the peer's address from rsa, as accept4 filled it (an
// IPv4 or IPv6 socket address; any other leaves it zero).
func (c *fdConn) setPeer(rsa *unix.RawSockaddrAny) {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		a := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		c.peerIP, c.peerPort, c.peer4 = netip.AddrFrom4(a.Addr).As16(), netPort(&a.Port), true
	case unix.AF_INET6:
		a := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		c.peerIP, c.peerPort = a.Addr, netPort(&a.Port)
	}
}

// peer returns the peer's address; none for a Unix socket.
func (c *fdConn) peer() netip.AddrPort {
	if c.unixSock {
		return netip.AddrPort{}
	}
	ip := netip.AddrFrom16(c.peerIP)
	if c.peer4 {
		ip = ip.Unmap()
	}
	return netip.AddrPortFrom(ip, c.peerPort)
}

func (c *fdConn) network() string {
	if c.unixSock {
		return "unix"
	}
	return "tcp"
}

// opError dresses err as the net package dresses its errors: a *net.OpError
// holding a *os.SyscallError (or net.ErrClosed, os.ErrDeadlineExceeded),
// so that callers match an fdConn's errors as a net.Conn's.
func (c *fdConn) opError(op string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) {
		err = net.ErrClosed
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		err = os.ErrDeadlineExceeded
	} else if errno, ok := errors.AsType[syscall.Errno](err); ok {
		err = os.NewSyscallError(op, errno)
	}
	return &net.OpError{Op: op, Net: c.network(), Addr: c.RemoteAddr(), Err: err}
}

// attachLocked puts the descriptor in the runtime's poller (an *os.File),
// with the deadlines set meanwhile, unless it is there. Called with c.mu
// held.
func (c *fdConn) attachLocked() (*os.File, error) {
	if c.fd < 0 {
		return nil, net.ErrClosed
	}
	if c.file != nil {
		return c.file, nil
	}
	f := os.NewFile(uintptr(c.fd), "") // non-blocking: the runtime polls it
	if c.rdl != 0 {
		f.SetReadDeadline(deadlineOf(c.rdl))
	}
	if c.wdl != 0 {
		f.SetWriteDeadline(deadlineOf(c.wdl))
	}
	c.file = f
	return f, nil
}

func (c *fdConn) attach() (*os.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attachLocked()
}

// detach takes the descriptor out of the runtime's poller: the file goes,
// a duplicate of its descriptor stays. It reports false, leaving c
// attached, when the duplicate cannot be made (no descriptor free). The
// caller guarantees that nothing reads or writes through the file now.
func (c *fdConn) detach() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == nil {
		return c.fd >= 0
	}
	nfd, err := unix.FcntlInt(uintptr(c.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return false
	}
	c.file.Close()
	c.file, c.fd = nil, int32(nfd)
	return true
}

// attached reports whether the descriptor is in the runtime's poller.
func (c *fdConn) attached() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.file != nil
}

// Read waits for bytes as a net.Conn's Read does (attaching c).
func (c *fdConn) Read(b []byte) (int, error) {
	f, err := c.attach()
	if err != nil {
		return 0, c.opError("read", err)
	}
	n, err := f.Read(b)
	return n, c.opError("read", err)
}

// Write writes b whole, as a net.Conn's Write does.
func (c *fdConn) Write(b []byte) (int, error) {
	w := vecWrites.Get().(*vecWrite)
	w.one[0] = b
	w.bufs = w.one[:]
	n, err := c.writeVec(w)
	w.one[0] = nil
	vecWrites.Put(w)
	return int(n), err
}

// writeBuffers writes v whole with vectored writes, consuming it, as
// net.Buffers.WriteTo does for a net.Conn.
func (c *fdConn) writeBuffers(v *net.Buffers) (int64, error) {
	w := vecWrites.Get().(*vecWrite)
	w.bufs = *v
	n, err := c.writeVec(w)
	*v = w.bufs
	vecWrites.Put(w)
	return n, err
}

// writeVec writes w.bufs: with system calls on the descriptor as far as
// the socket takes them at once, then, if bytes are left, attached,
// waiting for room within the write deadline.
func (c *fdConn) writeVec(w *vecWrite) (int64, error) {
	w.n, w.errno = 0, 0
	c.mu.Lock()
	if c.fd < 0 {
		c.mu.Unlock()
		return 0, c.opError("write", net.ErrClosed)
	}
	if w.fn(uintptr(c.fd)) { // attached or not: a write the socket takes at once waits for nothing
		c.mu.Unlock()
		return w.result(c)
	}
	f, err := c.attachLocked()
	c.mu.Unlock()
	if err != nil {
		return w.n, c.opError("write", err)
	}
	rc, err := f.SyscallConn()
	if err == nil {
		err = rc.Write(w.fn)
	}
	if err != nil {
		return w.n, c.opError("write", err)
	}
	return w.result(c)
}

// vecWrite is a vectored write in progress and its callback, made once
// (pooled): writes allocate nothing.
type vecWrite struct {
	fn    func(fd uintptr) bool
	bufs  net.Buffers
	one   [1][]byte
	iov   []unix.Iovec
	n     int64
	errno syscall.Errno
}

func (w *vecWrite) result(c *fdConn) (int64, error) {
	clear(w.iov)
	if w.errno != 0 {
		return w.n, c.opError("write", w.errno)
	}
	return w.n, nil
}

// maxIovecs is the most buffers one writev takes (the kernel's IOV_MAX).
const maxIovecs = 1024

// step writes what it can of w.bufs with writev, and reports whether it
// is done: all written, or failed; false when the socket is full. (A
// write to a closed peer fails with EPIPE: Go programs get no SIGPIPE for
// descriptors other than 1 and 2.)
func (w *vecWrite) step(fd uintptr) bool {
	for len(w.bufs) > 0 {
		w.iov = w.iov[:0]
		for _, b := range w.bufs {
			if len(w.iov) == maxIovecs {
				break
			}
			if len(b) > 0 {
				w.iov = append(w.iov, unix.Iovec{Base: &b[0], Len: uint64(len(b))})
			}
		}
		if len(w.iov) == 0 {
			w.bufs = w.bufs[:0]
			return true
		}
		r, _, e := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.iov[0])), uintptr(len(w.iov)))
		switch e {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			w.errno = e
			return true
		}
		w.n += int64(r)
		consume(&w.bufs, int64(r))
	}
	return true
}

// consume drops the first n bytes of v.
func consume(v *net.Buffers, n int64) {
	for len(*v) > 0 {
		if ln := int64(len((*v)[0])); ln > n {
			(*v)[0] = (*v)[0][n:]
			return
		} else {
			n -= ln
			(*v)[0] = nil
			*v = (*v)[1:]
		}
	}
}

var vecWrites = sync.Pool{New: func() any {
	w := new(vecWrite)
	w.fn = w.step
	return w
}}

// Close closes the connection; a Read or Write waiting on it returns
// net.ErrClosed.
func (c *fdConn) Close() error {
	c.mu.Lock()
	if c.fd < 0 {
		c.mu.Unlock()
		return c.opError("close", net.ErrClosed)
	}
	f, fd := c.file, c.fd
	c.file, c.fd = nil, -1
	c.mu.Unlock()
	if f != nil {
		return c.opError("close", f.Close())
	}
	return c.opError("close", unix.Close(int(fd)))
}

// LocalAddr returns the socket's address (asked of the kernel).
func (c *fdConn) LocalAddr() net.Addr {
	var sa unix.Sockaddr
	c.control(func(fd uintptr) { sa, _ = unix.Getsockname(int(fd)) })
	return c.addrOf(sa)
}

// RemoteAddr returns the peer's address.
func (c *fdConn) RemoteAddr() net.Addr {
	if c.unixSock {
		return &net.UnixAddr{Net: "unix"} // an accepted Unix connection's peer is unnamed
	}
	return net.TCPAddrFromAddrPort(c.peer())
}

func (c *fdConn) addrOf(sa unix.Sockaddr) net.Addr {
	if a, ok := sa.(*unix.SockaddrUnix); ok {
		return &net.UnixAddr{Name: a.Name, Net: "unix"}
	}
	if ap, ok := addrPortOf(sa); ok {
		return net.TCPAddrFromAddrPort(ap)
	}
	if c.unixSock {
		return &net.UnixAddr{Net: "unix"}
	}
	return &net.TCPAddr{}
}

// addrPortOf is an IPv4 or IPv6 socket address as a netip.AddrPort.
func addrPortOf(sa unix.Sockaddr) (netip.AddrPort, bool) {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)), true
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)), true
	}
	return netip.AddrPort{}, false
}

// control runs f on the descriptor, with c.mu held (none of its system
// calls may wait); net.ErrClosed once closed. It is also RawConn.Control.
func (c *fdConn) control(f func(fd uintptr)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return net.ErrClosed
	}
	f(uintptr(c.fd))
	return nil
}

func (c *fdConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *fdConn) SetReadDeadline(t time.Time) error {
	return c.setDeadline(&c.rdl, t, (*os.File).SetReadDeadline)
}

func (c *fdConn) SetWriteDeadline(t time.Time) error {
	return c.setDeadline(&c.wdl, t, (*os.File).SetWriteDeadline)
}

func (c *fdConn) setDeadline(keep *uint32, t time.Time, set func(*os.File, time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return c.opError("set deadline", net.ErrClosed)
	}
	*keep = deadlineStamp(t)
	if c.file != nil {
		return set(c.file, t)
	}
	return nil
}

// Socket options of the TCP connection (tuneConn, the stream sender).

func (c *fdConn) setInt(level, opt, v int) error {
	var serr error
	err := c.control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), level, opt, v) })
	return c.opError("set", cmp.Or(err, serr))
}

func (c *fdConn) SetNoDelay(on bool) error {
	v := 0
	if on {
		v = 1
	}
	return c.setInt(unix.IPPROTO_TCP, unix.TCP_NODELAY, v)
}

func (c *fdConn) SetReadBuffer(n int) error {
	return c.setInt(unix.SOL_SOCKET, unix.SO_RCVBUF, n)
}

func (c *fdConn) SetWriteBuffer(n int) error {
	return c.setInt(unix.SOL_SOCKET, unix.SO_SNDBUF, n)
}

func (c *fdConn) SetKeepAliveConfig(k net.KeepAliveConfig) error {
	if !k.Enable {
		return c.setInt(unix.SOL_SOCKET, unix.SO_KEEPALIVE, 0)
	}
	if err := c.setInt(unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1); err != nil {
		return err
	}
	secs := func(d time.Duration) int { return max(int((d+time.Second-1)/time.Second), 1) }
	if k.Idle > 0 {
		if err := c.setInt(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, secs(k.Idle)); err != nil {
			return err
		}
	}
	if k.Interval > 0 {
		if err := c.setInt(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, secs(k.Interval)); err != nil {
			return err
		}
	}
	if k.Count > 0 {
		return c.setInt(unix.IPPROTO_TCP, unix.TCP_KEEPCNT, k.Count)
	}
	return nil
}

// isTCP tells tcpOf that c takes TCP's options.
func (c *fdConn) isTCP() bool { return !c.unixSock }

// SyscallConn returns the raw connection: Control runs on the descriptor
// as it is (detached or not); Read and Write wait, so they attach it.
func (c *fdConn) SyscallConn() (syscall.RawConn, error) { return (*fdRaw)(c), nil }

type fdRaw fdConn

func (r *fdRaw) Control(f func(fd uintptr)) error { return (*fdConn)(r).control(f) }

func (r *fdRaw) Read(f func(fd uintptr) bool) error {
	return (*fdConn)(r).rawWait(f, syscall.RawConn.Read)
}

func (r *fdRaw) Write(f func(fd uintptr) bool) error {
	return (*fdConn)(r).rawWait(f, syscall.RawConn.Write)
}

func (c *fdConn) rawWait(f func(fd uintptr) bool, wait func(syscall.RawConn, func(uintptr) bool) error) error {
	file, err := c.attach()
	if err != nil {
		return err
	}
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	return wait(rc, f)
}

// fdListener accepts a TCP or Unix listener's connections as fdConns
// (accept4 on its descriptor): a connection that parks before its first
// bytes never has a net.Conn's structs made. A listener's RawConn cannot
// wait, so it waits on a duplicate of the descriptor in an *os.File.
// Only the server's accept loop calls Accept.
type fdListener struct {
	net.Listener
	file     *os.File // the duplicate
	raw      syscall.RawConn
	unixSock bool
	acceptFn func(fd uintptr) bool
	nfd      int
	rsa      unix.RawSockaddrAny // the peer's address, as accept4 gives it (kept here: no allocation per connection)
	rsaLen   uint32
	err      error
}

// rawListener returns l accepting fdConns, or l when it is neither TCP
// nor Unix (or its descriptor cannot be duplicated).
func rawListener(l net.Listener) net.Listener {
	var (
		f        *os.File
		err      error
		unixSock bool
	)
	switch t := l.(type) {
	case *net.TCPListener:
		f, err = t.File()
	case *net.UnixListener:
		f, err = t.File()
		unixSock = true
	default:
		return l
	}
	if err != nil {
		return l
	}
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return l
	}
	fl := &fdListener{Listener: l, file: f, raw: raw, unixSock: unixSock}
	fl.acceptFn = fl.acceptNow
	return fl
}

// Close closes the listener and its duplicate: Accept returns net.ErrClosed.
func (l *fdListener) Close() error {
	l.file.Close()
	return l.Listener.Close()
}

// acceptNow is Accept's callback: accept4, non-blocking; false while no
// connection waits.
func (l *fdListener) acceptNow(fd uintptr) bool {
	for {
		l.rsaLen = unix.SizeofSockaddrAny
		nfd, _, errno := unix.Syscall6(unix.SYS_ACCEPT4, fd, uintptr(unsafe.Pointer(&l.rsa)), uintptr(unsafe.Pointer(&l.rsaLen)),
			unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
		l.nfd, l.err = int(nfd), nil
		if errno != 0 {
			l.err = errno
		}
		switch l.err {
		case unix.EINTR, unix.ECONNABORTED: // a connection reset while it waited: the next
			continue
		case unix.EAGAIN:
			return false
		}
		return true
	}
}

func (l *fdListener) Accept() (net.Conn, error) {
	if err := l.raw.Read(l.acceptFn); err != nil {
		if errors.Is(err, os.ErrClosed) {
			err = net.ErrClosed
		}
		return nil, &net.OpError{Op: "accept", Net: l.Addr().Network(), Addr: l.Addr(), Err: err}
	}
	if l.err != nil {
		return nil, &net.OpError{Op: "accept", Net: l.Addr().Network(), Addr: l.Addr(), Err: os.NewSyscallError("accept4", l.err)}
	}
	c := &fdConn{fd: int32(l.nfd), unixSock: l.unixSock}
	c.setPeer(&l.rsa)
	return c, nil
}

// A descriptor keeps its deadlines for its next attach as stamps (32 bits,
// stampOf's 16.8 ms units), so that a parked connection is a 48-byte
// object: a deadline set while detached, or carried over a detach, comes
// back rounded up to a unit (never early). An attached connection's own
// deadlines are exact. One more than about a year ahead (2³¹ units) counts
// as none while kept; one that passed while kept stays passed for as long
// again (a year), the stamps' range.

// deadlineStamp returns the stamp that keeps deadline t: 0 for none, the
// stamp of now for one passed.
func deadlineStamp(t time.Time) uint32 {
	if t.IsZero() {
		return 0
	}
	n, at := mono.Now(), mono.Of(t)
	switch {
	case at <= n:
		return max(stampOf(n), 1)
	case at-n >= 1<<(31+stampShift):
		return 0
	}
	return max(stampOf(at+1<<stampShift-1), 1)
}

// deadlineOf returns the deadline stamp s keeps: a time in the past for
// one passed.
func deadlineOf(s uint32) time.Time {
	n := mono.Now()
	ahead := int32(s - stampOf(n))
	if ahead <= 0 {
		return time.Unix(1, 0)
	}
	return mono.Time((n>>stampShift + int64(ahead)) << stampShift)
}
