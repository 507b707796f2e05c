package transport

import (
	"net"
	"net/netip"
)

// udpReader is the portable receive path of a UDP socket: one datagram per
// system call. ReadMsgUDPAddrPort (not ReadFrom) because its flags tell a
// truncated datagram apart, and it allocates nothing.
type udpReader struct {
	conn *net.UDPConn
}

func (r *udpReader) read(slots []udpSlot) (int, error) {
	sl := &slots[0]
	n, _, flags, ap, err := r.conn.ReadMsgUDPAddrPort(sl.buf.Bytes(), nil)
	if err != nil {
		return 0, err
	}
	sl.n, sl.addr, sl.trunc = n, unmapped(ap), flags&msgTrunc != 0
	return 1, nil
}

// packetReader reads any net.PacketConn, one datagram per call.
type packetReader struct {
	pc net.PacketConn
}

func (r *packetReader) read(slots []udpSlot) (int, error) {
	sl := &slots[0]
	n, from, err := r.pc.ReadFrom(sl.buf.Bytes())
	if err != nil {
		return 0, err
	}
	sl.n, sl.from, sl.trunc = n, from, false
	return 1, nil
}

// unmapped turns an IPv4-mapped IPv6 address into plain IPv4, so one peer
// has one key whichever socket family it arrived on.
func unmapped(ap netip.AddrPort) netip.AddrPort {
	if !ap.Addr().Is4In6() {
		return ap
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
