package transport

import (
	"errors"
	"math"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lifenet/lifenet/packet"
)

// MaxDatagram is the largest UDP payload (IPv4: 65535 − 20 − 8).
const MaxDatagram = 65507

// maxDatagram6 is the largest UDP payload to an IPv6 peer (65535 − 8).
const maxDatagram6 = 65527

// datagramBuffer is the size of each receive slot of a UDP server: 64 KiB
// holds the largest datagram of IPv4 ([MaxDatagram]) and of IPv6 (65527
// bytes without jumbograms), so the kernel never cuts one short. A
// datagram that arrives truncated all the same is dropped and counted in
// Stats.DatagramsDropped: its head alone would hand a protocol half a
// message.
const datagramBuffer = 64 << 10

// udpHousekeeping is how often a UDP loop expires idle peers and finishes
// sessions closed by the application, even when no datagram arrives.
const udpHousekeeping = time.Second

// udpServer runs one datagram socket: one receive goroutine that reads
// batches of datagrams, keys virtual sessions by the peer's address and
// delivers each datagram to the peer's OnReceive. On a *net.UDPConn the key
// is the netip.AddrPort (no strings, no allocation per datagram); any other
// net.PacketConn (an in-memory one in tests, say) is keyed by the text of
// its addresses.
type udpServer struct {
	srv       *Server
	pc        net.PacketConn
	udp       *net.UDPConn    // pc, when it is a UDP socket
	raw       syscall.RawConn // udp's, where sends can be batched (Linux); else nil
	family    int             // udp's address family, with raw
	reader    datagramReader
	slots     []udpSlot
	slotBytes int // the capacity of each slot's buffer

	// Owned by the receive goroutine.
	byAddr   map[netip.AddrPort]*Session // UDP peers
	byName   map[string]*Session         // peers of other packet connections
	lastAddr netip.AddrPort              // the peer of the last datagram, whose
	lastSess *Session                    // session is found without a map lookup

	reads   atomic.Uint64 // receive calls that returned datagrams (tests)
	pending atomic.Bool   // closed holds sessions

	mu      sync.Mutex
	closed  []*Session // closed by the application, to be finished by the loop
	stopped bool
}

// udpSlot is one datagram of a receive batch: a pooled buffer and, once
// read, its length and sender.
type udpSlot struct {
	buf   *packet.Packet
	n     int
	addr  netip.AddrPort // the sender on UDP sockets (IPv4-mapped addresses unmapped)
	from  net.Addr       // the sender on other packet connections
	trunc bool           // the datagram did not fit buf
}

// datagramReader receives datagrams into slots.
type datagramReader interface {
	// read fills slots[:k] with k ≥ 1 datagrams, waiting for the first,
	// or fails.
	read(slots []udpSlot) (k int, err error)
}

// ServePacket serves datagrams from pc in a new goroutine until the server
// is closed; the server closes pc then. A *net.UDPConn is served without
// allocation per datagram, on Linux in batches of Config.UDPReadBatch
// datagrams per system call; other packet connections cost one address
// string per datagram (they key peers by it).
func (s *Server) ServePacket(pc net.PacketConn) error {
	u := &udpServer{srv: s, pc: pc, byAddr: make(map[netip.AddrPort]*Session)}
	batch := 1
	if conn, ok := pc.(*net.UDPConn); ok {
		u.udp = conn
		u.raw, u.family = batchSocket(conn)
		if b := s.ep.cfg.SocketReceiveBuffer; b > 0 {
			conn.SetReadBuffer(b)
		}
		if b := s.ep.cfg.SocketSendBuffer; b > 0 {
			conn.SetWriteBuffer(b)
		}
		if n := s.ep.cfg.UDPReadBatch; n > 1 {
			if r := newBatchReader(conn, n); r != nil {
				u.reader, batch = r, n
			}
		}
		if u.reader == nil {
			u.reader = &udpReader{conn: conn}
		}
	} else {
		u.byName = make(map[string]*Session)
		u.reader = &packetReader{pc: pc}
	}
	size := datagramBuffer
	if s.slotSize > 0 {
		size = s.slotSize
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrClosed
	}
	u.slots = make([]udpSlot, batch)
	for i := range u.slots {
		b := packet.Get(size)
		b.Resize(b.Cap())
		u.slots[i].buf = b
	}
	u.slotBytes = u.slots[0].buf.Cap()
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
	defer func() {
		for i := range u.slots {
			u.slots[i].buf.Release()
			u.slots[i].buf = nil
		}
	}()
	nextSweep := int64(math.MinInt64) // at once: readings are negative in a synctest bubble
	for {
		if t := now(); t >= nextSweep {
			nextSweep = t + int64(udpHousekeeping)
			u.sweep(t)
			u.pc.SetReadDeadline(timeOf(t).Add(udpHousekeeping + clockTick))
		}
		k, err := u.reader.read(u.slots)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			if errors.Is(err, net.ErrClosed) || u.isStopped() {
				u.endAll(ReasonShutdown)
				return
			}
			u.srv.ep.reportError(err) // e.g. ICMP errors on some platforms: the socket stays usable
			u.srv.ep.logRead(u.pc, err)
			continue
		}
		u.reads.Add(1)
		for i := range u.slots[:k] {
			sl := &u.slots[i]
			u.datagram(sl)
			if sl.buf.RefCount() != 1 { // the handler kept a share: read into a fresh buffer
				size := sl.buf.Cap()
				sl.buf.Release()
				sl.buf = packet.Get(size)
			}
			sl.buf.Resize(sl.buf.Cap())
			sl.from = nil
		}
		if u.pending.Load() {
			u.finishClosed()
		}
	}
}

// datagram handles one received datagram.
func (u *udpServer) datagram(sl *udpSlot) {
	sess := u.lookup(sl)
	if sess != nil && sess.Reason() != ReasonNone {
		u.end(sess) // closed meanwhile: this datagram starts a new session
		sess = nil
	}
	if sl.trunc {
		u.srv.ep.stats.droppedDatagrams.Add(1)
		return
	}
	if sl.n == 0 { // NewLife convention: an empty datagram ends the peer's session
		if sess != nil {
			sess.closeWith(ReasonPeerClosed, nil)
			u.end(sess)
		}
		return
	}
	if sess == nil {
		if sess = u.open(sl); sess == nil {
			u.srv.ep.stats.droppedDatagrams.Add(1)
			return
		}
	}
	u.safeDeliver(sess, sl.buf, sl.n)
	if sess.draining() && sess.Reason() == ReasonNone { // AbortAfterWrites: the replies have left (deliver's flush)
		sess.endDrain()
		u.end(sess)
	}
}

// lookup finds the session of the slot's sender, or nil.
func (u *udpServer) lookup(sl *udpSlot) *Session {
	if u.byName != nil {
		return u.byName[nameOf(sl.from)]
	}
	if sl.addr == u.lastAddr && u.lastSess != nil {
		return u.lastSess
	}
	sess := u.byAddr[sl.addr]
	if sess != nil {
		u.lastAddr, u.lastSess = sl.addr, sess
	}
	return sess
}

// nameOf keys a peer of a packet connection other than a UDP socket.
func nameOf(a net.Addr) string { return a.Network() + "|" + a.String() }

// safeDeliver runs OnReceive, closing the session if it panics.
func (u *udpServer) safeDeliver(sess *Session, buf *packet.Packet, n int) {
	defer func() {
		if v := recover(); v != nil {
			sess.logPanic(v)
			sess.closeWith(ReasonError, &PanicError{Value: v})
			u.end(sess)
		}
	}()
	sess.deliver(buf, n)
}

// open starts a virtual session for the slot's sender, or returns nil when
// the server is closing. At MaxUDPPeers the least recently active of a
// sample of peers makes room ([ReasonLimit]): a flood of new source
// addresses, which are easy to forge, pushes out peers that went quiet,
// not the server's TCP connections (MaxConns is theirs alone) nor peers
// that keep talking.
func (u *udpServer) open(sl *udpSlot) *Session {
	s := u.srv
	if u.peers() >= s.ep.cfg.MaxUDPPeers && !u.evictOne() {
		return nil
	}
	out := &udpSender{u: u, addr: sl.addr, to: sl.from}
	if u.byName != nil {
		out.name = nameOf(sl.from)
	} else {
		out.to = net.UDPAddrFromAddrPort(sl.addr)
	}
	out.max = datagramMax(out.to)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	id := s.nextID.Add(1)
	sess := newSession(&s.ep, id, nil, out)
	out.sess = sess
	s.sessions.add(sess)
	s.ep.stats.opened()
	s.mu.Unlock()
	if u.byName != nil {
		u.byName[out.name] = sess
	} else {
		u.byAddr[sl.addr] = sess
		u.lastAddr, u.lastSess = sl.addr, sess
	}
	if err := sess.openSafely(); err != nil {
		sess.closeWith(ReasonError, err)
		u.end(sess)
		return nil
	}
	return sess
}

// peers returns the number of live peer sessions.
func (u *udpServer) peers() int { return len(u.byAddr) + len(u.byName) }

// each calls f for every peer session until f returns false.
func (u *udpServer) each(f func(*Session) bool) {
	for _, sess := range u.byAddr {
		if !f(sess) {
			return
		}
	}
	for _, sess := range u.byName {
		if !f(sess) {
			return
		}
	}
}

// evictSample is how many peers evictOne compares: a bounded cost per new
// peer under a flood, and with Go's random map order a fair sample.
const evictSample = 64

// evictOne ends the least recently active of up to evictSample peers.
func (u *udpServer) evictOne() bool {
	var victim *Session
	n, t := 0, now()
	u.each(func(sess *Session) bool {
		if victim == nil || sess.rxAge(t) > victim.rxAge(t) {
			victim = sess
		}
		n++
		return n < evictSample
	})
	if victim == nil {
		return false
	}
	victim.closeWith(ReasonLimit, nil)
	u.end(victim)
	return true
}

// end finishes a peer's session on the receive goroutine.
func (u *udpServer) end(sess *Session) {
	out := sess.datagramOut().(*udpSender)
	if u.lastSess == sess {
		u.lastAddr, u.lastSess = netip.AddrPort{}, nil
	}
	if u.byName != nil {
		if u.byName[out.name] != sess {
			return
		}
		delete(u.byName, out.name)
	} else {
		if u.byAddr[out.addr] != sess {
			return
		}
		delete(u.byAddr, out.addr)
	}
	sess.finish()
}

// sweep expires idle peers.
func (u *udpServer) sweep(t int64) {
	if idle := u.srv.ep.cfg.UDPPeerIdle; idle > 0 {
		var expired []*Session
		u.each(func(sess *Session) bool {
			if sess.rxAge(t) > idle {
				expired = append(expired, sess)
			}
			return true
		})
		for _, sess := range expired {
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
	u.pending.Store(false)
	u.mu.Unlock()
	for _, sess := range list {
		u.end(sess)
	}
}

// endAll finishes every peer (the socket is gone).
func (u *udpServer) endAll(r Reason) {
	var all []*Session
	u.each(func(sess *Session) bool {
		all = append(all, sess)
		return true
	})
	for _, sess := range all {
		sess.closeWith(r, nil)
		u.end(sess)
	}
}

func (u *udpServer) isStopped() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.stopped
}
