package transport

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
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

// mmsgSender is the scratch of one sendmmsg batch, pooled: sessions that
// send batches share a few instead of each keeping one.
type mmsgSender struct {
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	name  unix.RawSockaddrInet6 // the destination, one for the whole batch
	flats []*packet.Packet      // flattened chained packets, released after the send
	off   int                   // messages sent so far
	bytes int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

var mmsgSenders = sync.Pool{New: func() any {
	m := new(mmsgSender)
	m.fn = m.send
	return m
}}

// send is the RawConn callback: it sends what is left of the batch,
// returning false to wait until the socket is writable.
func (m *mmsgSender) send(fd uintptr) bool {
	for m.off < len(m.hdrs) {
		k, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&m.hdrs[m.off])), uintptr(len(m.hdrs)-m.off), 0, 0, 0)
		switch e {
		case 0:
			if k == 0 {
				m.errno = syscall.EIO // sendmmsg sends at least one message or fails
				return true
			}
			for _, h := range m.hdrs[m.off : m.off+int(k)] {
				m.bytes += int(h.n)
			}
			m.off += int(k)
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			m.errno = e
			return true
		}
	}
	return true
}

// sendBatch sends each packet of batch as one datagram to d with as few
// sendmmsg calls as the socket takes. done is false when d cannot be
// reached this way (an IPv6 zone, a family mismatch); the caller then
// sends one by one.
func sendBatch(d udpDest, batch []*packet.Packet) (n int, done bool, err error) {
	m := mmsgSenders.Get().(*mmsgSender)
	defer mmsgSenders.Put(m)
	var name *byte
	var namelen uint32
	if !d.connected {
		if namelen = m.setName(d); namelen == 0 {
			return 0, false, nil
		}
		name = (*byte)(unsafe.Pointer(&m.name))
	}
	if cap(m.hdrs) < len(batch) {
		m.hdrs, m.iovs = make([]mmsghdr, len(batch)), make([]unix.Iovec, len(batch))
	}
	m.hdrs, m.iovs = m.hdrs[:len(batch)], m.iovs[:len(batch)]
	for i, p := range batch {
		b := p.Bytes()
		if p.Next() != nil {
			flat := p.Clone()
			m.flats = append(m.flats, flat)
			b = flat.Bytes()
		}
		m.iovs[i].Base = unsafe.SliceData(b)
		m.iovs[i].SetLen(len(b))
		h := &m.hdrs[i]
		h.hdr = unix.Msghdr{Name: name, Namelen: namelen, Iov: &m.iovs[i]}
		h.hdr.SetIovlen(1)
		h.n = 0
	}
	m.off, m.bytes, m.errno = 0, 0, 0
	err = d.raw.Write(m.fn)
	if err == nil && m.errno != 0 {
		err = os.NewSyscallError("sendmmsg", m.errno)
	}
	n = m.bytes
	for i, f := range m.flats {
		f.Release()
		m.flats[i] = nil
	}
	m.flats = m.flats[:0]
	clear(m.iovs) // drop the pointers into the batch's buffers
	for i := range m.hdrs {
		m.hdrs[i].hdr = unix.Msghdr{}
	}
	return n, true, err
}

// setName writes d's destination as a sockaddr of the socket's family and
// returns its length, or 0 if it has none.
func (m *mmsgSender) setName(d udpDest) uint32 {
	a := d.to.Addr()
	if a.Zone() != "" || !a.IsValid() {
		return 0
	}
	switch d.family {
	case unix.AF_INET:
		if a = a.Unmap(); !a.Is4() {
			return 0
		}
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&m.name))
		*sa = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: a.As4()}
		setNetPort(&sa.Port, d.to.Port())
		return unix.SizeofSockaddrInet4
	case unix.AF_INET6:
		m.name = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: a.As16()}
		setNetPort(&m.name.Port, d.to.Port())
		return unix.SizeofSockaddrInet6
	}
	return 0
}
