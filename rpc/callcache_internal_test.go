package rpc

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/transport"
)

// A busy session's plain calls of an action share one context, and a
// call takes it with no allocation; a parked session holds no cached
// context (its codec connection's OnPark dropped them), and its next
// call makes them again.
func TestParkedSessionHoldsNoCallContext(t *testing.T) {
	leakcheck.Check(t)
	type seen struct {
		ctx    context.Context
		ss     *Session
		cached bool // the session's cache held its slots during the call
	}
	serve := func(t *testing.T, park time.Duration) (*Server, net.Conn, chan seen) {
		s, err := NewServer(Config{Transport: transport.Config{ParkAfter: park}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		calls := make(chan seen, 4)
		err = Handle(s, "T/Ping", func(ctx context.Context, _ struct{}) (int, error) {
			ss := SessionFrom(ctx)
			calls <- seen{ctx, ss, ss.calls.slots.Load() != nil} // inline: the session cannot park meanwhile
			return 1, nil
		}, WithInline())
		if err != nil {
			t.Fatal(err)
		}
		// T/Late runs on its own goroutine, waits for its session to park
		// (a new connection parks right after its first read), and then
		// caches a context, as a call that reaches callContext after the
		// park does.
		err = Handle(s, "T/Late", func(ctx context.Context, _ struct{}) (int, error) {
			ss := SessionFrom(ctx)
			if !testwait.Until(10*time.Second, func() bool { return s.Transport().Stats().Parked == 1 }) {
				t.Error("the session did not park during the call")
			}
			ss.calls.get(ss, ss.srv.reg.find([]byte("T/Ping")), KindUnary)
			calls <- seen{ctx, ss, true}
			return 1, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", a.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return s, c, calls
	}

	t.Run("busy", func(t *testing.T) {
		_, c, calls := serve(t, -1) // never parks
		rawCall(t, c, "T/Ping")
		first := <-calls
		if !first.cached {
			t.Fatal("a call's session holds no cached context")
		}
		for range 3 {
			rawCall(t, c, "T/Ping")
			if got := <-calls; got.ctx != first.ctx {
				t.Fatalf("a later call of the action got context %p, want the shared %p", got.ctx, first.ctx)
			}
		}
		ss, a := first.ss, first.ss.srv.reg.find([]byte("T/Ping"))
		if got := ss.calls.get(ss, a, KindUnary); got != first.ctx {
			t.Fatalf("get: %p, want the shared %p", got, first.ctx)
		}
		if got := ss.calls.get(ss, a, KindOneWay); got == first.ctx {
			t.Fatal("a one-way call shares a unary call's context")
		}
		if n := testing.AllocsPerRun(100, func() { ss.calls.get(ss, a, KindUnary) }); n != 0 {
			t.Fatalf("a cached call context costs %v allocations a call, want 0", n)
		}
		if i := CallInfoFrom(first.ctx); i == nil || i.Action() != "T/Ping" || i.Session() != ss || i.Kind() != KindUnary {
			t.Fatalf("cached context's CallInfo: %+v", i)
		}
	})

	t.Run("parked", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("sessions park on Linux only")
		}
		s, c, calls := serve(t, 20*time.Millisecond)
		var prev context.Context
		for i := range 2 {
			rawCall(t, c, "T/Ping")
			got := <-calls
			if !got.cached {
				t.Fatalf("call %d: its session holds no cached context", i)
			}
			if got.ctx == prev {
				t.Fatalf("call %d after a park got the context cached before it", i)
			}
			prev = got.ctx
			testwait.For(t, 10*time.Second, "the session to park", func() bool { return s.Transport().Stats().Parked == 1 })
			if got.ss.calls.slots.Load() != nil {
				t.Fatalf("after park %d the session still holds its cached call contexts", i)
			}
		}
	})

	t.Run("parked during a call", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("sessions park on Linux only")
		}
		s, c, calls := serve(t, 20*time.Millisecond)
		rawCall(t, c, "T/Late")
		got := <-calls
		testwait.For(t, 10*time.Second, "the call to end", func() bool { return got.ss.running.Load() == 0 })
		if s.Transport().Stats().Parked != 1 {
			t.Fatal("the session did not stay parked")
		}
		if got.ss.calls.slots.Load() != nil {
			t.Fatal("a parked session holds the call contexts a call cached after the park, once it ended")
		}
	})
}
