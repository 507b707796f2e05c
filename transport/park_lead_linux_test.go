package transport_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// A parked session's wake is served on the poller's goroutine; a handler
// that blocks there must not keep the server's other parked sessions from
// being served: the watchdog hands the poller to another goroutine.
func TestBlockedHandlerDoesNotStallOtherParkedSessions(t *testing.T) {
	leakcheck.Check(t)
	release := make(chan struct{})
	blocked := make(chan struct{}, 1)
	hooks := transport.Hooks{OnReceive: func(s *transport.Session, p *packet.Packet) {
		if bytes.Equal(p.Bytes(), []byte("block")) {
			blocked <- struct{}{}
			<-release
		}
		s.Send(p.Share())
	}}
	srv, a := startServer(t, parkConfig(), hooks, "tcp", "127.0.0.1:0")
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	c1 := dial(t, "tcp", a)
	c2 := dial(t, "tcp", a)
	waitUntil(t, "both connections to park", func() bool { return srv.Stats().Parked == 2 })
	// Quiet for more than ParkAfter on the server's coarse clock (a
	// 250 ms tick): c1's next wake is then served by the poller itself.
	time.Sleep(time.Second)
	if _, err := c1.Write([]byte("block")); err != nil {
		t.Fatal(err)
	}
	<-blocked
	// Three wakes of c2 while c1's handler blocks; a stalled poller fails
	// the test at c2's deadline, not at the test's timeout.
	c2.SetDeadline(time.Now().Add(20 * time.Second))
	for i := range 3 {
		roundTrip(t, c2, "hello")
		if i < 2 {
			waitUntil(t, "c2 to park again", func() bool { return srv.Stats().Parked == 1 })
		}
	}
	close(release)
	released = true
	got := make([]byte, 5)
	if _, err := io.ReadFull(c1, got); err != nil || string(got) != "block" {
		t.Fatalf("c1's echo after its handler returned: %q, %v", got, err)
	}
	waitUntil(t, "both connections to park again", func() bool { return srv.Stats().Parked == 2 })
}

// Many parked connections woken at once, each more than once: every
// message is echoed, in order, whether the poller's goroutine, a worker or
// a session's waiting loop serves it (edge-triggered readiness: no wake is
// lost while a session is being served).
func TestParkedWakesAtOnceLoseNothing(t *testing.T) {
	leakcheck.Check(t)
	const conns = 200
	srv, a := startServer(t, parkConfig(), echoHooks(), "tcp", "127.0.0.1:0")
	cs := make([]net.Conn, conns)
	for i := range cs {
		cs[i] = dial(t, "tcp", a)
	}
	waitUntil(t, "every connection to park", func() bool { return srv.Stats().Parked == conns })
	for round := range 3 {
		for _, c := range cs {
			if _, err := c.Write([]byte{'a', byte(round)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range cs {
			if _, err := c.Write([]byte{'b', byte(round)}); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range cs {
			got := make([]byte, 4)
			if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, []byte{'a', byte(round), 'b', byte(round)}) {
				t.Fatalf("round %d, connection %d: echo %q, %v", round, i, got, err)
			}
		}
		waitUntil(t, "every connection to park again", func() bool { return srv.Stats().Parked == conns })
	}
}

// A parked connection whose peer sends a last message and closes at once
// (the bytes and the close seen by one wake): the session receives the
// message and ends, rather than parking again until its idle timeout
// (20 minutes here).
func TestParkedSessionSeesBytesAndCloseTogether(t *testing.T) {
	leakcheck.Check(t)
	got := make(chan string, 8)
	hooks := transport.Hooks{OnReceive: func(s *transport.Session, p *packet.Packet) {
		got <- string(p.Bytes())
	}}
	srv, a := startServer(t, parkConfig(), hooks, "tcp", "127.0.0.1:0")
	for i := range 3 {
		c := dial(t, "tcp", a)
		first := fmt.Sprintf("first %d", i)
		if _, err := c.Write([]byte(first)); err != nil {
			t.Fatal(err)
		}
		if m := <-got; m != first {
			t.Fatalf("received %q, want %q", m, first)
		}
		waitUntil(t, "the session to park", func() bool { return srv.Stats().Parked == 1 })
		time.Sleep(time.Second) // quiet for ParkAfter on the coarse clock: the poller serves the wake itself
		if _, err := c.Write([]byte("bye")); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if m := <-got; m != "bye" {
			t.Fatalf("received %q, want bye", m)
		}
		waitUntil(t, "the session to end", func() bool { return srv.Stats().Active == 0 })
	}
}
