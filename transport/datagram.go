package transport

import (
	"net"
	"net/netip"

	"github.com/lifenet/lifenet/packet"
)

// datagramWriter sends one datagram.
type datagramWriter interface {
	writeDatagram(b []byte) (int, error)
}

// writeDatagrams sends each packet of batch as one datagram, flattening
// chained packets: a datagram must leave in one piece.
func writeDatagrams(s *Session, batch []*packet.Packet, w datagramWriter) error {
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
}

func (w *datagramSender) writeBatch(s *Session, batch []*packet.Packet) error {
	return writeDatagrams(s, batch, w)
}

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
	key  peerKey
	to   net.Addr // for packet connections other than UDP sockets
	sess *Session
}

func (w *udpSender) writeBatch(s *Session, batch []*packet.Packet) error {
	return writeDatagrams(s, batch, w)
}

func (w *udpSender) writeDatagram(b []byte) (int, error) {
	if w.u.udp != nil {
		return w.u.udp.WriteToUDPAddrPort(b, w.key.ap)
	}
	return w.u.pc.WriteTo(b, w.to)
}

// close hands the session to the receive goroutine, which finishes it
// within udpHousekeeping (or at the next datagram).
func (w *udpSender) close() error {
	w.u.mu.Lock()
	w.u.closed = append(w.u.closed, w.sess)
	w.u.mu.Unlock()
	return nil
}
