package transport_test

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

var errBadInput = errors.New("bad input")

// abortHooks answer every receive and then end the session with Abort or
// AbortAfterWrites; the close error goes to closed.
func abortHooks(afterWrites bool, closed chan<- *transport.CloseError) transport.Hooks {
	return transport.Hooks{
		BatchSends: true, // the answer waits in the queue until OnReceive returns
		OnReceive: func(s *transport.Session, p *packet.Packet) {
			s.SendBytes([]byte("answer to "), p.Bytes())
			if afterWrites {
				s.AbortAfterWrites(errBadInput)
			} else {
				s.Abort(errBadInput)
			}
		},
		OnClose: func(_ *transport.Session, e *transport.CloseError) { closed <- e },
	}
}

// sayHello dials a, sends "hello" and gives the connection 10 s to answer.
func sayHello(t *testing.T, network string, a net.Addr) net.Conn {
	t.Helper()
	conn := dial(t, network, a)
	conn.Write([]byte("hello"))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	return conn
}

// wantProtocolClose waits for the session's end: ReasonProtocol, with
// errBadInput as the cause.
func wantProtocolClose(t *testing.T, closed <-chan *transport.CloseError) {
	t.Helper()
	select {
	case e := <-closed:
		if e.Reason != transport.ReasonProtocol || !errors.Is(e, errBadInput) {
			t.Fatalf("closed with %v; want ReasonProtocol and the cause", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
	}
}

// AbortAfterWrites writes what was sent before it, then ends the session
// with ReasonProtocol and its cause; Abort drops what is still queued.
func TestAbortAfterWritesSendsFirst(t *testing.T) {
	leakcheck.Check(t)
	for _, tc := range []struct {
		name        string
		afterWrites bool
		want        string
	}{{"AbortAfterWrites", true, "answer to hello"}, {"Abort", false, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			closed := make(chan *transport.CloseError, 1)
			_, a := startServer(t, transport.Config{}, abortHooks(tc.afterWrites, closed), "tcp", "127.0.0.1:0")
			got, err := io.ReadAll(sayHello(t, "tcp", a))
			if err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("reading: %v", err)
			}
			if string(got) != tc.want {
				t.Fatalf("the peer read %q; want %q", got, tc.want)
			}
			wantProtocolClose(t, closed)
		})
	}
}

// A UDP peer session answers the datagram, then ends.
func TestAbortAfterWritesUDPPeer(t *testing.T) {
	leakcheck.Check(t)
	closed := make(chan *transport.CloseError, 1)
	srv, a := startServer(t, transport.Config{}, abortHooks(true, closed), "udp", "127.0.0.1:0")
	conn := sayHello(t, "udp", a)
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	if err != nil || string(buf[:n]) != "answer to hello" {
		t.Fatalf("the peer read %q, %v", buf[:n], err)
	}
	wantProtocolClose(t, closed)
	if got := srv.Stats().Closed[transport.ReasonProtocol]; got != 1 {
		t.Fatalf("sessions closed with ReasonProtocol: %d; want 1", got)
	}
}

// A ReceiveSync client has no receive loop to finish a drain: its session
// is aborted at once.
func TestAbortAfterWritesSyncClient(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	c, err := transport.Dial(context.Background(), "tcp", a.String(), transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Session().AbortAfterWrites(errBadInput)
	if r := c.Session().Reason(); r != transport.ReasonProtocol {
		t.Fatalf("reason %v; want ReasonProtocol at once", r)
	}
}
