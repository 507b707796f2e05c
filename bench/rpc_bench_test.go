package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	netrpc "net/rpc"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/lifenet/lifenet/bench/internal/grpcbench"
	"github.com/lifenet/lifenet/internal/rpcbench"
	"github.com/lifenet/lifenet/rpc"
)

// concurrencies are the calling goroutines of each sub-benchmark, all on
// one connection.
var concurrencies = []int{1, 4, 16, 32}

// BenchmarkRPC measures whole calls over loopback TCP, client and server
// in this process, for lifenet, net/rpc and grpc-go with NewLife's call
// shapes: BenchmarkRPC/<impl>/<shape>/c<N> with N calling goroutines on
// one connection. The headline figures are the separate-process ones
// (README.md); these give allocs/op (client and server together).
func BenchmarkRPC(b *testing.B) {
	for _, impl := range []struct {
		name  string
		start func(b *testing.B) func(sh rpcbench.Shape) rpcbench.Caller
	}{
		{"lifenet", startLifenet},
		{"netrpc", startNetRPC},
		{"grpc", startGRPC},
	} {
		b.Run(impl.name, func(b *testing.B) {
			newCaller := impl.start(b)
			for _, name := range rpcbench.Shapes {
				sh := rpcbench.ShapeOf(name)
				for _, n := range concurrencies {
					b.Run(fmt.Sprintf("%s/c%d", name, n), func(b *testing.B) {
						runConcurrent(b, n, func() rpcbench.Caller { return newCaller(sh) })
					})
				}
			}
		})
	}
}

// runConcurrent makes b.N calls from n goroutines, each with its own
// caller: through RunParallel when n is a multiple of GOMAXPROCS
// (SetParallelism(n/GOMAXPROCS)), else from exactly n goroutines sharing
// a counter (RunParallel cannot run fewer goroutines than GOMAXPROCS).
func runConcurrent(b *testing.B, n int, newCaller func() rpcbench.Caller) {
	ctx := context.Background()
	var once sync.Once
	fail := func(err error) { once.Do(func() { b.Error(err) }) }
	b.ReportAllocs()
	if procs := runtime.GOMAXPROCS(0); n%procs == 0 {
		b.SetParallelism(n / procs)
		b.RunParallel(func(pb *testing.PB) {
			call := newCaller()
			for pb.Next() {
				if err := call(ctx); err != nil {
					fail(err)
					return
				}
			}
		})
		return
	}
	callers := make([]rpcbench.Caller, n)
	for i := range callers {
		callers[i] = newCaller()
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, call := range callers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := call(ctx); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// startLifenet starts `lifenet serve`'s server (rpc.NewServer with the
// benchmark controller registered by rpc.Handle with rpc.Inline()) and
// dials it; calls go through rpc.Call.
func startLifenet(b *testing.B) func(rpcbench.Shape) rpcbench.Caller {
	ctx := context.Background()
	srv, err := rpc.NewServer(rpc.Config{})
	if err == nil {
		err = rpcbench.RegisterBench(srv, true)
	}
	if err != nil {
		b.Fatal(err)
	}
	a, err := srv.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	cl, err := rpc.Dial(ctx, a.String(), rpc.ClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })
	return func(sh rpcbench.Shape) rpcbench.Caller {
		switch {
		case sh.Bytes != nil:
			return func(ctx context.Context) error {
				out, err := rpc.Call[[]byte](ctx, cl, sh.Action, sh.Bytes)
				return errors.Join(err, rpcbench.CheckBytes(out, sh.Bytes))
			}
		case sh.Str != "":
			args := rpcbench.StringArgs{Input: sh.Str}
			return func(ctx context.Context) error {
				out, err := rpc.Call[string](ctx, cl, sh.Action, args)
				return errors.Join(err, rpcbench.CheckString(out, sh.Str))
			}
		case sh.Action == "Bench/MultiArgs":
			args := rpcbench.MultiArgs{A: 42, B: 123456, C: "test", D: true, E: 3.14}
			return func(ctx context.Context) error {
				r, err := rpc.Call[int32](ctx, cl, sh.Action, args)
				return errors.Join(err, rpcbench.CheckInt(r))
			}
		}
		return func(ctx context.Context) error {
			r, err := rpc.Call[int32](ctx, cl, sh.Action, nil)
			return errors.Join(err, rpcbench.CheckInt(r))
		}
	}
}

// startNetRPC starts `lifenet serve --impl netrpc`'s server (net/rpc with
// gob over TCP) and dials it.
func startNetRPC(b *testing.B) func(rpcbench.Shape) rpcbench.Caller {
	srv := netrpc.NewServer()
	if err := srv.RegisterName("Bench", rpcbench.NetRPCBench{}); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go srv.ServeConn(c)
		}
	}()
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	cl, err := netrpc.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })
	return func(sh rpcbench.Shape) rpcbench.Caller {
		method := strings.Replace(sh.Action, "/", ".", 1)
		switch {
		case sh.Bytes != nil:
			return func(context.Context) error {
				var out []byte
				err := cl.Call(method, sh.Bytes, &out)
				return errors.Join(err, rpcbench.CheckBytes(out, sh.Bytes))
			}
		case sh.Str != "":
			return func(context.Context) error {
				var out string
				err := cl.Call(method, sh.Str, &out)
				return errors.Join(err, rpcbench.CheckString(out, sh.Str))
			}
		case sh.Action == "Bench/MultiArgs":
			args := rpcbench.MultiArgs{A: 42, B: 123456, C: "test", D: true, E: 3.14}
			return func(context.Context) error {
				var r int32
				err := cl.Call(method, args, &r)
				return errors.Join(err, rpcbench.CheckInt(r))
			}
		}
		return func(context.Context) error {
			var r int32
			err := cl.Call(method, struct{}{}, &r)
			return errors.Join(err, rpcbench.CheckInt(r))
		}
	}
}

// startGRPC starts grpcload's server (grpc.NewServer with bench.Bench)
// and a ClientConn to it; calls go through the hand-written stubs.
func startGRPC(b *testing.B) func(rpcbench.Shape) rpcbench.Caller {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer()
	grpcbench.Register(gs, grpcbench.Server{})
	go gs.Serve(ln)
	b.Cleanup(gs.Stop)
	cc, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	stub := grpcbench.NewClient(cc)
	return func(sh rpcbench.Shape) rpcbench.Caller { return grpcbench.NewCaller(stub, sh) }
}
