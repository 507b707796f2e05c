//go:build linux

package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// A parked session holds its connection as a descriptor alone: not in
// the runtime's poller (no *os.File, no netFD). Heartbeats are read and
// answered without attaching it; a session that turns busy (waits for
// bytes) attaches it, and detaches it again when it parks; a Close of a
// detached connection reaches the peer.
func TestParkedConnectionIsADescriptorAlone(t *testing.T) {
	leakcheck.Check(t)
	srv, c, sessions := startParkServer(t, Hooks{
		OnReceive: func(s *Session, p *packet.Packet) { s.SendBytes(p.Bytes()) },
	})
	s := <-sessions
	fc, ok := s.Conn().(*fdConn)
	if !ok {
		t.Fatalf("a parkable server session's connection is a %T; want a descriptor held by the transport", s.Conn())
	}
	echo := func(msg string) { t.Helper(); echoOver(t, c, msg) }
	detached := func(what string) {
		t.Helper()
		waitParked(t, srv, what)
		deadline := time.Now().Add(10 * time.Second)
		for fc.attached() {
			if time.Now().After(deadline) {
				t.Fatalf("parked %s, the connection is still in the runtime's poller", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	echo("hello")
	detached("after its first message")
	for i := range 3 { // heartbeats: each wakes the session, which answers and parks
		time.Sleep(300 * time.Millisecond) // a quiet spell longer than ParkAfter on the coarse clock (clockTick)
		echo("beat")
		if fc.attached() && i > 0 {
			t.Fatalf("heartbeat %d attached the connection", i)
		}
		detached("after a heartbeat")
	}
	// Busy: messages closer together than ParkAfter make the session wait
	// for bytes on its goroutine, attached.
	for range 20 {
		echo("busy")
	}
	detached("after a busy spell")
	if got := s.RemoteAddr().String(); got != c.LocalAddr().String() {
		t.Errorf("RemoteAddr %s; want the client's %s", got, c.LocalAddr())
	}
	if got := s.LocalAddr().String(); got != c.RemoteAddr().String() {
		t.Errorf("LocalAddr %s; want the server's %s", got, c.RemoteAddr())
	}
	s.Close()
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after a detached session's Close: read %d, %v; want EOF", n, err)
	}
	if _, err := fc.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v; want net.ErrClosed", err)
	}
	if _, err := fc.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v; want net.ErrClosed", err)
	}
}

// A reply larger than the socket takes at once, to a parked session's
// detached connection, waits for room (attached) and arrives whole; with
// a peer that never reads, the write deadline set while detached ends it.
func TestDetachedConnectionWritesWhatTheSocketCannotTakeAtOnce(t *testing.T) {
	leakcheck.Check(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB: more than loopback's socket buffers hold
	for _, reading := range []bool{true, false} {
		closed := make(chan *CloseError, 1)
		sessions := make(chan *Session, 1)
		cfg := Config{ParkAfter: 20 * time.Millisecond}
		if !reading {
			cfg.WriteTimeout = 300 * time.Millisecond
		}
		srv, c := dialNewServer(t, cfg, Hooks{
			OnOpen: func(s *Session) { sessions <- s },
			OnReceive: func(s *Session, p *packet.Packet) {
				if err := s.SendBytes(big); err != nil {
					t.Logf("send: %v", err)
				}
			},
			OnClose: func(s *Session, e *CloseError) { closed <- e },
		})
		readReply := func(what string) {
			t.Helper()
			got := make([]byte, len(big))
			if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, big) {
				t.Fatalf("reading the reply %s: %v", what, err)
			}
		}
		c.Write([]byte("hi")) // a new connection's, detached from the start
		s := <-sessions
		if !reading {
			if e := <-closed; e.Reason != ReasonWriteTimeout {
				t.Fatalf("closed by %v; want the write timeout", e)
			}
			c.Close()
			srv.Close()
			continue
		}
		readReply("to the first message")
		waitParked(t, srv, "after its first reply")
		for deadline := time.Now().Add(10 * time.Second); s.Conn().(*fdConn).attached(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("parked, the connection stays attached")
			}
		}
		time.Sleep(300 * time.Millisecond) // quiet (clockTick): the next message is a heartbeat's
		c.Write([]byte("again"))
		readReply("to a heartbeat")
		c.Close()
		if e := <-closed; e.Reason != ReasonPeerClosed {
			t.Fatalf("closed by %v; want the peer's close", e)
		}
		srv.Close()
	}
}

// A connection accepted as a descriptor takes the socket settings of the
// server's Config, as one accepted by the net package does.
func TestAcceptedDescriptorTakesTheSocketSettings(t *testing.T) {
	leakcheck.Check(t)
	for _, tc := range []struct {
		cfg       Config
		noDelay   int
		keepAlive int
		keepIdle  int
	}{
		{Config{NoDelay: NoDelayOn, KeepAlive: 30 * time.Second}, 1, 1, 30},
		{Config{NoDelay: NoDelayAuto, KeepAlive: -1}, 0, 0, -1},
	} {
		sessions := make(chan *Session, 1)
		tc.cfg.ParkAfter = 20 * time.Millisecond
		srv, c := dialNewServer(t, tc.cfg, Hooks{OnOpen: func(s *Session) { sessions <- s }})
		c.Write([]byte("hi"))
		s := <-sessions
		if _, ok := s.Conn().(*fdConn); !ok {
			t.Fatalf("session connection %T; want a descriptor", s.Conn())
		}
		if got := sockopt(t, s, syscall.IPPROTO_TCP, syscall.TCP_NODELAY); (got != 0) != (tc.noDelay != 0) {
			t.Errorf("%+v: TCP_NODELAY %d; want %d", tc.cfg.NoDelay, got, tc.noDelay)
		}
		if got := sockopt(t, s, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); (got != 0) != (tc.keepAlive != 0) {
			t.Errorf("KeepAlive %v: SO_KEEPALIVE %d; want %d", tc.cfg.KeepAlive, got, tc.keepAlive)
		}
		if tc.keepIdle > 0 {
			if got := sockopt(t, s, syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE); got != tc.keepIdle {
				t.Errorf("KeepAlive %v: TCP_KEEPIDLE %d; want %d", tc.cfg.KeepAlive, got, tc.keepIdle)
			}
		}
		c.Close()
		srv.Close()
	}
}

// A descriptor's connection is a 48-byte object (every parked connection
// has one) and keeps its peer's address, IPv4 or IPv6, as the kernel gave
// it at accept.
func TestDescriptorKeepsThePeersAddressIn48Bytes(t *testing.T) {
	leakcheck.Check(t)
	if n := unsafe.Sizeof(fdConn{}); n > 48 {
		t.Errorf("fdConn is %d bytes, want at most 48", n)
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			remote := make(chan net.Addr, 1)
			srv, err := NewServer(Config{ParkAfter: 20 * time.Millisecond}, Hooks{OnOpen: func(s *Session) {
				if _, ok := s.Conn().(*fdConn); !ok {
					remote <- nil
					return
				}
				remote <- s.Conn().RemoteAddr()
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			a, err := srv.Listen(context.Background(), "tcp", addr)
			if err != nil {
				t.Skipf("no %s here: %v", addr, err)
			}
			c, err := net.Dial("tcp", a.String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got := <-remote
			if got == nil {
				t.Fatal("the session's connection is not a descriptor held by the transport")
			}
			if got.String() != c.LocalAddr().String() {
				t.Errorf("the session's peer is %s; want the client's %s", got, c.LocalAddr())
			}
		})
	}
}

// A deadline kept as a stamp comes back no earlier than it was set and
// less than a stamp unit later; none stays none, a passed one stays
// passed, and one beyond the stamps' reach counts as none.
func TestDeadlineStampsComeBackNoEarlier(t *testing.T) {
	for _, ahead := range []time.Duration{time.Second, 30*time.Second + 7, 300 * 24 * time.Hour} { // (not passed before deadlineOf runs, on a loaded machine too)
		want := time.Now().Add(ahead)
		got := deadlineOf(deadlineStamp(want))
		if got.Before(want) || !got.Before(want.Add(1<<stampShift)) {
			t.Errorf("a deadline %v ahead came back %v off", ahead, got.Sub(want))
		}
	}
	if s := deadlineStamp(time.Time{}); s != 0 {
		t.Errorf("no deadline kept as %d", s)
	}
	now := time.Now()
	for _, passed := range []time.Time{now.Add(-time.Millisecond), time.Unix(1, 0)} {
		if s := deadlineStamp(passed); s == 0 || !deadlineOf(s).Before(time.Now()) {
			t.Errorf("the passed deadline %v came back as %d, %v", passed, s, deadlineOf(s))
		}
	}
	if s := deadlineStamp(now.Add(2 * 365 * 24 * time.Hour)); s != 0 {
		t.Errorf("a deadline two years ahead kept as %d; want none", s)
	}
}

// Deadlines set on a detached descriptor hold when a read attaches it: a
// read deadline ends the read no earlier than set, a passed one at once,
// and a cleared one lets the read wait for the peer's bytes.
func TestDetachedDescriptorKeepsItsDeadlines(t *testing.T) {
	leakcheck.Check(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := rawListener(l)
	defer fl.Close()
	peer, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	nc, err := fl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, ok := nc.(*fdConn)
	if !ok || c.attached() {
		t.Fatalf("accepted a %T, attached %v; want a detached descriptor", nc, ok && c.attached())
	}
	buf := make([]byte, 1)

	set := time.Now().Add(150 * time.Millisecond)
	c.SetReadDeadline(set)
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past a deadline set while detached: %v", err)
	}
	if early := time.Until(set); early > 0 {
		t.Fatalf("the read ended %v before its deadline", early)
	}

	c.detach()
	c.SetReadDeadline(time.Unix(1, 0))
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past a passed deadline set while detached: %v", err)
	}

	c.detach()
	c.SetReadDeadline(time.Time{})
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(buf); n != 1 || err != nil || buf[0] != 'x' {
		t.Fatalf("read with the deadline cleared while detached: %d, %v", n, err)
	}
}
