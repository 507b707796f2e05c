//go:build linux || darwin

package transport

import (
	"syscall"
)

// nowReader reads a socket without waiting (recv with MSG_DONTWAIT on the
// descriptor the connection's RawConn.Control lends). Control only holds a
// reference to the descriptor, which keeps a Close on another goroutine
// from freeing its number during the call: it takes no read lock and no
// poller state, as RawConn.Read does, since a recv that never waits needs
// neither, and the caller serialises reads (the next Read of the
// connection resets the poller's readiness before it reads). Its RawConn
// and callback are made once, so a read allocates nothing.
type nowReader struct {
	raw    syscall.RawConn // nil until the first read; see unsupported
	fn     func(fd uintptr)
	buf    []byte
	n      int
	errno  syscall.Errno // recv's; an error value only when returned, so a drain that finds nothing boxes none
	failed bool          // the connection has no RawConn (TLS): never read
}

// read reads what s's socket holds into b. read is false when nothing was
// read: no bytes waiting, or no way to look without waiting.
func (r *nowReader) read(s *Session, b []byte) (n int, read bool, err error) {
	if r.raw == nil && !r.init(s) {
		return 0, false, nil
	}
	r.buf = b
	cerr := r.raw.Control(r.fn)
	r.buf = nil
	if cerr != nil { // the connection is closing: leave it to Receive
		return 0, false, nil
	}
	switch r.errno {
	case 0:
		return r.n, true, nil
	case syscall.EAGAIN, syscall.EINTR:
		return 0, false, nil
	}
	return 0, true, r.errno
}

func (r *nowReader) init(s *Session) bool {
	if r.failed {
		return false
	}
	sc, ok := s.conn.(syscall.Conn)
	if !ok {
		r.failed = true
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		r.failed = true
		return false
	}
	r.raw = raw
	r.fn = func(fd uintptr) { r.n, r.errno = recvNow(int(fd), r.buf) }
	return true
}
