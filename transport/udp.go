package transport

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/lifenet/lifenet/packet"
)

// MaxDatagram is the largest UDP payload (IPv4: 65535 − 20 − 8).
const MaxDatagram = 65507

// udpHousekeeping is how often a UDP loop expires idle peers and finishes
// sessions closed by the application, even when no datagram arrives.
const udpHousekeeping = time.Second

// udpServer runs one UDP socket: one receive goroutine that keys virtual
// sessions by the peer's netip.AddrPort (no strings, no allocation per
// datagram) and delivers each datagram to the peer's OnReceive.
type udpServer struct {
	srv   *Server
	conn  *net.UDPConn
	peers map[netip.AddrPort]*Session // owned by the receive goroutine

	mu      sync.Mutex
	closed  []*Session // closed by the application, to be finished by the loop
	stopped bool
}

// ServePacket serves UDP datagrams from pc (which must be a *net.UDPConn)
// in a new goroutine until the server is closed; the server closes pc then.
func (s *Server) ServePacket(pc net.PacketConn) error {
	conn, ok := pc.(*net.UDPConn)
	if !ok {
		return errors.New("transport: ServePacket needs a *net.UDPConn")
	}
	if b := s.ep.cfg.SocketReceiveBuffer; b > 0 {
		conn.SetReadBuffer(b)
	}
	if b := s.ep.cfg.SocketSendBuffer; b > 0 {
		conn.SetWriteBuffer(b)
	}
	u := &udpServer{srv: s, conn: conn, peers: make(map[netip.AddrPort]*Session)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrClosed
	}
	s.udp = append(s.udp, u)
	s.wg.Add(1)
	go u.loop()
	return nil
}

func (u *udpServer) stop() {
	u.mu.Lock()
	u.stopped = true
	u.mu.Unlock()
	u.conn.Close()
}

func (u *udpServer) loop() {
	defer u.srv.wg.Done()
	buf := packet.Get(MaxDatagram)
	defer func() { buf.Release() }()
	var nextSweep int64
	for {
		if t := now(); t >= nextSweep {
			nextSweep = t + int64(udpHousekeeping)
			u.sweep(t)
			u.conn.SetReadDeadline(time.Unix(0, t).Add(udpHousekeeping + clockTick))
		}
		n, ap, err := u.conn.ReadFromUDPAddrPort(buf.Bytes())
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			if errors.Is(err, net.ErrClosed) || u.isStopped() {
				u.endAll(ReasonShutdown)
				return
			}
			u.srv.ep.reportError(err) // e.g. ICMP errors on some platforms: the socket stays usable
			continue
		}
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		u.datagram(ap, buf, n)
		if buf.RefCount() != 1 {
			buf.Release()
			buf = packet.Get(MaxDatagram)
		} else {
			buf.Resize(MaxDatagram)
		}
		u.finishClosed()
	}
}

// datagram handles one datagram of n bytes from ap.
func (u *udpServer) datagram(ap netip.AddrPort, buf *packet.Packet, n int) {
	sess := u.peers[ap]
	if sess != nil && sess.Reason() != ReasonNone {
		u.end(sess) // closed meanwhile: this datagram starts a new session
		sess = nil
	}
	if n == 0 { // NewLife convention: an empty datagram ends the peer's session
		if sess != nil {
			sess.closeWith(ReasonPeerClosed, nil)
			u.end(sess)
		}
		return
	}
	if sess == nil {
		if sess = u.open(ap); sess == nil {
			u.srv.ep.stats.droppedDatagrams.Add(1)
			return
		}
	}
	u.safeDeliver(sess, buf, n)
}

// safeDeliver runs OnReceive, closing the session if it panics.
func (u *udpServer) safeDeliver(sess *Session, buf *packet.Packet, n int) {
	defer func() {
		if v := recover(); v != nil {
			sess.closeWith(ReasonError, &PanicError{Value: v})
			u.end(sess)
		}
	}()
	sess.deliver(buf, n)
}

// open starts a virtual session for a new peer, or returns nil at a limit.
func (u *udpServer) open(ap netip.AddrPort) *Session {
	s := u.srv
	if len(u.peers) >= s.ep.cfg.MaxUDPPeers {
		return nil
	}
	s.mu.Lock()
	if s.closing || len(s.sessions) >= s.ep.cfg.MaxConns {
		s.mu.Unlock()
		return nil
	}
	id := s.nextID.Add(1)
	out := &udpSender{u: u, to: ap}
	sess := newSession(&s.ep, id, nil, out, u.conn.LocalAddr(), net.UDPAddrFromAddrPort(ap))
	out.sess = sess
	sess.datagram = true
	sess.onEnd = s.forget
	s.sessions[id] = sess
	s.ep.stats.opened()
	s.mu.Unlock()
	u.peers[ap] = sess
	if f := s.ep.hooks.OnOpen; f != nil {
		f(sess)
	}
	return sess
}

// end finishes a peer's session on the receive goroutine.
func (u *udpServer) end(sess *Session) {
	ap := sess.remote.(*net.UDPAddr).AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if u.peers[ap] == sess {
		delete(u.peers, ap)
		sess.finish()
	}
}

// sweep expires idle peers.
func (u *udpServer) sweep(t int64) {
	idle := u.srv.ep.cfg.UDPPeerIdle
	if idle <= 0 {
		return
	}
	for _, sess := range u.peers {
		if t-sess.lastRx.Load() > int64(idle) {
			sess.closeWith(ReasonIdle, nil)
			u.end(sess)
		}
	}
	u.finishClosed()
}

// finishClosed finishes sessions the application closed since last time.
func (u *udpServer) finishClosed() {
	u.mu.Lock()
	list := u.closed
	u.closed = nil
	u.mu.Unlock()
	for _, sess := range list {
		u.end(sess)
	}
}

// endAll finishes every peer (the socket is gone).
func (u *udpServer) endAll(r Reason) {
	for _, sess := range u.peers {
		sess.closeWith(r, nil)
		u.end(sess)
	}
}

func (u *udpServer) isStopped() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.stopped
}

// udpSender sends a session's packets as datagrams to its peer, one
// datagram per packet, through the server's socket.
type udpSender struct {
	u    *udpServer
	to   netip.AddrPort
	sess *Session
}

func (w *udpSender) writeBatch(s *Session, batch []*packet.Packet) error {
	return writeDatagrams(s, batch, w)
}

func (w *udpSender) writeDatagram(b []byte) (int, error) {
	return w.u.conn.WriteToUDPAddrPort(b, w.to)
}

// close hands the session to the receive goroutine, which finishes it
// within udpHousekeeping (or at the next datagram).
func (w *udpSender) close() error {
	w.u.mu.Lock()
	w.u.closed = append(w.u.closed, w.sess)
	w.u.mu.Unlock()
	return nil
}
