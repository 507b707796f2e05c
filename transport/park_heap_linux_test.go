package transport_test

import (
	"io"
	"net"
	"runtime"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// TestParkedSessionHeap measures the live heap a parked connection holds
// (after two collections), the test's own client connection included (a
// net.Conn, about half a kilobyte): an upper bound of the server's part.
// It checks it stays under 1,280 bytes, which a net.Conn kept under a
// parked session (~555 B more) would exceed (2026-12-07: ~550 bytes with a
// 144-byte Session and a 48-byte descriptor; ~861 when a parked
// connection first was its descriptor alone; ~1,240 with a net.Conn under
// it, 2,082 before new connections parked at once).
// docs/perf/connections.md quotes its log line:
//
//	go test -run TestParkedSessionHeap -v ./transport
func TestParkedSessionHeap(t *testing.T) {
	leakcheck.Check(t)
	const conns = 1000
	cfg := parkConfig()
	cfg.MaxConns, cfg.MaxConnsPerIP, cfg.KeepFreedMemory = transport.NoLimit, transport.NoLimit, true
	srv, a := startServer(t, cfg, echoHooks(), "tcp", "127.0.0.1:0")
	clients := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for range conns {
		c, err := net.Dial("tcp", a.String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		if _, err := c.Write([]byte("hi")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 2)); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "every connection to park", func() bool { return srv.Stats().Parked == conns })
	per := (int64(heap()) - int64(before)) / conns
	t.Logf("live heap per parked connection, server and client sides: %d bytes (%d connections)", per, conns)
	if per > 1280 {
		t.Fatalf("%d bytes of live heap per parked connection, want at most 1,280", per)
	}
	runtime.KeepAlive(clients)
}
