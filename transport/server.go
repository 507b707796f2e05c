package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/packet"
)

// Server accepts connections on any number of listeners (TCP, Unix, TLS, or
// a caller's net.Listener) and UDP sockets, and runs a [Session] for each
// connection or UDP peer. All methods are safe for concurrent use.
type Server struct {
	ep endpoint

	mu        sync.Mutex
	listeners []net.Listener
	udp       []*udpServer
	sessions  sessionSet
	perIP     map[netip.Addr]int // stream sessions per remote IP
	ipStreams int                // the sum of perIP: stream sessions with a remote IP
	streams   int                // live stream sessions (MaxConns); UDP peers have their own budget
	port      int                // the port shared by listeners asked for port 0
	closing   bool

	nextID  atomic.Uint64
	wg      sync.WaitGroup // accept loops, UDP loops and session goroutines
	stopped chan struct{}  // closed when the server starts shutting down
	once    sync.Once      // stop
	closed  sync.Once      // releasing the clock

	slotSize int // size of UDP receive buffers; 0: datagramBuffer (tests set less)

	poll      *poller // watches parked sessions (park.go); made on first use, ended with its last user
	pollUsers int     // sessions that acquired poll and have not ended
	pollErr   error   // why the poller could not be made: sessions do not park

	idleMu  sync.Mutex     // idle
	idle    []*worker      // workers waiting for a session to serve, the last to wait last (park.go)
	waiting atomic.Int32   // parkable sessions in receiveStream's waiting loop, each holding a goroutine (maxWaiting)
	workers sync.WaitGroup // worker goroutines, the poller's leader and its memory returns
}

// NewServer returns a server with the given settings and hooks. It listens
// on nothing until Listen, Serve or ServePacket is called.
func NewServer(cfg Config, hooks Hooks) (*Server, error) {
	cfg, err := cfg.withDefaults(true)
	if err != nil {
		return nil, err
	}
	if err := hooks.validate(); err != nil {
		return nil, err
	}
	acquireClock()
	s := &Server{
		ep:       endpoint{cfg: cfg, hooks: hooks},
		sessions: newSessionSet(!cfg.NoSessionRegistry),
		perIP:    make(map[netip.Addr]int),
		stopped:  make(chan struct{}),
	}
	s.ep.srv, s.ep.retire = s, s.forget
	s.ep.initLog()
	return s, nil
}

// Listen opens a listener and serves it. network is "tcp", "tcp4", "tcp6"
// or "unix" for streams, "udp", "udp4" or "udp6" for datagrams. Port 0
// picks a free port the first time; later Listen calls with port 0 reuse
// that port, so one server answers TCP and UDP, IPv4 and IPv6 on one port.
// With Config.ReusePort its TCP and UDP sockets set SO_REUSEPORT. It
// returns the bound address.
func (s *Server) Listen(ctx context.Context, network, address string) (net.Addr, error) {
	address, err := s.sharedPort(network, address)
	if err != nil {
		return nil, err
	}
	lc := net.ListenConfig{KeepAlive: -1} // accepted conns get their settings in admit
	if s.ep.cfg.ReusePort && network != "unix" {
		lc.Control = reusePort
	}
	switch network {
	case "tcp", "tcp4", "tcp6", "unix":
		l, err := lc.Listen(ctx, network, address)
		if err != nil {
			return nil, err
		}
		if err := s.Serve(l); err != nil {
			l.Close()
			return nil, err
		}
		s.notePort(l.Addr())
		return l.Addr(), nil
	case "udp", "udp4", "udp6":
		pc, err := lc.ListenPacket(ctx, network, address)
		if err != nil {
			return nil, err
		}
		if err := s.ServePacket(pc); err != nil {
			pc.Close()
			return nil, err
		}
		s.notePort(pc.LocalAddr())
		return pc.LocalAddr(), nil
	}
	return nil, errors.New("transport: unsupported network " + strconv.Quote(network))
}

// sharedPort replaces port 0 with the port an earlier listener got.
func (s *Server) sharedPort(network, address string) (string, error) {
	if network == "unix" {
		return address, nil
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if port == "0" && s.port != 0 {
		port = strconv.Itoa(s.port)
	}
	return net.JoinHostPort(host, port), nil
}

func (s *Server) notePort(a net.Addr) {
	var port int
	switch a := a.(type) {
	case *net.TCPAddr:
		port = a.Port
	case *net.UDPAddr:
		port = a.Port
	default:
		return
	}
	s.mu.Lock()
	if s.port == 0 {
		s.port = port
	}
	s.mu.Unlock()
}

// Port returns the port shared by this server's IP listeners, or 0.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.port
}

// Serve accepts connections from l in a new goroutine until the server is
// closed; the server closes l then. With Config.TLS set, connections are
// served as TLS.
func (s *Server) Serve(l net.Listener) error {
	if s.ep.cfg.TLS != nil {
		l = tls.NewListener(l, s.ep.cfg.TLS)
	} else if parkSupported && s.ep.cfg.ParkAfter > 0 {
		l = rawListener(l) // sessions that park hold their connection as a descriptor alone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrClosed
	}
	s.listeners = append(s.listeners, l)
	s.wg.Add(1)
	go s.acceptLoop(l)
	return nil
}

func (s *Server) acceptLoop(l net.Listener) {
	defer s.wg.Done()
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if s.isClosing() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors or a transient failure: back off as
			// net/http does, up to a second, and try again.
			s.ep.reportError(err)
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.ep.logAccept(l, err, delay)
			select {
			case <-time.After(delay):
			case <-s.stopped:
				return
			}
			continue
		}
		delay = 0
		s.admit(c)
	}
}

// reportError hands an error that ends no session to OnError.
func (ep *endpoint) reportError(err error) {
	if f := ep.hooks.OnError; f != nil {
		f(err)
	}
}

// admit applies limits and socket settings to an accepted connection and
// starts its session.
func (s *Server) admit(c net.Conn) {
	cfg := &s.ep.cfg
	ip, hasIP := remoteIP(c)
	s.mu.Lock()
	if limit := s.refusalLocked(ip, hasIP); limit != "" {
		s.mu.Unlock()
		c.Close()
		if limit != closingLimit {
			s.ep.stats.closed[ReasonLimit].Add(1)
			s.ep.logRefused(c, limit)
		}
		return
	}
	if hasIP {
		s.perIP[ip]++
		s.ipStreams++
	}
	s.streams++
	tuneConn(c, cfg)
	id := s.nextID.Add(1)
	sess := newSession(&s.ep, id, c, nil)
	sess.keepStage = sess.parkable() // a staging buffer kept between reads only where parking gives it back
	s.sessions.add(sess)
	s.ep.stats.opened()
	s.wg.Add(1)
	s.mu.Unlock()
	s.serve(sess)
}

// Adopt serves c as a stream session of the server, with no Route: a
// connection the server handed off ([RouteHandOff]) that comes back
// speaking the server's protocol inside another (SRMP in WebSocket
// messages, say). It holds no place in MaxConns or MaxConnsPerIP of its
// own: the [*HandedConn] under it holds one until it is closed. It fails
// with ErrClosed once the server is shutting down.
func (s *Server) Adopt(c net.Conn) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrClosed
	}
	id := s.nextID.Add(1)
	sess := newSession(&s.ep, id, c, nil)
	sess.flags.Or(flagAdopted)
	sess.keepStage = sess.parkable() // false: an adopted session never parks, so it keeps no staging buffer
	s.sessions.add(sess)
	s.ep.stats.opened()
	s.wg.Add(1)
	s.mu.Unlock()
	s.serve(sess)
	return nil
}

// closingLimit is refusalLocked's answer while the server shuts down.
const closingLimit = "closing"

// refusalLocked names the limit that refuses a connection from ip now
// ("MaxConns", "MaxConnsPerIP", "MaxConnsFairShare", or closingLimit), or
// returns "". Called with s.mu held.
func (s *Server) refusalLocked(ip netip.Addr, hasIP bool) string {
	switch cfg := &s.ep.cfg; {
	case s.closing:
		return closingLimit
	case s.streams >= cfg.MaxConns:
		return "MaxConns"
	case hasIP && s.perIP[ip] >= cfg.MaxConnsPerIP:
		return "MaxConnsPerIP"
	case hasIP && s.overFairShareLocked(s.perIP[ip]):
		return "MaxConnsFairShare"
	}
	return ""
}

// overFairShareLocked reports whether an IP holding n stream sessions is
// refused one more by the fair share of MaxConns's last tenth (see
// [Config.MaxConns]): once that tenth is reached, n must stay below the
// mean the other IPs hold times the fraction of the tenth still free.
// It costs the same whatever the number of IPs. Called with s.mu held and
// s.streams below MaxConns.
func (s *Server) overFairShareLocked(n int) bool {
	maxConns := s.ep.cfg.MaxConns
	tenth := maxConns / 10
	free := maxConns - s.streams
	others := len(s.perIP) - 1 // IPs other than this one holding streams (n > 0: it is in perIP)
	if n == 0 || tenth == 0 || free > tenth || others == 0 {
		return false
	}
	// n ≥ (others' streams / others) × free / tenth, in floating point:
	// the integer products overflow for a MaxConns near NoLimit.
	return float64(n)*float64(others)*float64(tenth) >= float64(s.ipStreams-n)*float64(free)
}

// forget removes an ended session from the server's set and the per-IP counts.
func (s *Server) forget(sess *Session) {
	ip, hasIP := remoteIP(sess.conn) // (a UDP peer's, nil, counts in no budget)
	s.mu.Lock()
	s.sessions.remove(sess)
	s.ep.stats.retired.absorb(&sess.io)
	sess.flags.Or(flagRetired)
	// UDP peers count in neither budget of streams; a connection handed
	// off or adopted keeps (or holds) its place through its HandedConn.
	if !sess.datagram && !sess.has(flagAdopted) && sess.Reason() != ReasonHandedOff {
		s.releaseSlotLocked(ip, hasIP)
	}
	s.mu.Unlock()
}

// releaseSlot gives a stream connection's place in MaxConns and
// MaxConnsPerIP back.
func (s *Server) releaseSlot(ip netip.Addr, hasIP bool) {
	s.mu.Lock()
	s.releaseSlotLocked(ip, hasIP)
	s.mu.Unlock()
}

func (s *Server) releaseSlotLocked(ip netip.Addr, hasIP bool) {
	s.streams--
	if hasIP {
		s.ipStreams--
		if s.perIP[ip]--; s.perIP[ip] <= 0 {
			delete(s.perIP, ip)
		}
	}
}

// remoteIP returns the IP of c's peer, for a TCP or UDP connection.
func remoteIP(c net.Conn) (netip.Addr, bool) {
	if c == nil {
		return netip.Addr{}, false
	}
	if p, ok := c.(interface{ peer() netip.AddrPort }); ok { // a descriptor's: no address made
		ap := p.peer()
		return ap.Addr().Unmap(), ap.IsValid()
	}
	switch a := c.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap(), true
	case *net.UDPAddr:
		return a.AddrPort().Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.ep.stats.snapshot()
	s.sessions.all(func(sess *Session) { sess.io.addTo(&st) })
	st.UDPPeers = int64(s.sessions.len() - s.streams)
	st.Parked = s.poll.parkedCount()
	if !s.closing {
		st.ReadBufferBytes = s.ep.stats.readBuffers.Load()
		for _, u := range s.udp {
			st.ReadBufferBytes += int64(len(u.slots)) * int64(u.slotBytes)
		}
	}
	return st
}

// SendQueues returns the state of the live sessions' send queues, summed.
// It takes each session's lock in turn (and allocates a copy of the
// session list): a cost per call of SendQueues, for a scrape, not per
// message.
func (s *Server) SendQueues() QueueStats {
	var q QueueStats
	for _, sess := range s.snapshot() {
		sq := sess.SendQueue()
		q.Messages += sq.Messages
		q.Bytes += sq.Bytes
		q.Waiting += sq.Waiting
	}
	return q
}

// SessionCount returns the number of live sessions.
func (s *Server) SessionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions.len()
}

// Session returns the live session with the given ID. With
// Config.NoSessionRegistry it finds nothing.
func (s *Server) Session(id uint64) (*Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions.lookup(id)
}

// Range calls f for each live session until f returns false. Sessions that
// open or close meanwhile may or may not be seen.
func (s *Server) Range(f func(*Session) bool) {
	for _, sess := range s.snapshot() {
		if !f(sess) {
			return
		}
	}
}

func (s *Server) snapshot() []*Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions.copyList()
}

// Broadcast sends p to every live session for which filter (if not nil)
// returns true, sharing p's bytes, and returns how many sends were queued.
// It never waits for a peer: each session gets p by Enqueue, so a peer
// that does not read holds up neither the call nor the others. It takes
// ownership of p.
func (s *Server) Broadcast(p *packet.Packet, filter func(*Session) bool) int {
	defer p.Release()
	n := 0
	for _, sess := range s.snapshot() {
		if filter == nil || filter(sess) {
			if sess.Enqueue(p.Share()) == nil {
				n++
			}
		}
	}
	return n
}

// stop marks the server closing and closes its listeners and sockets so
// that no new sessions start.
func (s *Server) stop() {
	s.once.Do(func() {
		s.mu.Lock()
		s.closing = true
		ls, us := s.listeners, s.udp
		s.mu.Unlock()
		close(s.stopped)
		for _, l := range ls {
			l.Close()
		}
		for _, u := range us {
			u.stop()
		}
	})
}

// Close closes the listeners and every session at once ([ReasonShutdown]) and
// waits for the server's goroutines to end. It is idempotent.
func (s *Server) Close() error {
	s.stop()
	for _, sess := range s.snapshot() {
		sess.closeWith(ReasonShutdown, nil)
	}
	s.wg.Wait()
	s.mu.Lock()
	p := s.poll
	s.mu.Unlock()
	if p != nil { // every session has ended: none is parked (the last one stops it, normally)
		p.stop()
	}
	s.workers.Wait()   // stop made the waiting ones return, and the poller's leader
	s.ep.limits.Stop() // the lines held back are reported now
	s.closed.Do(releaseClock)
	return nil
}

// Shutdown stops accepting, lets each session finish the handler it is
// running and write what it has queued, then closes it ([ReasonShutdown]).
// If ctx ends first, the remaining sessions are closed at once and ctx's
// error is returned. It is idempotent, and safe to combine with Close.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stop()
	for _, sess := range s.snapshot() {
		sess.flags.Or(flagDraining) // (a drain started already keeps its reason)
		if sess.conn != nil {
			sess.interruptRead()
		} else {
			sess.closeWith(ReasonShutdown, nil)
		}
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return s.Close()
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	}
}
