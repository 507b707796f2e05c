package rpc_test

import (
	"context"
	"sync"
	"testing"

	"github.com/lifenet/lifenet/rpc"
)

// BenchmarkCallNoArg measures a whole call over loopback TCP, client and
// server in this process (b.N calls from 16 goroutines on one connection).
func BenchmarkCallNoArg(b *testing.B) {
	_, addr := benchServer(b, rpc.Config{})
	ctx := context.Background()
	cl, err := rpc.Dial(ctx, addr, rpc.ClientConfig{})
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
func BenchmarkProcessNoArg(b *testing.B) {
	srv, _ := benchServer(b, rpc.Config{})
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
