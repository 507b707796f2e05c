package codec_test

import (
	"context"
	"net"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/transport"
)

// BenchmarkRequestSerial is one caller's serial SRMP requests to a plain
// std-net echo loop (internal/baseline) in the same process: the client's
// code path of rpc's BenchmarkClientNoArg without rpc's encoding, and
// without the other process, so that its instruction count
// (scripts/instrs.sh) repeats to about 1 %: with GOMAXPROCS=1 each request
// runs the same way, its reader parking once and the server running in
// between. impl=event and impl=sync are codec.Conn.RequestBytesPrefixed
// (a 12-byte payload, the reply repeating it, as an rpc call of
// Bench/NoArg; a Handler for pushes, as rpc.Client sets) on a client with
// a receive goroutine and one in transport.ReceiveSync; impl=bare writes the frame and reads the echo on
// its own goroutine. The server's share is the same in all three, so
// their differences are the clients'.
func BenchmarkRequestSerial(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := baseline.ServeFrames(l, baseline.SRMP, baseline.Echo(baseline.SRMP))
	b.Cleanup(srv.Close)
	addr := l.Addr().String()
	body := []byte("\x0bBench/NoArg")
	for _, impl := range []string{"event", "sync"} {
		b.Run("impl="+impl, func(b *testing.B) {
			var cfg transport.ClientConfig
			if impl == "sync" {
				cfg.Mode = transport.ReceiveSync
			}
			// A Handler for pushes, as rpc.Client has: the flat read path.
			opts := codec.Options{Pipeline: srmpPipeline(), Handler: func(*codec.Conn, any) {}}
			c, err := codec.Dial(context.Background(), "tcp", addr, cfg, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			conn, ctx := c.Conn(), context.Background()
			call := func() {
				r, err := conn.RequestBytesPrefixed(ctx, 1, body, len(body))
				if err != nil {
					b.Fatal(err)
				}
				if r.Payload.Len() != len(body) {
					b.Fatalf("a reply of %d bytes", r.Payload.Len())
				}
				r.Release()
			}
			call() // the connection's set-up (buffers, matcher) stays out
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				call()
			}
		})
	}
	b.Run("impl=bare", func(b *testing.B) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		req := append([]byte{byte(codec.KindRequest)<<6 | 1, 1, byte(len(body)), 0}, body...)
		buf := make([]byte, 64<<10)
		call := func() {
			if err := baseline.Call(c, baseline.SRMP, req, buf); err != nil {
				b.Fatal(err)
			}
		}
		call()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			call()
		}
	})
}
