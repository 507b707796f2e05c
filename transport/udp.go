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

// udpServer runs one datagram socket: one receive goroutine that keys
// virtual sessions by the peer's address and delivers each datagram to the
// peer's OnReceive. On a *net.UDPConn the key is the netip.AddrPort (no
// strings, no allocation per datagram); any other net.PacketConn (an
// in-memory one in tests, say) goes through ReadFrom/WriteTo.
type udpServer struct {
	srv   *Server
	pc    net.PacketConn
	udp   *net.UDPConn         // pc, when it is a UDP socket: the allocation-free path
	peers map[peerKey]*Session // owned by the receive goroutine

	mu      sync.Mutex
	closed  []*Session // closed by the application, to be finished by the loop
	stopped bool
}

// peerKey identifies a datagram peer: its AddrPort on UDP sockets, or the
// network and text of its address on other packet connections.
type peerKey struct {
	ap    netip.AddrPort
	other string
}

// ServePacket serves datagrams from pc in a new goroutine until the server
// is closed; the server closes pc then. A *net.UDPConn is served without
// allocation per datagram; other packet connections cost one address
// string per datagram (they key peers by it).
func (s *Server) ServePacket(pc net.PacketConn) error {
	u := &udpServer{srv: s, pc: pc, peers: make(map[peerKey]*Session)}
	if conn, ok := pc.(*net.UDPConn); ok {
		u.udp = conn
		if b := s.ep.cfg.SocketReceiveBuffer; b > 0 {
			conn.SetReadBuffer(b)
		}
		if b := s.ep.cfg.SocketSendBuffer; b > 0 {
			conn.SetWriteBuffer(b)
		}
	}
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
	u.pc.Close()
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
			u.pc.SetReadDeadline(time.Unix(0, t).Add(udpHousekeeping + clockTick))
		}
		n, key, from, err := u.read(buf.Bytes())
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
		u.datagram(key, from, buf, n)
		if buf.RefCount() != 1 {
			buf.Release()
			buf = packet.Get(MaxDatagram)
		} else {
			buf.Resize(MaxDatagram)
		}
		u.finishClosed()
	}
}

// read receives one datagram into b. from is nil on UDP sockets (the key
// holds the address; a net.Addr is built only for a new session).
func (u *udpServer) read(b []byte) (n int, key peerKey, from net.Addr, err error) {
	if u.udp != nil {
		var ap netip.AddrPort
		n, ap, err = u.udp.ReadFromUDPAddrPort(b)
		return n, peerKey{ap: unmapped(ap)}, nil, err
	}
	n, from, err = u.pc.ReadFrom(b)
	if err != nil {
		return n, key, from, err
	}
	if ua, ok := from.(*net.UDPAddr); ok {
		return n, peerKey{ap: unmapped(ua.AddrPort())}, from, nil
	}
	return n, peerKey{other: from.Network() + "|" + from.String()}, from, nil
}

// unmapped turns an IPv4-mapped IPv6 address into plain IPv4, so one peer
// has one key whichever socket family it arrived on.
func unmapped(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// datagram handles one datagram of n bytes from the peer key (address from,
// or nil on UDP sockets).
func (u *udpServer) datagram(key peerKey, from net.Addr, buf *packet.Packet, n int) {
	sess := u.peers[key]
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
		if sess = u.open(key, from); sess == nil {
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

// open starts a virtual session for a new peer, or returns nil when the
// server is closing. At MaxUDPPeers the least recently active of a sample
// of peers makes room (ReasonLimit): a flood of new source addresses,
// which are easy to forge, pushes out peers that went quiet, not the
// server's TCP connections (MaxConns is theirs alone) nor peers that keep
// talking.
func (u *udpServer) open(key peerKey, from net.Addr) *Session {
	s := u.srv
	if len(u.peers) >= s.ep.cfg.MaxUDPPeers && !u.evictOne() {
		return nil
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	id := s.nextID.Add(1)
	if from == nil {
		from = net.UDPAddrFromAddrPort(key.ap)
	}
	out := &udpSender{u: u, key: key, to: from}
	sess := newSession(&s.ep, id, nil, out, u.pc.LocalAddr(), from)
	out.sess = sess
	sess.datagram = true
	sess.onEnd = s.forget
	s.sessions.add(sess)
	s.ep.stats.opened()
	s.mu.Unlock()
	u.peers[key] = sess
	if err := sess.openSafely(); err != nil {
		sess.closeWith(ReasonError, err)
		u.end(sess)
		return nil
	}
	return sess
}

// evictSample is how many peers evictOne compares: a bounded cost per new
// peer under a flood, and with Go's random map order a fair sample.
const evictSample = 64

// evictOne ends the least recently active of up to evictSample peers.
func (u *udpServer) evictOne() bool {
	var victim *Session
	n := 0
	for _, sess := range u.peers {
		if victim == nil || sess.lastRx.Load() < victim.lastRx.Load() {
			victim = sess
		}
		if n++; n == evictSample {
			break
		}
	}
	if victim == nil {
		return false
	}
	victim.closeWith(ReasonLimit, nil)
	u.end(victim)
	return true
}

// end finishes a peer's session on the receive goroutine.
func (u *udpServer) end(sess *Session) {
	key := sess.out.(*udpSender).key
	if u.peers[key] == sess {
		delete(u.peers, key)
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
