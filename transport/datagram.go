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
	}
	return nil
}

// datagramSender writes each packet as one datagram.
type datagramSender struct {
	conn      *net.UDPConn
	connected bool
	to        netip.AddrPort
	batch     udpDest // for sendmmsg; zero where there is none
}

func newDatagramSender(conn *net.UDPConn, connected bool, to netip.AddrPort) *datagramSender {
	w := &datagramSender{conn: conn, connected: connected, to: to}
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
