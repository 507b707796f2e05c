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
