package transport

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
)

// A parked session holds no send state: no stream sender, no queue
// slices, no staging buffer. Its next wake makes them again and answers;
// closed while parked (without a sender), its connection closes.
func TestParkedSessionHoldsNoSendState(t *testing.T) {
	leakcheck.Check(t)
	srv, c, sessions := startParkServer(t, Hooks{
		OnReceive: func(s *Session, p *packet.Packet) { s.SendBytes(p.Bytes()) },
	})
	s := <-sessions
	echo := func(msg string) { t.Helper(); echoOver(t, c, msg) }
	held := func() *sendState { // the sender included
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.sendState
	}
	for i := range 2 {
		echo("hello")
		waitParked(t, srv, fmt.Sprintf("in round %d", i))
		if st := held(); st != nil {
			t.Fatalf("round %d, parked: send state %+v; want none", i, st)
		}
	}
	s.Close()
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after a parked session's Close: read %d, %v; want EOF", n, err)
	}
}

// A reply written while its session is parked (made by a goroutine of its
// own, after the receive returned and the session parked) leaves no send
// state behind either: the write that ends sheds it.
func TestReplyAfterParkLeavesNoSendState(t *testing.T) {
	leakcheck.Check(t)
	reply := make(chan struct{})
	srv, c, sessions := startParkServer(t, Hooks{
		OnReceive: func(s *Session, p *packet.Packet) {
			msg := append([]byte(nil), p.Bytes()...)
			go func() {
				<-reply
				s.SendBytes(msg)
			}()
		},
	})
	s := <-sessions
	c.Write([]byte("later"))
	time.Sleep(50 * time.Millisecond) // the request is read and the receive has returned
	waitParked(t, srv, "before its reply")
	close(reply)
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "later" {
		t.Fatalf("reply %q, %v", got, err)
	}
	waitParked(t, srv, "after its reply")
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		st, writing := s.sendState, s.writing
		s.mu.Unlock()
		if st == nil && !writing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("parked after a reply written while parked: send state %+v; want none", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startParkServer starts a server whose sessions park after 20 ms, with
// hooks (OnOpen sends each session on the channel it returns), and dials
// it: a connection with a 10 s read deadline.
func startParkServer(t *testing.T, hooks Hooks) (*Server, net.Conn, chan *Session) {
	t.Helper()
	sessions := make(chan *Session, 1)
	hooks.OnOpen = func(s *Session) { sessions <- s }
	srv, c := dialNewServer(t, Config{ParkAfter: 20 * time.Millisecond}, hooks)
	return srv, c, sessions
}

// dialNewServer starts a server of cfg and hooks on loopback and dials
// it: a connection with a 20 s deadline. Both close when the test ends.
func dialNewServer(t *testing.T, cfg Config, hooks Hooks) (*Server, net.Conn) {
	t.Helper()
	srv, err := NewServer(cfg, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", a.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return srv, c
}

// echoOver writes msg to c and reads its echo back.
func echoOver(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.Write([]byte(msg))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
		t.Fatalf("echo of %q: %q, %v", msg, got, err)
	}
}

// waitParked waits until srv has one session parked.
func waitParked(t *testing.T, srv *Server, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // generous: a loaded machine
	for srv.Stats().Parked != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the session did not park %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
