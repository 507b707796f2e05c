package transport_test

// Server-path benchmarks, each beside the plain std-net baseline
// (internal/baseline) in the same run:
//
//	go test -run '^$' -bench 'ServerReceive|Echo' -benchmem -count 5 ./transport
//
// allocs/op counts the whole process; the client side writes from
// preallocated buffers, so allocations are the server path's. cpu-ns/pkt is
// the process's CPU time (user+system, client included) per packet.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/internal/testutil/memnet"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// impls lists the implementations in the order they run in each round;
// LIFENET_BENCH_RAW_FIRST=1 reverses it, to check for order bias.
func impls() []string {
	if os.Getenv("LIFENET_BENCH_RAW_FIRST") == "1" {
		return []string{"raw", "lifenet"}
	}
	return []string{"lifenet", "raw"}
}

// benchServer is a running server of either implementation.
type benchServer struct {
	addr  string
	bytes func() uint64
	close func()
}

func startBench(b *testing.B, impl string, echo bool) benchServer {
	b.Helper()
	if impl == "raw" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		r := baseline.Serve(l, echo)
		return benchServer{l.Addr().String(), r.Bytes.Load, r.Close}
	}
	return startLifenetBench(b, "tcp", echo)
}

// startLifenetBench runs a lifenet server on network that counts, or
// echoes, what it receives.
func startLifenetBench(b *testing.B, network string, echo bool) benchServer {
	b.Helper()
	var n atomic.Uint64
	hooks := transport.Hooks{OnReceive: func(s *transport.Session, p *packet.Packet) {
		n.Add(uint64(p.Len()))
		if echo {
			s.Send(p.Share())
		}
	}}
	srv, err := transport.NewServer(transport.Config{}, hooks)
	if err != nil {
		b.Fatal(err)
	}
	a, err := srv.Listen(context.Background(), network, "127.0.0.1:0")
	if err != nil {
		srv.Close()
		b.Fatal(err)
	}
	return benchServer{a.String(), n.Load, func() { srv.Close() }}
}

// dialN opens n plain connections to addr, closed when the benchmark ends.
func dialN(b *testing.B, addr string, n int) []net.Conn {
	clients := make([]net.Conn, n)
	for i := range clients {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		clients[i] = c
	}
	return clients
}

func sizeLabel(n int) string {
	if n >= 1024 {
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkServerReceive: one-way upload, the server only counts. One op is
// one packet of size bytes; batch packets go out per write (batch 256 is
// NewLife's "sticky packets" case).
func BenchmarkServerReceive(b *testing.B) {
	type scenario struct{ size, batch, conns int }
	var list []scenario
	for _, size := range []int{32, 1 << 10, 64 << 10} {
		for _, batch := range []int{1, 256} {
			list = append(list, scenario{size, batch, 1})
		}
	}
	for _, size := range []int{32, 1 << 10} {
		for _, conns := range []int{4, 16} {
			list = append(list, scenario{size, 1, conns})
		}
	}
	for _, sc := range list {
		for _, impl := range impls() {
			name := fmt.Sprintf("size=%s/batch=%d/conns=%d/impl=%s", sizeLabel(sc.size), sc.batch, sc.conns, impl)
			b.Run(name, func(b *testing.B) { benchReceive(b, impl, sc.size, sc.batch, sc.conns) })
		}
	}
}

func benchReceive(b *testing.B, impl string, size, batch, conns int) {
	srv := startBench(b, impl, false)
	defer srv.close()
	clients := dialN(b, srv.addr, conns)
	chunk := make([]byte, size*batch)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	cpu0 := cpuNanos()
	b.ResetTimer()
	per := (b.N + conns - 1) / conns
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for left := per * size; left > 0; {
				n := min(left, len(chunk))
				if _, err := c.Write(chunk[:n]); err != nil {
					b.Error(err)
					return
				}
				left -= n
			}
		})
	}
	wg.Wait()
	want := uint64(per * size * conns)
	deadline := time.Now().Add(30 * time.Second)
	for srv.bytes() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	b.StopTimer()
	if got := srv.bytes(); got < want {
		b.Fatalf("%s server received %d of %d bytes before the 30 s deadline", impl, got, want)
	}
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(per*conns), "cpu-ns/pkt")
}

// BenchmarkEcho: each connection sends size bytes and waits for them to come
// back (one round trip per op).
func BenchmarkEcho(b *testing.B) {
	for _, size := range []int{32, 1 << 10} {
		for _, conns := range []int{1, 16} {
			for _, impl := range impls() {
				name := fmt.Sprintf("size=%s/conns=%d/impl=%s", sizeLabel(size), conns, impl)
				b.Run(name, func(b *testing.B) { benchEcho(b, impl, size, conns) })
			}
		}
	}
}

func benchEcho(b *testing.B, impl string, size, conns int) {
	srv := startBench(b, impl, true)
	defer srv.close()
	clients := dialN(b, srv.addr, conns)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	cpu0 := cpuNanos()
	b.ResetTimer()
	per := (b.N + conns - 1) / conns
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			out, in := make([]byte, size), make([]byte, size)
			for range per {
				if _, err := c.Write(out); err != nil {
					b.Error(err)
					return
				}
				if _, err := io.ReadFull(c, in); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(per*conns), "cpu-ns/pkt")
}

// BenchmarkSessionChurn: one op opens an in-memory connection, lets the
// server admit it, closes it and waits for the server to end the session,
// with the session registry on and off and with idle sessions held open
// beside the churn. It prices the registry's per-connection bookkeeping.
func BenchmarkSessionChurn(b *testing.B) {
	for _, idle := range []int{0, 1000} {
		for _, off := range []bool{false, true} {
			b.Run(fmt.Sprintf("idle=%d/registry=%v", idle, !off), func(b *testing.B) {
				benchChurn(b, idle, off)
			})
		}
	}
}

func benchChurn(b *testing.B, idle int, noRegistry bool) {
	ended := make(chan struct{}, 1)
	hooks := transport.Hooks{OnClose: func(*transport.Session, *transport.CloseError) {
		select {
		case ended <- struct{}{}:
		default:
		}
	}}
	srv, err := transport.NewServer(transport.Config{NoSessionRegistry: noRegistry}, hooks)
	if err != nil {
		b.Fatal(err)
	}
	l := memnet.Listen("transport")
	if err := srv.Serve(l); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for range idle {
		c := dialMem(l)
		defer c.Close()
	}
	for srv.SessionCount() < idle {
		time.Sleep(time.Millisecond)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		dialMem(l).Close()
		<-ended
	}
}

// BenchmarkClientRoundTripBound: round trips of 32 bytes through a lifenet
// echo server, each receive bounded either by a context made per call
// (the usual Go idiom) or by ClientConfig.ReceiveTimeout with one
// long-lived context. allocs/op is the price of the bound (the server
// path allocates nothing).
func BenchmarkClientRoundTripBound(b *testing.B) {
	for _, network := range []string{"tcp", "udp"} {
		for _, mode := range []transport.ReceiveMode{transport.ReceivePull, transport.ReceiveSync} {
			for _, bound := range []string{"ctx-per-call", "ReceiveTimeout"} {
				name := fmt.Sprintf("%s/mode=%s/bound=%s", network, map[transport.ReceiveMode]string{transport.ReceivePull: "pull", transport.ReceiveSync: "sync"}[mode], bound)
				b.Run(name, func(b *testing.B) { benchRoundTripBound(b, network, mode, bound == "ReceiveTimeout") })
			}
		}
	}
}

func benchRoundTripBound(b *testing.B, network string, mode transport.ReceiveMode, useTimeout bool) {
	srv := startLifenetBench(b, network, true)
	defer srv.close()
	const limit = 5 * time.Second
	cfg := transport.ClientConfig{Mode: mode}
	if useTimeout {
		cfg.ReceiveTimeout = limit
	}
	c, err := transport.Dial(context.Background(), network, srv.addr, cfg, transport.Hooks{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, 32)
	receive := func() (*packet.Packet, error) {
		if useTimeout {
			return c.Receive(context.Background())
		}
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		return c.Receive(ctx)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := c.Send(packet.Wrap(msg)); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < len(msg); {
			p, err := receive()
			if err != nil {
				b.Fatal(err)
			}
			got += p.Total()
			p.Release()
		}
	}
}
