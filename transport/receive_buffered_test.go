package transport_test

import (
	"context"
	"errors"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// ReceiveBuffered hands over what already waits in the socket without
// blocking, returns nothing when nothing waits, and reports the peer's
// close like Receive.
func TestReceiveBufferedDoesNotWait(t *testing.T) {
	leakcheck.Check(t)
	c, peer := syncClientAndPeer(t)
	if p, err := c.ReceiveBuffered(); p != nil || err != nil {
		t.Fatalf("nothing sent yet: %v, %v", p, err)
	}
	peer.Write([]byte("early")) // on loopback the bytes are in c's socket once Write returns
	p, err := c.ReceiveBuffered()
	if err != nil || p == nil || string(p.Bytes()) != "early" {
		t.Fatalf("buffered bytes: %v, %v", p, err)
	}
	p.Release()
	if p, err := c.ReceiveBuffered(); p != nil || err != nil {
		t.Fatalf("after draining: %v, %v", p, err)
	}
	peer.Close()
	for { // the FIN may take a moment to be seen
		p, err := c.ReceiveBuffered()
		if p != nil {
			t.Fatalf("data after close: %q", p.Bytes())
		}
		if err != nil {
			var ce *transport.CloseError
			if !errors.As(err, &ce) || ce.Reason != transport.ReasonPeerClosed {
				t.Fatalf("after the peer closed: %v", err)
			}
			break
		}
		runtime.Gosched()
	}
}

// A peer that resets the connection (an RST, not a FIN) ends the session
// at the next ReceiveBuffered as a peer's close, with the reset as its
// cause: the drain's recv fails with an error that is not "nothing yet".
func TestReceiveBufferedReportsAReset(t *testing.T) {
	leakcheck.Check(t)
	c, peer := syncClientAndPeer(t)
	peer.SetLinger(0) // Close sends an RST
	peer.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, err := c.ReceiveBuffered()
		if p != nil {
			t.Fatalf("data from a reset: %q", p.Bytes())
		}
		if err != nil {
			var ce *transport.CloseError
			if !errors.As(err, &ce) || ce.Reason != transport.ReasonPeerClosed || !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("after the peer's reset: %v", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the reset was never seen")
		}
		runtime.Gosched()
	}
}

// Only a ReceiveSync client reads on the caller's goroutine; in the other
// modes ReceiveBuffered leaves the socket to the receive goroutine.
func TestReceiveBufferedOnlyInSyncMode(t *testing.T) {
	leakcheck.Check(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte("x"))
			c.Close()
		}
	}()
	c, err := transport.Dial(context.Background(), "tcp", l.Addr().String(),
		transport.ClientConfig{Mode: transport.ReceivePull}, transport.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p, err := c.ReceiveBuffered(); p != nil || err != nil {
		t.Fatalf("pull mode: %v, %v", p, err)
	}
}

// A Wake that no Receive has taken yet (its read deadline in the past)
// does not stop ReceiveBuffered, which never waits, and is not used up by
// it: the next Receive still returns ErrWoken, and the one after reads on.
func TestReceiveBufferedReadsPastAPendingWake(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})
	c.Wake()
	c.SendBytes([]byte("abc"))
	var got []byte
	for deadline := time.Now().Add(5 * time.Second); len(got) < 3 && time.Now().Before(deadline); {
		p, err := c.ReceiveBuffered()
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			runtime.Gosched()
			continue
		}
		got = append(got, p.Bytes()...)
		p.Release()
	}
	if string(got) != "abc" {
		t.Fatalf("ReceiveBuffered under a pending Wake: %q", got)
	}
	if _, err := c.Receive(context.Background()); !errors.Is(err, transport.ErrWoken) {
		t.Fatalf("the Receive after: %v, want ErrWoken", err)
	}
	c.SendBytes([]byte("ok"))
	if s := receiveString(t, c, 2); s != "ok" {
		t.Fatalf("then: %q", s)
	}
}

// syncClientAndPeer dials a ReceiveSync client to a plain listener and
// returns it with the peer's end of the connection, both closed at the
// test's end.
func syncClientAndPeer(t *testing.T) (*transport.Client, *net.TCPConn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := transport.Dial(context.Background(), "tcp", l.Addr().String(),
		transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	peer, _ := (<-accepted).(*net.TCPConn)
	if peer == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { peer.Close() })
	return c, peer
}
