package codec_test

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/transport"
)

// TestParkedConnHeap measures the live heap a parked connection of an
// SRMP echo server holds after one request (two collections), the test's
// own client net.Conn included: the transport's parked session and the
// codec's state of the connection. It checks the codec's part stays one
// allocation: under 1,150 bytes in all, which the codec's seven objects a
// connection exceeded (2026-12-07: 1,256 bytes, with the Conn, the chain,
// its handlers and contexts, the sink closure, the framing stage and its
// framer apart; ~900 since they are one; 849-855 with the transport's
// later cuts; 813-822 with more of them, the codec's object 224 bytes;
// 781-796 at 192; 765-781 since it is 176,
// TestParkedConnIsOneObjectOfAtMost176Bytes).
// docs/perf/connections.md quotes its log line:
//
//	go test -run TestParkedConnHeap -v ./codec
func TestParkedConnHeap(t *testing.T) {
	leakcheck.Check(t)
	const conns = 1000
	cfg := transport.Config{ParkAfter: 20 * time.Millisecond, MaxConns: transport.NoLimit, MaxConnsPerIP: transport.NoLimit, KeepFreedMemory: true}
	srv, addr := serveCfg(t, "tcp", cfg, codec.Options{Pipeline: srmpPipeline(), Handler: echoSRMP})
	clients := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	before := liveHeap()
	req := []byte{byte(codec.KindRequest)<<6 | codec.FlagBinary, 1, 2, 0, 'h', 'i'}
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		reply := make([]byte, len(req))
		if _, err := io.ReadFull(c, reply); err != nil || string(reply[4:]) != "hi" {
			t.Fatalf("echo: %q, %v", reply, err)
		}
	}
	testwait.For(t, 30*time.Second, "every connection to park", func() bool { return srv.Transport().Stats().Parked == conns })
	per := (int64(liveHeap()) - int64(before)) / conns
	t.Logf("live heap per parked SRMP echo connection, server and client sides: %d bytes (%d connections)", per, conns)
	if per > 1150 {
		t.Fatalf("%d bytes of live heap per parked connection, want at most 1,150", per)
	}
	runtime.KeepAlive(clients)
}

// liveHeap returns the heap in use after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
