package transport_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// A send on a session that has ended leaves nothing: its error matches
// ErrNotWritten as well as ErrClosed, so a request sent so can go again on
// a new connection.
func TestSendOnAClosedSessionIsNotWritten(t *testing.T) {
	leakcheck.Check(t)
	c, _ := dialPlainPeer(t)
	c.Close()
	for name, err := range map[string]error{
		"SendBytes": c.SendBytes([]byte("late")),
		"Send":      c.Session().Send(packet.Wrap([]byte("late"))),
	} {
		if !errors.Is(err, transport.ErrClosed) || !errors.Is(err, transport.ErrNotWritten) {
			t.Errorf("%s after Close: %v, want ErrClosed and ErrNotWritten", name, err)
		}
	}
}

// A peer that reset the connection takes no byte of the next send: the
// send fails with ErrNotWritten whether the reset was seen before the send
// (the session closed) or by its write.
func TestSendAfterAResetIsNotWritten(t *testing.T) {
	leakcheck.Check(t)
	c, peer := dialPlainPeer(t)
	resetThenSendIsNotWritten(t, c, peer)
}

// resetThenSendIsNotWritten resets c's connection from its peer's end and
// fails t unless c's sends then fail with ErrClosed and ErrNotWritten
// (within 5 s: the reset may take a send or two to be seen).
func resetThenSendIsNotWritten(t *testing.T, c *transport.Client, peer net.Conn) {
	t.Helper()
	peer.(*net.TCPConn).SetLinger(0)
	peer.Close() // a reset
	var err error
	for deadline := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(deadline); {
		err = c.SendBytes([]byte("after the reset"))
	}
	if !errors.Is(err, transport.ErrClosed) || !errors.Is(err, transport.ErrNotWritten) {
		t.Fatalf("send after a reset: %v, want ErrClosed and ErrNotWritten", err)
	}
}

// A write that fails part way may have delivered the message: its error is
// ErrClosed without ErrNotWritten.
func TestSendThatFailsPartWayIsNotNotWritten(t *testing.T) {
	leakcheck.Check(t)
	addr, accepted := plainPeer(t) // never reads
	cfg := transport.ClientConfig{}
	cfg.WriteTimeout = 3 * time.Second // well past the coarse clock's lag and a loaded machine's copy of 64 MiB, so the write starts before its deadline
	c, err := transport.Dial(context.Background(), "tcp", addr, cfg, transport.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	peer := <-accepted
	t.Cleanup(func() { peer.Close() })
	err = c.SendBytes(make([]byte, 64<<20)) // more than loopback's socket buffers hold
	if !errors.Is(err, transport.ErrClosed) || errors.Is(err, transport.ErrNotWritten) {
		t.Fatalf("a write cut off by its timeout part way: %v, want ErrClosed without ErrNotWritten", err)
	}
	if r := c.Session().Reason(); r != transport.ReasonWriteTimeout {
		t.Errorf("session closed for %v, want %v", r, transport.ReasonWriteTimeout)
	}
}

// A message too large for one datagram is refused before it is queued
// (ErrDatagramTooLarge, ErrNotWritten), and the UDP session stays open for
// the next one.
func TestDatagramTooLargeIsRefusedAndTheSessionStays(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "udp", "127.0.0.1:0")
	c := dialClient(t, "udp", a, transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
	err := c.SendBytes(make([]byte, transport.MaxDatagram+1))
	if !errors.Is(err, transport.ErrDatagramTooLarge) || !errors.Is(err, transport.ErrNotWritten) {
		t.Fatalf("a %d-byte datagram: %v, want ErrDatagramTooLarge and ErrNotWritten", transport.MaxDatagram+1, err)
	}
	if err := c.SendBytes([]byte("still open")); err != nil {
		t.Fatalf("the next datagram: %v", err)
	}
	if got := receiveString(t, c, 10); got != "still open" {
		t.Fatalf("echo after the refused datagram: %q", got)
	}
	if r := c.Session().Reason(); r != transport.ReasonNone {
		t.Fatalf("the refused datagram closed the session: %v", r)
	}
}
