package codec_test

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/packet"
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
	addr := startStdFrameServer(b, "srmp")
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

// BenchmarkRequestWindow is one connection's windowed SRMP requests to
// the plain std-net echo loop in the same process, as `lifenet load
// --codec srmp --mode pipeline --window 255` drives them: impl=codec sends
// a window of 255 codec.Conn.RequestBytesAsync requests in one Batch and
// waits for their 255 callbacks; impl=bare writes the 255 frames in one
// write and reads the 255 echoes back. One op is one request; the
// server's share is the same in both, so their difference is the clients'.
func BenchmarkRequestWindow(b *testing.B) {
	const window = codec.MaxInFlightSRMP
	addr := startStdFrameServer(b, "srmp")
	body := make([]byte, 28) // 32-byte frames
	b.Run("impl=codec", func(b *testing.B) {
		c, err := codec.Dial(context.Background(), "tcp", addr, transport.ClientConfig{}, codec.Options{Pipeline: srmpPipeline()})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conn, ctx := c.Conn(), context.Background()
		var left atomic.Int32
		done := make(chan error, 1)
		cb := func(_ *codec.Message, err error) {
			if err != nil {
				select {
				case done <- err:
				default:
				}
			}
			if left.Add(-1) == 0 {
				done <- nil
			}
		}
		round := func(n int) {
			left.Store(int32(n))
			var err error
			conn.Batch(func() {
				for range n {
					if err = conn.RequestBytesAsync(ctx, codec.FlagBinary, body, cb); err != nil {
						return
					}
				}
			})
			if err == nil {
				err = <-done
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		runWindows(b, window, round)
	})
	b.Run("impl=bare", func(b *testing.B) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		var out []byte
		for i := range window {
			out = append(out, encodeSRMP(b, codec.KindRequest, codec.FlagBinary, uint8(i+1), body)...)
		}
		in, frame := make([]byte, len(out)), len(out)/window
		round := func(n int) {
			if _, err := c.Write(out[:n*frame]); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, in[:n*frame]); err != nil {
				b.Fatal(err)
			}
		}
		runWindows(b, window, round)
	})
}

// runWindows runs b.N requests as rounds of up to window (one round, the
// connection's set-up, before the timer starts).
func runWindows(b *testing.B, window int, round func(n int)) {
	round(window)
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += window {
		round(min(window, b.N-n))
	}
}

// BenchmarkRequestPacketSerial is one caller's serial length-field
// requests (32-byte frames) to the plain std-net echo loop in the same
// process, as `lifenet load --codec lengthfield --mode roundtrip
// --recvmode sync` makes them: impl=sync is codec.Conn.RequestPacket of a
// pooled packet on a transport.ReceiveSync client, the reply released;
// impl=into is codec.Conn.RequestPacketInto of the caller's bytes, the
// reply borrowed;
// impl=bare is baseline.Client.Call on a plain net.Conn, matching each
// reply by order and handing it over borrowed. The server's share is the
// same in both, so their difference is the clients'.
func BenchmarkRequestPacketSerial(b *testing.B) {
	addr := startStdFrameServer(b, "lengthfield")
	const size = 30 // 32-byte frames
	b.Run("impl=sync", func(b *testing.B) {
		c, err := codec.Dial(context.Background(), "tcp", addr, transport.ClientConfig{Mode: transport.ReceiveSync}, codec.Options{Pipeline: lfPipeline()})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conn, ctx := c.Conn(), context.Background()
		call := func() {
			r, err := conn.RequestPacket(ctx, packet.GetWithHeadroom(8, size))
			if err != nil {
				b.Fatal(err)
			}
			if r.Len() != size {
				b.Fatalf("a reply of %d bytes", r.Len())
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
	b.Run("impl=into", func(b *testing.B) { // the reply borrowed, as the bare client's is
		c, err := codec.Dial(context.Background(), "tcp", addr, transport.ClientConfig{Mode: transport.ReceiveSync}, codec.Options{Pipeline: lfPipeline()})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conn, ctx, body := c.Conn(), context.Background(), make([]byte, size)
		call := func() {
			var n int
			if _, err := conn.RequestPacketInto(ctx, packet.Wrap(body), replyLen, &n); err != nil {
				b.Fatal(err)
			}
			if n != size {
				b.Fatalf("a reply of %d bytes", n)
			}
		}
		call()
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			call()
		}
	})
	b.Run("impl=bare", func(b *testing.B) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		c, err := baseline.NewClient(nc, baseline.LengthField)
		if err != nil {
			b.Fatal(err)
		}
		body := make([]byte, size)
		call := func() {
			r, err := c.Call(0, body)
			if err != nil {
				b.Fatal(err)
			}
			if len(r) != size {
				b.Fatalf("a reply of %d bytes", len(r))
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

// replyLen is a PacketUse: it stores the reply's length in dst (an *int).
func replyLen(dst any, reply *packet.Packet) error {
	*dst.(*int) = reply.Len()
	return nil
}
