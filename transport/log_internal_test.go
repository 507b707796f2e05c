package transport

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/lifenet/lifenet/internal/logattr"
)

// testEndpoint returns an endpoint logging to a text handler at level,
// and a session of it.
func testEndpoint(t *testing.T, level slog.Level) (*endpoint, *Session) {
	ep := &endpoint{cfg: Config{Log: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: level}))}}
	ep.initLog()
	t.Cleanup(ep.limits.Stop)
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2}
	return ep, newSession(ep, 7, &addrConn{local: local, remote: remote}, nil)
}

// addrConn is a connection that has its addresses and nothing else.
type addrConn struct {
	net.Conn
	local, remote net.Addr
}

func (c *addrConn) LocalAddr() net.Addr  { return c.local }
func (c *addrConn) RemoteAddr() net.Addr { return c.remote }

// lines are every line the transport writes, as a test runs them.
func lines(ep *endpoint, s *Session) []struct {
	name string
	f    func()
} {
	var c net.TCPConn // its addresses are nil
	var pc net.UDPConn
	l := &stubListener{addr: s.LocalAddr()}
	cause := errors.New("cause")
	return []struct {
		name string
		f    func()
	}{
		{"opened", s.logOpened},
		{"closed by the peer", func() { s.logClosed(ReasonPeerClosed, nil) }},
		{"closed by a limit", func() { s.logClosed(ReasonLimit, cause) }},
		{"closed on a protocol violation", func() { s.logClosed(ReasonProtocol, cause) }},
		{"refused", func() { ep.logRefused(&c, "MaxConns") }},
		{"accept failed", func() { ep.logAccept(l, cause, 0) }},
		{"UDP read failed", func() { ep.logRead(&pc, cause) }},
		{"panic", func() { s.logPanic("boom") }},
	}
}

type stubListener struct {
	net.Listener
	addr net.Addr
}

func (l *stubListener) Addr() net.Addr { return l.addr }

// With their level off, the lines allocate nothing: nothing is formatted
// before Enabled says yes. The default logger (Info) has Debug off.
func TestLogDisabledAllocs(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelError + 4} {
		ep, s := testEndpoint(t, level)
		for _, l := range lines(ep, s) {
			if n := testing.AllocsPerRun(1000, l.f); n != 0 {
				t.Errorf("%s with the logger at %v: %v allocations per line", l.name, level, n)
			}
		}
	}
	ep := &endpoint{}
	ep.initLog() // slog.Default()
	defer ep.limits.Stop()
	s := newSession(ep, 1, &addrConn{local: &net.TCPAddr{}, remote: &net.TCPAddr{}}, nil)
	for _, f := range []func(){s.logOpened, func() { s.logClosed(ReasonPeerClosed, nil) }} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("a Debug line on the default logger: %v allocations", n)
		}
	}
}

// A Warn line past its burst, with Debug off, allocates nothing either: a
// storm of hostile connections costs a counter increment each.
func TestLogSuppressedAllocs(t *testing.T) {
	ep, s := testEndpoint(t, slog.LevelWarn)
	for range logattr.Burst + 1 { // the burst, and the first refused line, which makes the interval's timer
		s.logClosed(ReasonLimit, nil)
		ep.logRefused(&net.TCPConn{}, "MaxConns")
	}
	if n := testing.AllocsPerRun(1000, func() { s.logClosed(ReasonLimit, nil) }); n != 0 {
		t.Errorf("a suppressed close line: %v allocations", n)
	}
}
