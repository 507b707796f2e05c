package transport

import (
	"context"
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
	sessions := make(chan *Session, 1)
	srv, err := NewServer(Config{ParkAfter: 20 * time.Millisecond}, Hooks{
		OnOpen:    func(s *Session) { sessions <- s },
		OnReceive: func(s *Session, p *packet.Packet) { s.SendBytes(p.Bytes()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", a.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	s := <-sessions
	echo := func(msg string) {
		t.Helper()
		c.Write([]byte(msg))
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
			t.Fatalf("echo of %q: %q, %v", msg, got, err)
		}
	}
	held := func() (out sender, queue, spare []*packet.Packet, stage *packet.Packet) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.out, s.queue, s.spare, s.spareStage
	}
	for i := range 2 {
		echo("hello")
		deadline := time.Now().Add(10 * time.Second)
		for srv.Stats().Parked != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the session did not park", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if out, queue, spare, stage := held(); out != nil || queue != nil || spare != nil || stage != nil {
			t.Fatalf("round %d, parked: sender %v, queue %v, spare %v, staging buffer %v; want none", i, out, queue, spare, stage)
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
	sessions := make(chan *Session, 1)
	reply := make(chan struct{})
	srv, err := NewServer(Config{ParkAfter: 20 * time.Millisecond}, Hooks{
		OnOpen: func(s *Session) { sessions <- s },
		OnReceive: func(s *Session, p *packet.Packet) {
			msg := append([]byte(nil), p.Bytes()...)
			go func() {
				<-reply
				s.SendBytes(msg)
			}()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", a.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	s := <-sessions
	c.Write([]byte("later"))
	waitParked := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for srv.Stats().Parked != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("the session did not park %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	time.Sleep(50 * time.Millisecond) // the request is read and the receive has returned
	waitParked("before its reply")
	close(reply)
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "later" {
		t.Fatalf("reply %q, %v", got, err)
	}
	waitParked("after its reply")
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		out, stage, writing := s.out, s.spareStage, s.writing
		s.mu.Unlock()
		if out == nil && stage == nil && !writing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("parked after a reply written while parked: sender %v, staging buffer %v; want none", out, stage)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
