package rpc_test

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/lifenet/lifenet/internal/baseline"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// receiveGoroutines counts the transport clients' receive goroutines now
// in the process (the package's tests run one at a time): the only ones
// transport.Dial and Client.StartReceiving start, which a stack dump names
// even before they first run.
func receiveGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			dump := string(buf[:n])
			return strings.Count(dump, "created by github.com/lifenet/lifenet/transport.Dial in ") +
				strings.Count(dump, "created by github.com/lifenet/lifenet/transport.(*Client).StartReceiving in ")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// A default client over TCP that has no OnPush and no interceptor reads
// its replies on its callers' goroutines: it starts no receive goroutine,
// until its first stream starts one, on that connection, while calls are
// in flight on it, none of which loses its reply. A client that sets
// OnPush, an interceptor or Mode ReceivePull gets a receive goroutine at
// Dial.
func TestDefaultClientReadsOnItsCallersUntilAStream(t *testing.T) {
	srv, addr := benchServer(t, rpc.Config{})
	must(t, rpc.HandleStream(srv, "Bench/Count", countTo))
	ctx := context.Background()
	before := receiveGoroutines()
	cl := dialClient(t, addr, rpc.ClientConfig{})
	if v, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); err != nil || v != 42 {
		t.Fatalf("call: %d, %v", v, err)
	}
	if n := receiveGoroutines() - before; n != 0 {
		t.Fatalf("a default client has %d receive goroutines, want 0", n)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 50 {
				if v, err := rpc.Call[int32](ctx, cl, "Bench/Add", map[string]int32{"a": int32(i), "b": 1}); err != nil || v != int32(i)+1 {
					t.Errorf("call %d across the stream's start: %d, %v", i, v, err)
					return
				}
			}
		})
	}
	var got []int
	for v, err := range rpc.Stream[int](ctx, cl, "Bench/Count", 5) {
		must(t, err)
		got = append(got, v)
	}
	wg.Wait()
	if len(got) != 5 || got[4] != 5 {
		t.Fatalf("stream items %v, want 1…5", got)
	}
	if n := receiveGoroutines() - before; n != 1 {
		t.Fatalf("after a stream, %d receive goroutines, want 1", n)
	}
	if v, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); err != nil || v != 42 {
		t.Fatalf("call after the stream: %d, %v", v, err)
	}

	pull := rpc.ClientConfig{}
	pull.Transport.Mode = transport.ReceivePull
	for name, cfg := range map[string]rpc.ClientConfig{
		"OnPush":       {OnPush: func(string, []byte) {}},
		"Interceptors": {Interceptors: []rpc.Interceptor{func(ctx context.Context, iv *rpc.Invocation, next rpc.Next) error { return next(ctx, iv) }}},
		"ReceivePull":  pull,
	} {
		had := receiveGoroutines()
		other := dialClient(t, addr, cfg)
		if n := receiveGoroutines() - had; n != 1 {
			t.Errorf("a client with %s has %d receive goroutines, want 1", name, n)
		}
		other.Close()
		// Close does not wait for the receive goroutine to return; the
		// next case counts from a dump without it.
		waitFor(t, "the closed client's receive goroutine to end", func() bool { return receiveGoroutines() == had })
	}
}

// A default client, which has no reader between calls, notices that the
// server closed its connection at its next call: that call goes out on a
// new connection and succeeds (the drain before it reads the close, so the
// request fails as never sent and is carried by the new connection).
func TestDefaultClientsNextCallAfterTheServerClosedSucceeds(t *testing.T) {
	sessions := make(chan *rpc.Session, 1)
	srv, addr := whoServer(t, "x", sessions)
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	for round := range 3 {
		id1, err := rpc.Call[uint64](ctx, cl, "Who/Id", nil)
		must(t, err)
		must(t, recv(t, sessions, "the session").Close())
		waitFor(t, "the server to drop the session", func() bool { return srv.Stats().Sessions == 0 })
		id2, err := rpc.Call[uint64](ctx, cl, "Who/Id", nil)
		if err != nil || id2 == id1 {
			t.Fatalf("round %d: the call after the server closed: id %d (was %d), %v; want a new session", round, id2, id1, err)
		}
		<-sessions
	}
}

// A default client's call with an int result allocates nothing and takes
// no pooled buffer: its reply is decoded from the read buffer, and the
// staging buffer of its request is the one its session keeps (in a test
// binary a pooled buffer taken counts as an allocation, since leakcheck
// records the stack that took it; a client with a receive goroutine keeps
// a copy of each reply, and shows 0 B/op only in BenchmarkClientSerial).
// The server is a std-net loop that allocates nothing either.
func TestDefaultClientCallAllocatesNothing(t *testing.T) {
	leakcheck.Check(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	srv := baseline.ServeFrames(l, baseline.SRMP, answer42)
	defer srv.Close()
	ctx := context.Background()
	cl := dialClient(t, l.Addr().String(), rpc.ClientConfig{})
	var r int32
	call := func() {
		if err := cl.Invoke(ctx, "Bench/NoArg", nil, &r); err != nil || r != 42 {
			t.Fatalf("%d, %v", r, err)
		}
	}
	call()
	if n := testing.AllocsPerRun(1000, call); n != 0 {
		t.Errorf("%v allocations a call, want 0", n)
	}
}
