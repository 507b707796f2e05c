package serve_test

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/oneport"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/transport"
)

// patience bounds every "eventually" wait: generous, since the machine is
// shared and the race detector is slow. A passing test never waits it out.
const patience = 30 * time.Second

// srmpPipeline is an SRMP pipeline with the given frame limit (0: default).
func srmpPipeline(maxFrame int) *codec.Pipeline {
	return codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{MaxFrame: maxFrame}))
}

// echo answers an SRMP request with its own payload.
func echo(c *codec.Conn, msg any) {
	if m, ok := msg.(*codec.Message); ok && m.Kind == codec.KindRequest {
		c.Reply(m, m.Payload)
	}
}

// startCodec starts a codec server with cfg and opts on each network in
// turn, all on one port (with more than one network, drawn by oneport),
// and closes it when the test ends. It returns the shared address.
func startCodec(t *testing.T, cfg transport.Config, opts codec.Options, networks ...string) (*codec.Server, string) {
	t.Helper()
	newServer := func() *codec.Server {
		srv, err := codec.NewServer(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	if len(networks) > 1 {
		return oneport.Serve(t, newServer, networks...)
	}
	srv := newServer() // one network: the kernel chooses the port
	t.Cleanup(func() { srv.Close() })
	a, err := srv.Listen(context.Background(), networks[0], "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return srv, a.String()
}

// dialCodec connects a codec client and closes it when the test ends.
func dialCodec(t testing.TB, network, addr string, cfg transport.ClientConfig, opts codec.Options) *codec.Client {
	t.Helper()
	c, err := codec.Dial(context.Background(), network, addr, cfg, opts)
	if err != nil {
		t.Fatalf("dial %s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// index8 is the 8-byte big-endian form of i: the payload that names a
// request, so that its reply can be checked.
func index8(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }

// waitFor polls cond until it holds, failing the test after patience.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, patience, what, cond)
}

// recv takes one value from ch, failing the test after patience.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return testwait.Recv(t, ch, patience, what)
}

// heapAfterGC is the live heap: HeapAlloc right after a collection. It
// collects twice: what sync.Pools held survives the first one (in their
// victim caches) and is only freed by the second.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// liveHeap is the heap the last collection found live, read without
// forcing one: a forced collection stops every goroutine for a moment,
// long enough under the race detector for a flooded socket to overflow.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// refused reports whether nothing accepts TCP connections at addr any more.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}
