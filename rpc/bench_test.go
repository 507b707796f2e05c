package rpc_test

import (
	"context"
	"sync"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// BenchmarkCallNoArg measures a whole call over loopback TCP, client and
// server in this process (b.N calls from 16 goroutines on one connection).
func BenchmarkCallNoArg(b *testing.B) { benchCallNoArg(b, rpc.Config{}, rpc.ClientConfig{}) }

// BenchmarkCallNoArgIntercepted is BenchmarkCallNoArg with one interceptor
// that does nothing on each side: the chain's cost.
func BenchmarkCallNoArgIntercepted(b *testing.B) {
	benchCallNoArg(b, rpc.Config{Interceptors: []rpc.Interceptor{noop}}, rpc.ClientConfig{Interceptors: []rpc.Interceptor{noop}})
}

func noop(ctx context.Context, c *rpc.Invocation, next rpc.Next) error { return next(ctx, c) }

func benchCallNoArg(b *testing.B, cfg rpc.Config, ccfg rpc.ClientConfig) {
	_, addr := benchServer(b, cfg)
	ctx := context.Background()
	cl, err := rpc.Dial(ctx, addr, ccfg)
	must(b, err)
	defer cl.Close()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		var r int32
		for pb.Next() {
			if err := cl.Invoke(ctx, "Bench/NoArg", nil, &r); err != nil || r != 42 {
				b.Error(r, err)
				return
			}
		}
	})
}

// BenchmarkProcessNoArg measures the direct path (Server.Process).
func BenchmarkProcessNoArg(b *testing.B) { benchProcessNoArg(b, rpc.Config{}) }

// BenchmarkProcessNoArgIntercepted is the direct path through one
// interceptor that does nothing.
func BenchmarkProcessNoArgIntercepted(b *testing.B) {
	benchProcessNoArg(b, rpc.Config{Interceptors: []rpc.Interceptor{noop}})
}

func benchProcessNoArg(b *testing.B, cfg rpc.Config) {
	srv, _ := benchServer(b, cfg)
	body, err := rpc.AppendRequest(nil, "Bench/NoArg", nil)
	must(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]byte, 0, 256)
		for pb.Next() {
			if _, isErr, ok := srv.Process(ctx, body, dst[:0]); !ok || isErr {
				b.Error("no reply")
				return
			}
		}
	})
}

// BenchmarkProcessEchoPacket16 measures the direct path with a 16-byte
// binary argument and result.
func BenchmarkProcessEchoPacket16(b *testing.B) {
	srv, _ := benchServer(b, rpc.Config{})
	body, err := rpc.AppendRequest(nil, "Bench/EchoPacket", make([]byte, 16))
	must(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	var once sync.Once
	b.RunParallel(func(pb *testing.PB) {
		dst := make([]byte, 0, 256)
		for pb.Next() {
			if _, isErr, ok := srv.Process(ctx, body, dst[:0]); !ok || isErr {
				once.Do(func() { b.Error("no reply") })
				return
			}
		}
	})
}

// BenchmarkCallNoArgInline measures one caller's whole calls over loopback
// TCP to an action run inline (on the connection's reading goroutine): the
// client's and the server's call paths with no goroutine per call, the
// figure scripts/instrs.sh counts (docs/perf/rpc.md, "Interceptors").
func BenchmarkCallNoArgInline(b *testing.B) {
	benchCallInline(b, rpc.Config{}, rpc.ClientConfig{})
}

// BenchmarkCallNoArgInlineIntercepted is BenchmarkCallNoArgInline with one
// interceptor that does nothing on each side.
func BenchmarkCallNoArgInlineIntercepted(b *testing.B) {
	benchCallInline(b, rpc.Config{Interceptors: []rpc.Interceptor{noop}}, rpc.ClientConfig{Interceptors: []rpc.Interceptor{noop}})
}

func benchCallInline(b *testing.B, cfg rpc.Config, ccfg rpc.ClientConfig) {
	srv, err := rpc.NewServer(cfg)
	must(b, err)
	must(b, rpc.Handle(srv, "Bench/NoArgInline", func(context.Context, struct{}) (int32, error) { return 42, nil }, rpc.WithInline()))
	addr, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	must(b, err)
	defer srv.Close()
	ctx := context.Background()
	cl, err := rpc.Dial(ctx, addr.String(), ccfg)
	must(b, err)
	defer cl.Close()
	var r int32
	must(b, cl.Invoke(ctx, "Bench/NoArgInline", nil, &r))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := cl.Invoke(ctx, "Bench/NoArgInline", nil, &r); err != nil || r != 42 {
			b.Fatal(r, err)
		}
	}
}
