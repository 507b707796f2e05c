package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// whoServer answers Who/Id with the caller's session ID and Who/Name with
// name, and hands each caller's session to sessions.
func whoServer(t *testing.T, name string, sessions chan<- *rpc.Session) (*rpc.Server, string) {
	t.Helper()
	return startServer(t, rpc.Config{}, whoActions(t, name, sessions))
}

// whoActions registers whoServer's actions.
func whoActions(t *testing.T, name string, sessions chan<- *rpc.Session) func(*rpc.Server) {
	return func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Who/Id", func(ctx context.Context, _ struct{}) (uint64, error) {
			ss := rpc.SessionFrom(ctx)
			if sessions != nil {
				select {
				case sessions <- ss:
				default:
				}
			}
			return ss.ID(), nil
		}))
		must(t, rpc.Handle(srv, "Who/Name", func(context.Context, struct{}) (string, error) { return name, nil }))
	}
}

func TestBatteryClientFailover(t *testing.T) {
	_, addr := whoServer(t, "good", nil)
	cl := dialClient(t, "tcp://"+closedAddr(t)+", "+addr, rpc.ClientConfig{})
	if s, err := rpc.Call[string](context.Background(), cl, "Who/Name", nil); err != nil || s != "good" {
		t.Fatalf("after failing over: %q, %v", s, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if _, err := rpc.Dial(ctx, closedAddr(t)+","+closedAddr(t), rpc.ClientConfig{}); !errors.Is(err, rpc.ErrNoServer) {
		t.Errorf("Dial with no server up: %v, want ErrNoServer", err)
	}
}

// When the server a client uses goes away, calls move to the next one.
func TestBatteryClientFailoverAfterLoss(t *testing.T) {
	srvA, addrA := whoServer(t, "A", nil)
	_, addrB := whoServer(t, "B", nil)
	cl := dialClient(t, addrA+","+addrB, rpc.ClientConfig{})
	ctx := context.Background()
	if s, err := rpc.Call[string](ctx, cl, "Who/Name", nil); err != nil || s != "A" {
		t.Fatalf("first call: %q, %v", s, err)
	}
	srvA.Close()
	// The client may not have seen the loss yet: calls that find it fail
	// (they may have run) until the client reconnects, to B.
	var s string
	var err error
	waitFor(t, "a call to reach B", func() bool {
		s, err = rpc.Call[string](ctx, cl, "Who/Name", nil)
		return err == nil || !lostConn(err)
	})
	if err != nil || s != "B" {
		t.Fatalf("after A closed: %q, %v; want B", s, err)
	}
}

func TestBatteryClientReconnects(t *testing.T) {
	sessions := make(chan *rpc.Session, 1)
	srv, addr := whoServer(t, "x", sessions)
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx := context.Background()
	id1, err := rpc.Call[uint64](ctx, cl, "Who/Id", nil)
	must(t, err)
	ss := recv(t, sessions, "the session")
	must(t, ss.Close())
	waitFor(t, "the server to drop the session", func() bool { return srv.Stats().Sessions == 0 })
	var id2 uint64
	waitFor(t, "a call on a new connection", func() bool {
		id2, err = rpc.Call[uint64](ctx, cl, "Who/Id", nil)
		return err == nil || !lostConn(err)
	})
	if err != nil || id2 == id1 {
		t.Fatalf("after the server closed the connection: id %d (was %d), %v; want a new session", id2, id1, err)
	}
	if n, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); err != nil || n != 42 {
		t.Errorf("later call: %d, %v", n, err)
	}
}

// lostConn reports an error of a call that found its connection gone (see
// TestBatteryClientLostConnectionError for which one it should be).
func lostConn(err error) bool {
	return errors.Is(err, codec.ErrConnClosed) || errors.Is(err, transport.ErrClosed)
}

// A call made once the server is gone either fails with an error wrapping
// codec.ErrConnClosed (it was pending when the connection ended) or, when
// the connection was already gone, tries to reconnect and reports
// rpc.ErrNoServer; never transport's bare close error.
func TestBatteryClientLostConnectionError(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	for i := range 40 {
		srv, err := rpc.NewServer(rpc.Config{Log: quietLog()})
		must(t, err)
		stdActions(t, srv)
		addr, err := srv.Listen(ctx, "tcp", "127.0.0.1:0")
		must(t, err)
		cl, err := rpc.Dial(ctx, addr.String(), rpc.ClientConfig{Timeout: testTimeout})
		must(t, err)
		_, err = rpc.Call[int](ctx, cl, "Bench/NoArg", nil)
		must(t, err)
		srv.Close() // waits for the server's side to be gone
		_, err = rpc.Call[int](ctx, cl, "Bench/NoArg", nil)
		cl.Close()
		if err != nil && !errors.Is(err, codec.ErrConnClosed) && !errors.Is(err, rpc.ErrNoServer) {
			t.Fatalf("round %d: %v, want an error wrapping codec.ErrConnClosed or rpc.ErrNoServer", i, err)
		}
	}
}

func TestBatteryClientTimeout(t *testing.T) {
	g := newGate(t, 1)
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Slow/Wait", func(ctx context.Context, _ struct{}) (int, error) { return 7, g.wait(ctx) }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := rpc.Call[int](context.Background(), cl, "Slow/Wait", nil)
	elapsed := time.Since(start)
	if !errors.Is(err, codec.ErrTimeout) {
		t.Fatalf("a call past Timeout: %v, want codec.ErrTimeout", err)
	}
	if elapsed < 150*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("timed out after %v, want about 200ms", elapsed)
	}
	// The connection stays usable; a late reply is dropped.
	g.open()
	if n, err := rpc.Call[int](context.Background(), cl, "Bench/NoArg", nil); err != nil || n != 42 {
		t.Errorf("after the timeout: %d, %v", n, err)
	}
}

func TestBatteryClientContextCancel(t *testing.T) {
	g := newGate(t, 1)
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		stdActions(t, srv)
		must(t, rpc.Handle(srv, "Slow/Wait", func(ctx context.Context, _ struct{}) (int, error) { return 7, g.wait(ctx) }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := rpc.Call[int](ctx, cl, "Slow/Wait", nil)
		done <- err
	}()
	recv(t, g.entered, "Slow/Wait to start")
	cancel()
	if err := recv(t, done, "the cancelled call"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call: %v, want context.Canceled", err)
	}
	if n, err := rpc.Call[int](context.Background(), cl, "Bench/NoArg", nil); err != nil || n != 42 {
		t.Errorf("after the cancel: %d, %v", n, err)
	}
}

func TestBatteryClientConns(t *testing.T) {
	srv, addr := whoServer(t, "x", nil)
	cl := dialClient(t, addr, rpc.ClientConfig{Conns: 3})
	ids := map[uint64]int{}
	for range 30 {
		id, err := rpc.Call[uint64](context.Background(), cl, "Who/Id", nil)
		must(t, err)
		ids[id]++
	}
	if len(ids) != 3 {
		t.Fatalf("calls went over %d sessions (%v), want 3", len(ids), ids)
	}
	for id, n := range ids {
		if n != 10 {
			t.Errorf("session %d took %d calls, want 10 (in turn)", id, n)
		}
	}
	if got := srv.Stats().Sessions; got != 3 {
		t.Errorf("server sees %d sessions, want 3", got)
	}
}

func TestBatteryClientConcurrentCalls(t *testing.T) {
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) { stdActions(t, srv) })
	cl := dialClient(t, addr, rpc.ClientConfig{Timeout: 20 * time.Second})
	const goroutines, calls = 200, 20
	var wg sync.WaitGroup
	var failures atomic.Int32
	errs := make(chan error, 10)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				n, err := rpc.Call[int32](context.Background(), cl, "Bench/Add", addArgs{int32(g), int32(i * 1000)})
				if err == nil && n != int32(g+i*1000) {
					err = fmt.Errorf("Bench/Add(%d, %d) = %d", g, i*1000, n)
				}
				if err != nil {
					if failures.Add(1) <= 10 {
						errs <- err
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// One connection carries at most 255 calls at once (one SRMP sequence
// number each); the rest wait for a number and then run.
func TestBatteryClientInFlightLimit(t *testing.T) {
	g := newGate(t, 1)
	var cur, peak atomic.Int32
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Gate/Wait", func(ctx context.Context, n int) (int, error) {
			c := cur.Add(1)
			for {
				p := peak.Load()
				if c <= p || peak.CompareAndSwap(p, c) {
					break
				}
			}
			err := g.wait(ctx)
			cur.Add(-1)
			return n, err
		}))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{Timeout: 20 * time.Second})
	const callers = 300
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n, err := rpc.Call[int](context.Background(), cl, "Gate/Wait", i); err != nil || n != i {
				bad.Add(1)
			}
		}()
	}
	waitFor(t, "255 calls in the handler", func() bool { return cur.Load() >= codec.MaxInFlightSRMP })
	g.open()
	wg.Wait()
	if bad.Load() != 0 {
		t.Errorf("%d of %d calls failed", bad.Load(), callers)
	}
	if p := peak.Load(); p != codec.MaxInFlightSRMP {
		t.Errorf("at most %d calls ran at once, want %d", p, codec.MaxInFlightSRMP)
	}
}

func TestBatteryClientUDP(t *testing.T) {
	_, addr := startServerUDP(t, rpc.Config{}, whoActions(t, "udp", nil))
	cl := dialClient(t, "udp://"+addr, rpc.ClientConfig{})
	ctx := context.Background()
	if n, err := rpc.Call[int32](ctx, cl, "Bench/Add", addArgs{1, 2}); err != nil || n != 3 {
		t.Errorf("Bench/Add over UDP: %d, %v", n, err)
	}
	pkt := bytes.Repeat([]byte{0xAB}, 1000)
	if b, err := rpc.Call[[]byte](ctx, cl, "Bench/EchoPacket", pkt); err != nil || !bytes.Equal(b, pkt) {
		t.Errorf("EchoPacket over UDP: %d bytes, %v", len(b), err)
	}
	if s, err := rpc.Call[string](ctx, cl, "Who/Name", nil); err != nil || s != "udp" {
		t.Errorf("Who/Name over UDP: %q, %v", s, err)
	}
	if _, err := rpc.Call[int](ctx, cl, "Bench/Nope", nil); apiCode(err) != 404 {
		t.Errorf("unknown action over UDP: %v", err)
	}
}

func TestBatteryClientAddresses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for _, bad := range []string{"", " , ", "ftp://h:1", "tcp://", "tcp://%zz", "tcp://127.0.0.1:1,http://127.0.0.1:2", "http://a:1,ws://b:2"} {
		if _, err := rpc.Dial(ctx, bad, rpc.ClientConfig{}); !errors.Is(err, rpc.ErrAddress) {
			t.Errorf("Dial %q: %v, want ErrAddress", bad, err)
		}
	}
	for _, cfg := range []rpc.ClientConfig{{Conns: -1}, {Conns: 10001}, {Timeout: -time.Second}} {
		if _, err := rpc.Dial(ctx, "127.0.0.1:1", cfg); !errors.Is(err, rpc.ErrConfig) {
			t.Errorf("Dial with %+v: %v, want ErrConfig", cfg, err)
		}
	}
	for _, cfg := range []rpc.Config{{MaxInFlight: -1}, {MaxHTTPHeader: -1}, {MaxArgKeys: -1}} {
		if _, err := rpc.NewServer(cfg); !errors.Is(err, rpc.ErrConfig) {
			t.Errorf("NewServer with %+v: %v, want ErrConfig", cfg, err)
		}
	}
	if err := rpc.DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig: %v", err)
	}
	if err := rpc.DefaultClientConfig().Validate(); err != nil {
		t.Errorf("DefaultClientConfig: %v", err)
	}
}

func TestBatteryClientClose(t *testing.T) {
	_, addr := whoServer(t, "x", nil)
	ctx := context.Background()
	for _, scheme := range []string{"tcp", "ws", "udp"} {
		t.Run(scheme, func(t *testing.T) {
			cl, err := rpc.Dial(ctx, scheme+"://"+addr, rpc.ClientConfig{Timeout: testTimeout})
			must(t, err)
			if scheme != "udp" {
				if n, err := rpc.Call[int](ctx, cl, "Bench/NoArg", nil); err != nil || n != 42 {
					t.Fatalf("before Close: %d, %v", n, err)
				}
			}
			if err := cl.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := cl.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if err := cl.Invoke(ctx, "Bench/NoArg", nil, nil); !errors.Is(err, rpc.ErrClosed) {
				t.Errorf("Invoke after Close: %v, want ErrClosed", err)
			}
			if err := cl.InvokeOneWay(ctx, "Bench/NoArg", nil); !errors.Is(err, rpc.ErrClosed) {
				t.Errorf("InvokeOneWay after Close: %v, want ErrClosed", err)
			}
		})
	}
}

// An http:// client refuses calls after Close like the others.
func TestBatteryClientCloseHTTP(t *testing.T) {
	_, addr := whoServer(t, "x", nil)
	cl, err := rpc.Dial(context.Background(), "http://"+addr, rpc.ClientConfig{Timeout: testTimeout})
	must(t, err)
	must(t, cl.Close())

	if err := cl.Invoke(context.Background(), "Bench/NoArg", nil, nil); !errors.Is(err, rpc.ErrClosed) {
		t.Errorf("Invoke after Close: %v, want ErrClosed", err)
	}
}

// A call in flight when the client closes fails with ErrConnClosed.
func TestBatteryClientCloseFailsCallsInFlight(t *testing.T) {
	g := newGate(t, 1)
	_, addr := startServer(t, rpc.Config{}, func(srv *rpc.Server) {
		must(t, rpc.Handle(srv, "Slow/Wait", func(ctx context.Context, _ struct{}) (int, error) { return 7, g.wait(ctx) }))
	})
	cl, err := rpc.Dial(context.Background(), addr, rpc.ClientConfig{Timeout: testTimeout})
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := rpc.Call[int](context.Background(), cl, "Slow/Wait", nil)
		done <- err
	}()
	recv(t, g.entered, "Slow/Wait to start")
	must(t, cl.Close())
	if err := recv(t, done, "the call in flight"); !errors.Is(err, codec.ErrConnClosed) {
		t.Errorf("a call in flight at Close: %v, want ErrConnClosed", err)
	}
}
