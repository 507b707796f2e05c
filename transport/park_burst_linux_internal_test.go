//go:build linux

package transport

import (
	"context"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/packet"
)

// A burst on many connections at once (each sends again within
// ParkAfter, so none is quiet) holds at most maxWaiting goroutines in
// receive loops: the sessions woken past that read what came and park
// again at once. Before, each held a goroutine until ParkAfter passed, and
// the runtime keeps every goroutine a program ran at once for good.
func TestBurstOnManyConnectionsHoldsFewGoroutines(t *testing.T) {
	leakcheck.Check(t)
	const conns = maxWaiting + 344
	srv, err := NewServer(Config{ParkAfter: time.Minute, MaxConns: NoLimit, MaxConnsPerIP: NoLimit, KeepFreedMemory: true},
		Hooks{OnReceive: func(s *Session, p *packet.Packet) { s.SendBytes(p.Bytes()) }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	clients := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	echo := func(c net.Conn) {
		t.Helper()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write([]byte("hi")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 2)); err != nil {
			t.Fatal(err)
		}
	}
	for range conns {
		c, err := net.Dial("tcp", a.String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		echo(c) // a new connection reads its first bytes and parks at once
	}
	// (One whose bytes woke it while it was parking waits in a goroutine
	// for ParkAfter: that wait counts in before.)
	testwait.For(t, 30*time.Second, "every session to park or wait", func() bool {
		return srv.Stats().Parked+int64(srv.waiting.Load()) == conns
	})
	before := runtime.NumGoroutine()
	for _, c := range clients {
		echo(c) // within ParkAfter of its first: a busy session, which waits in a goroutine while there is room
	}
	grew := runtime.NumGoroutine() - before
	if grew > maxWaiting+64 {
		t.Errorf("a burst on %d connections left %d more goroutines; want at most %d (maxWaiting and a few workers)", conns, grew, maxWaiting+64)
	}
	if w := srv.waiting.Load(); w > maxWaiting {
		t.Errorf("%d sessions wait in goroutines of their own; want at most %d", w, maxWaiting)
	}
	testwait.For(t, 20*time.Second, "all but maxWaiting sessions to park", func() bool {
		return srv.Stats().Parked >= conns-maxWaiting
	})
}
