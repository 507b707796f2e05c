package transport

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/lifenet/lifenet/packet"
)

// Route is what a server's [Hooks.Route] decides about a stream
// connection from its first bytes: which protocol stack serves it, for
// the connection's whole life.
type Route uint8

const (
	// RouteMore asks for more bytes: the ones so far do not decide yet.
	RouteMore Route = iota
	// RouteServe serves the connection here: its session gets its handler
	// ([Hooks.NewHandler], then OnOpen) and the bytes read so far.
	RouteServe
	// RouteHandOff gives the connection to [Hooks.HandOff], as a
	// [*HandedConn] that replays the bytes read so far; the session ends
	// (ReasonHandedOff) without closing it.
	RouteHandOff
)

// HandedConn is a connection a server handed off ([RouteHandOff]): the
// accepted connection, whose Read first returns the bytes the server read
// to route it. It keeps its place in the server's MaxConns and
// MaxConnsPerIP until it is closed. Its methods are safe for concurrent
// use as a net.Conn's are; Read is not concurrent with itself.
type HandedConn struct {
	net.Conn
	id      uint64
	first   []byte
	release func()
	once    sync.Once
}

// Read returns the bytes read before the hand-off, then reads the
// connection.
func (c *HandedConn) Read(b []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(b, c.first)
		c.first = c.first[n:]
		if len(c.first) == 0 {
			c.first = nil
		}
		return n, nil
	}
	return c.Conn.Read(b)
}

// Close closes the connection and gives its place back to the server's
// limits (once).
func (c *HandedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// ID returns the ID the connection's session had: unique within its server.
func (c *HandedConn) ID() uint64 { return c.id }

// NetConn returns the connection under c (a *tls.Conn for TLS), as
// [crypto/tls.Conn.NetConn] does.
func (c *HandedConn) NetConn() net.Conn { return c.Conn }

// errRouteTimeout is the cause of a connection whose first bytes did not
// decide its route within Hooks.RouteTimeout.
var errRouteTimeout = errors.New("transport: the first bytes did not show the protocol in time")

// routeState is how route ended.
type routeState uint8

const (
	routeServe  routeState = iota // Route chose RouteServe: the session is served here
	routeEnded                    // the session ended, or was handed off
	routeParked                   // nothing came for Config.ParkAfter: the session parked
)

// route reads a stream session's first bytes into buf until Hooks.Route
// decides, and returns how many were read when it decides RouteServe.
// It reads into *buf (of *size bytes), and moves the bytes into a buffer
// of ReadBufferSize when they fill a smaller one before Route decides.
func (s *Session) route(buf **packet.Packet, size *int) (n int, st routeState) {
	hooks := &s.ep.hooks
	b := (*buf).Bytes()
	pre, st, waited := s.readFirstNow(b) // before the first byte: no goroutine waits for it
	if waited {
		return 0, st
	}
	at, parkAt := s.readDeadline(s.resumed)
	s.resumed = false
	s.conn.SetReadDeadline(at)
	for {
		if s.draining() {
			s.closeWith(ReasonShutdown, nil)
			return 0, routeEnded
		}
		var m int
		var err error
		if pre > 0 {
			m, pre = pre, 0
		} else {
			m, err = s.conn.Read(b[n:])
		}
		if m > 0 && n == 0 { // from the first byte on: RouteTimeout, and no parking
			parkAt = false
			if hooks.RouteTimeout > 0 {
				s.conn.SetReadDeadline(time.Now().Add(hooks.RouteTimeout))
			} else {
				s.conn.SetReadDeadline(s.endOfWait())
			}
		}
		n += m
		if n > 0 {
			full := n == len(b) && *size >= s.ep.cfg.ReadBufferSize
			switch r := hooks.Route(b[:n], full); {
			case r == RouteHandOff:
				s.handOff(b[:n])
				return 0, routeEnded
			case r == RouteServe || full:
				s.conn.SetReadDeadline(time.Time{})
				return n, routeServe
			}
			if n == len(b) { // more is wanted than the first buffer holds
				bigger := s.getReadBuffer(s.ep.cfg.ReadBufferSize)
				copy(bigger.Bytes(), b[:n])
				s.putReadBuffer(*buf, *size)
				*buf, *size = bigger, s.ep.cfg.ReadBufferSize
				b = bigger.Bytes()
			}
		}
		if err != nil && !s.draining() {
			if parkAt && errors.Is(err, os.ErrDeadlineExceeded) {
				if s.park(s.endOfWait()) {
					return 0, routeParked
				}
				at, parkAt = s.readDeadline(false)
				s.conn.SetReadDeadline(at)
				continue
			}
			r, cause := s.readReason(err, false), causeOf(err)
			if n > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
				r, cause = ReasonProtocol, errRouteTimeout
			}
			s.closeWith(r, cause)
			return 0, routeEnded
		}
	}
}

// readFirstNow reads a parkable session's first bytes into b without
// waiting: n > 0 of them; or none yet, and the session parked (done, with
// routeParked) or ended (done, routeEnded); or done false and n == 0 when
// it cannot park now (read on, waiting).
func (s *Session) readFirstNow(b []byte) (n int, st routeState, done bool) {
	if !s.parkable() {
		return 0, routeServe, false
	}
	rc, err := s.conn.(syscall.Conn).SyscallConn()
	if err != nil {
		return 0, routeServe, false
	}
	if s.resumed {
		s.conn.SetReadDeadline(time.Time{}) // a parking deadline may be left, expired: it would fail the read
	}
	m, wouldBlock, err := readNow(rc, b)
	switch {
	case m > 0:
		return m, routeServe, false
	case wouldBlock:
		end := s.endOfWait()
		if !end.IsZero() && !timeOf(now()).Before(end) { // the sweep woke it: the wait is over
			s.closeWith(ReasonFirstByte, nil)
			return 0, routeEnded, true
		}
		if s.park(end) {
			return 0, routeParked, true
		}
		return 0, routeServe, false
	case s.draining():
		return 0, routeServe, false // the loop's top drains
	}
	s.closeWith(s.readReason(err, false), causeOf(err))
	return 0, routeEnded, true
}

// handOff ends the session without closing its connection, which goes to
// Hooks.HandOff with the bytes read so far (copied: buf is reused).
func (s *Session) handOff(first []byte) {
	if !s.setReason(ReasonHandedOff) {
		return // closing already: the connection closes with the session
	}
	s.conn.SetReadDeadline(time.Time{})
	hc := &HandedConn{Conn: s.conn, id: s.id, first: append([]byte(nil), first...), release: func() {}}
	if srv := s.owner(); srv != nil {
		ip, hasIP := remoteIP(s.conn)
		hc.release = func() { srv.releaseSlot(ip, hasIP) }
	}
	s.ep.hooks.HandOff(hc)
}
