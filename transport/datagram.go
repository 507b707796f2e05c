package transport

import (
	"net"
	"net/netip"
	"syscall"

	"github.com/lifenet/lifenet/packet"
)

// datagramWriter sends one datagram.
type datagramWriter interface {
	writeDatagram(b []byte) (int, error)
	// dest says where a batch of datagrams may go in one system call
	// (sendmmsg); a zero udpDest has no such path.
	dest() udpDest
}

// udpDest is the target of a batched send: the socket (its RawConn, made
// once per socket so a send allocates nothing) and the peer, unless the
// socket is connected.
type udpDest struct {
	raw       syscall.RawConn
	family    int // the socket's address family (AF_INET or AF_INET6)
	to        netip.AddrPort
	connected bool
}

// writeDatagrams sends each packet of batch as one datagram, flattening
// chained packets: a datagram must leave in one piece. Several packets go
// out in one system call where the OS can (sendmmsg on Linux): the
// session's send queue is the natural batch, whatever queued up while
// OnReceive ran with BatchSends, inside Batch, or behind a write in
// progress.
func writeDatagrams(s *Session, batch []*packet.Packet, w datagramWriter) error {
	if len(batch) > 1 {
		if d := w.dest(); d.raw != nil {
			if n, done, err := sendBatch(d, batch); done {
				s.io.bytesOut.Add(uint64(n))
				return err
			}
		}
	}
	for _, p := range batch {
		if err := writeDatagram(s, p, w); err != nil {
			return err
		}
	}
	return nil
}

// writeDatagram sends p as one datagram, flattening a chained packet, and
// counts its bytes. The caller keeps p.
func writeDatagram(s *Session, p *packet.Packet, w datagramWriter) error {
	b, flat := p.Bytes(), (*packet.Packet)(nil)
	if p.Next() != nil {
		flat = p.Clone()
		b = flat.Bytes()
	}
	n, err := w.writeDatagram(b)
	if flat != nil {
		flat.Release()
	}
	if err != nil {
		return err
	}
	s.io.bytesOut.Add(uint64(n))
	return nil
}

// datagramMax is the largest message one datagram to peer carries:
// [MaxDatagram], or 65527 bytes to an IPv6 peer. A sender works it out
// once, so that a send does not look at the address.
func datagramMax(peer net.Addr) int {
	if u, ok := peer.(*net.UDPAddr); ok && u.IP.To4() == nil {
		return maxDatagram6
	}
	return MaxDatagram
}

// datagramSender writes each packet as one datagram.
type datagramSender struct {
	conn      *net.UDPConn
	connected bool
	to        netip.AddrPort
	max       int     // datagramMax of the peer
	batch     udpDest // for sendmmsg; zero where there is none
}

// newDatagramSender returns the sender of a client's socket to peer
// (conn's remote when connected, else to).
func newDatagramSender(conn *net.UDPConn, connected bool, to netip.AddrPort, peer net.Addr) *datagramSender {
	w := &datagramSender{conn: conn, connected: connected, to: to, max: datagramMax(peer)}
	if raw, family := batchSocket(conn); raw != nil {
		w.batch = udpDest{raw: raw, family: family, to: to, connected: connected}
	}
	return w
}

func (w *datagramSender) writeBatch(s *Session, batch []*packet.Packet) error {
	return writeDatagrams(s, batch, w)
}

func (w *datagramSender) dest() udpDest { return w.batch }

func (w *datagramSender) writeDatagram(b []byte) (int, error) {
	if w.connected {
		return w.conn.Write(b)
	}
	return w.conn.WriteToUDPAddrPort(b, w.to)
}

// close ends the peer's session with the NewLife convention (an empty
// datagram), then closes the socket.
func (w *datagramSender) close() error {
	w.writeDatagram(nil)
	return w.conn.Close()
}

// udpSender sends a session's packets as datagrams to its peer, one
// datagram per packet, through the server's socket.
type udpSender struct {
	u    *udpServer
	addr netip.AddrPort // the peer on a UDP socket (its key)
	name string         // the peer's key on other packet connections
	to   net.Addr
	max  int // datagramMax of to
	sess *Session
}

func (w *udpSender) writeBatch(s *Session, batch []*packet.Packet) error {
	return writeDatagrams(s, batch, w)
}

func (w *udpSender) dest() udpDest {
	if w.u.raw == nil {
		return udpDest{}
	}
	return udpDest{raw: w.u.raw, family: w.u.family, to: w.addr}
}

func (w *udpSender) writeDatagram(b []byte) (int, error) {
	if w.u.udp != nil {
		return w.u.udp.WriteToUDPAddrPort(b, w.addr)
	}
	return w.u.pc.WriteTo(b, w.to)
}

// close hands the session to the receive goroutine, which finishes it
// after its current batch (or within udpHousekeeping when none comes).
func (w *udpSender) close() error {
	w.u.mu.Lock()
	w.u.closed = append(w.u.closed, w.sess)
	w.u.pending.Store(true)
	w.u.mu.Unlock()
	return nil
}
