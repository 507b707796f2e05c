package rpcport_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// Replies a peer does not read are held without bound no more: five
// clients each send 10 calls of an echo of 10 MiB (50 in all), each of
// which would run on a goroutine of its own, and never read. Once its unwritten replies pass
// SendQueueBytes (2 × MaxFrame) its large calls run on the reading
// goroutine, which stops reading it; past twice that it is closed as a
// slow consumer (nats-server's rule), or by WriteTimeout (3 s here) when
// that goroutine writes them itself, or as a request left partial past
// Expire meanwhile; what it held is freed. Bound: 300 MB of heap growth,
// the live heap back to its baseline after.
func TestUnreadBigRepliesAreBounded(t *testing.T) {
	conns, per := 1, size(50, 8, 50)
	r := attack(t, rpc.Config{Transport: transport.Config{WriteTimeout: 3 * time.Second}}, func(srv *rpc.Server) {
		// Bench/EchoPacket, but not inline: each call on a goroutine of its
		// own, which holds its reply while the reply cannot be written.
		handle(t, srv, "Echo/Spawned", func(_ context.Context, b []byte) ([]byte, error) { return b, nil })
	})
	closed0 := r.srv.Transport().Stats().Closed
	call := srmpFrame(b0Request, 1, rawBody([]byte("Echo/Spawned"), bytes.Repeat([]byte("u"), 10<<20-64)))
	var wg sync.WaitGroup
	for _, rc := range r.dialMany(conns, conns) {
		rc.c.(*net.TCPConn).SetReadBuffer(16 << 10)
		wg.Go(func() {
			for range per {
				if rc.write(call) != nil {
					return // closed by the server: the rest is not sent
				}
			}
		})
	}
	wg.Wait()
	ended := func(reason transport.Reason) uint64 {
		return r.srv.Transport().Stats().Closed[reason] - closed0[reason]
	}
	waitFor(t, "the non-readers closed", func() bool {
		return ended(transport.ReasonSlowConsumer)+ended(transport.ReasonWriteTimeout)+ended(transport.ReasonProtocol) >= uint64(conns)
	})
	f := r.end("unread big replies", "%d connection(s) × %d echo calls of 10 MiB, never read: %d closed as slow consumers, %d by the write timeout, %d by a request left partial past Expire",
		conns, per, ended(transport.ReasonSlowConsumer), ended(transport.ReasonWriteTimeout), ended(transport.ReasonProtocol))
	r.heapBound(f, 300<<20)
	t.Logf("FIGURES unread big replies: heap peak +%d MiB for %d × %d calls of 10 MiB", f.growth()>>20, conns, per)
}
