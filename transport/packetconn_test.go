package transport_test

import (
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// A server serves an in-memory net.PacketConn whose addresses are not UDP
// addresses: peers get their own sessions, replies reach the right peer,
// and an empty datagram ends a peer's session.
func TestServePacketInMemory(t *testing.T) {
	leakcheck.Check(t)
	mem := newMemNet()
	closed := make(chan transport.Reason, 4)
	srv, err := transport.NewServer(transport.Config{}, transport.Hooks{
		OnReceive: func(s *transport.Session, p *packet.Packet) {
			reply := packet.Get(0)
			reply.Write([]byte(s.RemoteAddr().String() + ":"))
			reply.Write(p.Bytes())
			s.Send(reply)
		},
		OnClose: func(s *transport.Session, err *transport.CloseError) { closed <- err.Reason },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.ServePacket(mem.listen("server")); err != nil {
		t.Fatal(err)
	}
	alice, bob := mem.listen("alice"), mem.listen("bob")
	defer alice.Close()
	defer bob.Close()
	to := memAddr("server")
	for i := 0; i < 3; i++ {
		alice.WriteTo([]byte("hi"), to)
		bob.WriteTo([]byte("yo"), to)
		if got := readDatagram(t, alice); got != "alice:hi" {
			t.Fatalf("alice got %q", got)
		}
		if got := readDatagram(t, bob); got != "bob:yo" {
			t.Fatalf("bob got %q", got)
		}
	}
	if n := srv.SessionCount(); n != 2 {
		t.Fatalf("%d sessions, want one per peer (2)", n)
	}
	alice.WriteTo(nil, to)
	if r := <-closed; r != transport.ReasonPeerClosed {
		t.Fatalf("empty datagram closed with %v, want %v", r, transport.ReasonPeerClosed)
	}
	waitUntil(t, "alice's session to end", func() bool { return srv.SessionCount() == 1 })
}

func readDatagram(t *testing.T, pc net.PacketConn) string {
	t.Helper()
	pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 64)
	n, _, err := pc.ReadFrom(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[:n])
}

// memNet is an in-memory datagram network: conns addressed by name,
// datagrams copied into the receiver's queue (dropped when it is full).
type memNet struct {
	mu    sync.Mutex
	conns map[memAddr]*memPacketConn
}

func newMemNet() *memNet { return &memNet{conns: make(map[memAddr]*memPacketConn)} }

func (m *memNet) listen(name string) *memPacketConn {
	c := &memPacketConn{net: m, addr: memAddr(name), in: make(chan memDatagram, 64),
		done: make(chan struct{}), deadline: make(chan struct{})}
	m.mu.Lock()
	m.conns[c.addr] = c
	m.mu.Unlock()
	return c
}

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

type memDatagram struct {
	from memAddr
	b    []byte
}

type memPacketConn struct {
	net  *memNet
	addr memAddr
	in   chan memDatagram
	once sync.Once
	done chan struct{}

	mu       sync.Mutex
	timer    *time.Timer
	deadline chan struct{} // closed when the read deadline passes
}

func (c *memPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	c.mu.Lock()
	expired := c.deadline
	c.mu.Unlock()
	select {
	case d := <-c.in:
		return copy(b, d.b), d.from, nil
	case <-c.done:
		return 0, nil, net.ErrClosed
	case <-expired:
		return 0, nil, os.ErrDeadlineExceeded
	}
}

func (c *memPacketConn) WriteTo(b []byte, to net.Addr) (int, error) {
	c.net.mu.Lock()
	peer := c.net.conns[to.(memAddr)]
	c.net.mu.Unlock()
	if peer == nil {
		return 0, &net.OpError{Op: "write", Net: "mem", Addr: to, Err: os.ErrNotExist}
	}
	select {
	case peer.in <- memDatagram{from: c.addr, b: append([]byte(nil), b...)}:
	default: // a full queue drops, as a socket buffer does
	}
	return len(b), nil
}

func (c *memPacketConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.net.mu.Lock()
		delete(c.net.conns, c.addr)
		c.net.mu.Unlock()
		c.SetReadDeadline(time.Time{})
	})
	return nil
}

func (c *memPacketConn) LocalAddr() net.Addr { return c.addr }

func (c *memPacketConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *memPacketConn) SetWriteDeadline(time.Time) error { return nil }

func (c *memPacketConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	expired := make(chan struct{})
	c.deadline = expired
	switch {
	case t.IsZero():
	case !t.After(time.Now()):
		close(expired)
	default:
		c.timer = time.AfterFunc(time.Until(t), func() { close(expired) })
	}
	return nil
}
