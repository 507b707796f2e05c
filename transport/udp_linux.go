package transport

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lifenet/lifenet/packet"
)

// Batched datagram I/O on Linux: recvmmsg and sendmmsg through the
// socket's RawConn, so they wait in Go's netpoller like any read or write
// and honour deadlines. golang.org/x/net/ipv4's ReadBatch does the same
// but builds a *net.UDPAddr (two allocations) per datagram; here each
// sender's sockaddr is decoded straight into a netip.AddrPort.

// mmsghdr is struct mmsghdr: a message header and the byte count the
// kernel fills in. Go pads it to the same size as C on every platform.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// batchSocket returns conn's RawConn and address family for batched
// sends, or nil if it has none.
func batchSocket(conn *net.UDPConn) (syscall.RawConn, int) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, 0
	}
	family := 0
	raw.Control(func(fd uintptr) {
		family, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
	})
	if err != nil || family != unix.AF_INET && family != unix.AF_INET6 {
		return nil, 0
	}
	return raw, family
}

// mmsgReader receives up to len(slots) datagrams per recvmmsg. Its
// headers, iovecs and address buffers are made once; read only points the
// iovecs at the slots' buffers.
type mmsgReader struct {
	raw   syscall.RawConn
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // large enough for either family
	want  int                     // messages asked for by the current read
	k     int                     // messages received by it
	errno syscall.Errno
	fn    func(fd uintptr) bool // made once: a read allocates nothing
	zones map[uint32]string     // IPv6 scope IDs seen, by name
}

// newBatchReader returns a recvmmsg reader of n datagrams per call, or nil
// if conn has no RawConn.
func newBatchReader(conn *net.UDPConn, n int) datagramReader {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil
	}
	r := &mmsgReader{raw: raw, hdrs: make([]mmsghdr, n), iovs: make([]unix.Iovec, n),
		names: make([]unix.RawSockaddrInet6, n)}
	for i := range r.hdrs {
		h := &r.hdrs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
	}
	r.fn = r.recv
	return r
}

// recv is the RawConn callback: false asks the netpoller to wait until
// the socket is readable.
func (r *mmsgReader) recv(fd uintptr) bool {
	for {
		k, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hdrs[0])), uintptr(r.want), 0, 0, 0)
		switch e {
		case 0:
			r.k, r.errno = int(k), 0
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		r.k, r.errno = 0, e
		return true
	}
}

func (r *mmsgReader) read(slots []udpSlot) (int, error) {
	r.want = min(len(slots), len(r.hdrs))
	for i := range r.want {
		b := slots[i].buf.Bytes()
		r.iovs[i].Base = unsafe.SliceData(b)
		r.iovs[i].SetLen(len(b))
		r.hdrs[i].hdr.Namelen = unix.SizeofSockaddrInet6
		r.hdrs[i].hdr.Flags = 0
		r.hdrs[i].n = 0
	}
	if err := r.raw.Read(r.fn); err != nil {
		return 0, err // closed, or a deadline
	}
	if r.errno != 0 {
		return 0, os.NewSyscallError("recvmmsg", r.errno)
	}
	for i := range r.k {
		sl, h := &slots[i], &r.hdrs[i]
		sl.n = int(h.n)
		sl.trunc = h.hdr.Flags&unix.MSG_TRUNC != 0
		sl.addr = r.addr(i)
	}
	return r.k, nil
}

// addr decodes the sender of message i; IPv4-mapped addresses come out
// as plain IPv4, as unmapped does for the portable path.
func (r *mmsgReader) addr(i int) netip.AddrPort {
	sa := &r.names[i]
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), netPort(&sa4.Port))
	case unix.AF_INET6:
		a := netip.AddrFrom16(sa.Addr)
		if a.Is4In6() {
			a = a.Unmap()
		} else if sa.Scope_id != 0 {
			a = a.WithZone(r.zone(sa.Scope_id))
		}
		return netip.AddrPortFrom(a, netPort(&sa.Port))
	}
	return netip.AddrPort{}
}

// zone names an IPv6 scope ID as the standard library does (the
// interface's name, else the number), remembering it.
func (r *mmsgReader) zone(id uint32) string {
	if z, ok := r.zones[id]; ok {
		return z
	}
	z := strconv.FormatUint(uint64(id), 10)
	if ifi, err := net.InterfaceByIndex(int(id)); err == nil {
		z = ifi.Name
	}
	if r.zones == nil {
		r.zones = make(map[uint32]string)
	}
	r.zones[id] = z
	return z
}

// netPort reads a port stored in network byte order.
func netPort(p *uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(p))
	return uint16(b[0])<<8 | uint16(b[1])
}

// setNetPort stores a port in network byte order.
func setNetPort(p *uint16, port uint16) {
	b := (*[2]byte)(unsafe.Pointer(p))
	b[0], b[1] = byte(port>>8), byte(port)
}

// mmsgSender is the scratch of sendmmsg batches: the datagrams of one or
// more destinations, each destination's contiguous and in order. A
// session's queue to its one peer takes one from a pool (sessions that
// send batches share a few); a UDP server's receive goroutine keeps one
// for the replies of each receive batch to many peers (udpReplies).
type mmsgSender struct {
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // each destination's sockaddr, either family
	dests []mmsgDest
	flats []*packet.Packet // flattened chained packets, released by reset
	off   int              // messages done: sent, or skipped with a failed destination
	cur   int              // the destination of message off
	fn    func(fd uintptr) bool
}

// mmsgDest is one destination of a batch and, once sent, its outcome.
type mmsgDest struct {
	end     int    // index past its last message
	namelen uint32 // 0: the socket is connected
	bytes   int
	errno   syscall.Errno // the failure that cost it the rest of its messages
}

func newMmsgSender() *mmsgSender {
	m := new(mmsgSender)
	m.fn = m.send
	return m
}

var mmsgSenders = sync.Pool{New: func() any { return newMmsgSender() }}

// sendmmsgHook, when set (tests), runs before each sendmmsg of asked
// messages: it returns how many of them the kernel may take (a partial
// send), or an errno to return instead of calling the kernel.
var sendmmsgHook atomic.Pointer[func(asked int) (limit int, errno syscall.Errno)]

func sendmmsg(fd uintptr, hdrs []mmsghdr) (int, syscall.Errno) {
	if f := sendmmsgHook.Load(); f != nil {
		limit, e := (*f)(len(hdrs))
		if e != 0 {
			return 0, e
		}
		hdrs = hdrs[:max(1, min(limit, len(hdrs)))]
	}
	k, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), 0, 0, 0)
	return int(k), e
}

// send is the RawConn callback: it sends what is left of the batch,
// returning false to wait until the socket is writable. sendmmsg stops at
// the first message that fails (returning the count before it, or the
// error when it is the first): that message's destination loses the rest
// of its datagrams, as a failed write ends a session's, and the next
// destination's go on.
func (m *mmsgSender) send(fd uintptr) bool {
	for m.off < len(m.hdrs) {
		k, e := sendmmsg(fd, m.hdrs[m.off:])
		if e == 0 && k == 0 {
			e = syscall.EIO // sendmmsg sends at least one message or fails
		}
		switch e {
		case 0:
			for i := m.off; i < m.off+k; i++ {
				m.dest(i).bytes += int(m.hdrs[i].n)
			}
			m.off += k
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			d := m.dest(m.off)
			d.errno = e
			m.off = d.end
		}
	}
	return true
}

// dest returns the destination of message i ≥ m.off, moving m.cur to it.
func (m *mmsgSender) dest(i int) *mmsgDest {
	for m.dests[m.cur].end <= i {
		m.cur++
	}
	return &m.dests[m.cur]
}

// add appends batch, one datagram per packet, for d and returns d's index
// for result. It returns -1, adding nothing, when d cannot be reached
// this way (an IPv6 zone, a family mismatch).
func (m *mmsgSender) add(d udpDest, batch []*packet.Packet) int {
	i := len(m.dests)
	if i == len(m.names) {
		m.names = append(m.names, unix.RawSockaddrInet6{})
	}
	var namelen uint32
	if !d.connected {
		if namelen = setName(&m.names[i], d); namelen == 0 {
			return -1
		}
	}
	for _, p := range batch {
		b := p.Bytes()
		if p.Next() != nil {
			flat := p.Clone()
			m.flats = append(m.flats, flat)
			b = flat.Bytes()
		}
		var iov unix.Iovec
		iov.Base = unsafe.SliceData(b)
		iov.SetLen(len(b))
		m.iovs = append(m.iovs, iov)
	}
	m.dests = append(m.dests, mmsgDest{end: len(m.iovs), namelen: namelen})
	return i
}

// sendAll sends what was added through raw with as few sendmmsg calls as
// the socket takes. Its error is the RawConn's (the socket closed, a
// deadline); result tells each destination's outcome.
func (m *mmsgSender) sendAll(raw syscall.RawConn) error {
	n := len(m.iovs)
	if cap(m.hdrs) < n {
		m.hdrs = make([]mmsghdr, n)
	}
	m.hdrs = m.hdrs[:n]
	m.off, m.cur = 0, 0
	for i := range m.hdrs { // the slices have stopped growing: point into them now
		d := m.dest(i)
		h := &m.hdrs[i]
		h.hdr = unix.Msghdr{Iov: &m.iovs[i]}
		if d.namelen != 0 {
			h.hdr.Name = (*byte)(unsafe.Pointer(&m.names[m.cur]))
			h.hdr.Namelen = d.namelen
		}
		h.hdr.SetIovlen(1)
		h.n = 0
	}
	m.cur = 0
	return raw.Write(m.fn)
}

// result returns the bytes sent to destination i and, if not all its
// datagrams left, why: its own failure, or err, sendAll's.
func (m *mmsgSender) result(i int, err error) (int, error) {
	d := &m.dests[i]
	switch {
	case d.errno != 0:
		return d.bytes, os.NewSyscallError("sendmmsg", d.errno)
	case d.end > m.off:
		return d.bytes, err
	}
	return d.bytes, nil
}

// reset empties m for the next batch, releasing flattened packets and
// dropping the pointers into the sent packets' buffers.
func (m *mmsgSender) reset() {
	for i, f := range m.flats {
		f.Release()
		m.flats[i] = nil
	}
	m.flats = m.flats[:0]
	clear(m.iovs)
	m.iovs = m.iovs[:0]
	clear(m.hdrs)
	m.hdrs = m.hdrs[:0]
	m.dests = m.dests[:0]
}

// sendBatch sends each packet of batch as one datagram to d with as few
// sendmmsg calls as the socket takes. done is false when d cannot be
// reached this way (an IPv6 zone, a family mismatch); the caller then
// sends one by one.
func sendBatch(d udpDest, batch []*packet.Packet) (n int, done bool, err error) {
	m := mmsgSenders.Get().(*mmsgSender)
	defer mmsgSenders.Put(m)
	if m.add(d, batch) < 0 {
		return 0, false, nil
	}
	n, err = m.result(0, m.sendAll(d.raw))
	m.reset()
	return n, true, err
}

// setName writes d's destination into sa as a sockaddr of the socket's
// family and returns its length, or 0 if it has none.
func setName(sa6 *unix.RawSockaddrInet6, d udpDest) uint32 {
	a := d.to.Addr()
	if a.Zone() != "" || !a.IsValid() {
		return 0
	}
	switch d.family {
	case unix.AF_INET:
		if a = a.Unmap(); !a.Is4() {
			return 0
		}
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa6))
		*sa = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: a.As4()}
		setNetPort(&sa.Port, d.to.Port())
		return unix.SizeofSockaddrInet4
	case unix.AF_INET6:
		*sa6 = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: a.As16()}
		setNetPort(&sa6.Port, d.to.Port())
		return unix.SizeofSockaddrInet6
	}
	return 0
}
