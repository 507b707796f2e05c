package fleet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/rpcbench"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// rpcServer starts an rpc server with the benchmark controller on
// 127.0.0.1, limited to maxConns connections (transport.NoLimit: none),
// and returns its address; the test's end closes it.
func rpcServer(t *testing.T, maxConns int) string {
	t.Helper()
	cfg := rpc.Config{}
	cfg.Transport.MaxConns = maxConns
	cfg.Transport.MaxConnsPerIP = transport.NoLimit
	srv, err := rpc.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rpcbench.RegisterBench(srv, true); err != nil {
		t.Fatal(err)
	}
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return a.String()
}

// echoServer is a plain std echo server; the test's end closes it and
// its connections and waits for its goroutines.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { io.Copy(c, c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func sources(t *testing.T, s string) []netip.Addr {
	t.Helper()
	a, err := ParseSources(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// checkClean fails the test unless every connection was held to the end
// with no error of any kind.
func checkClean(t *testing.T, r *Report, conns int) {
	t.Helper()
	if r.Held != int64(conns) || r.EverHeld != int64(conns) || r.Refused+r.Failed+r.Lost != 0 {
		t.Fatalf("held %d (ever %d) of %d, refused %d (%s), failed %d (%s), lost %d (%s)", r.Held, r.EverHeld, conns,
			r.Refused, r.FirstRefused, r.Failed, r.FirstFailed, r.Lost, r.FirstLost)
	}
	if r.CallErrors != 0 || r.Unexpected != 0 || r.Interrupted {
		t.Fatalf("error replies %d (%s), unexpected %d, interrupted %v", r.CallErrors, r.FirstCallError, r.Unexpected, r.Interrupted)
	}
}

// 200 connections over two source addresses to an rpc server: every one
// held, heartbeats answered, one burst each answered, nothing failed.
func TestSRMPFleetHoldsAndBeats(t *testing.T) {
	t.Parallel()
	addr := rpcServer(t, transport.NoLimit)
	r, err := Run(context.Background(), Config{
		Remote: addr, Conns: 200, Sources: sources(t, "127.0.0.1-127.0.0.2"),
		Heartbeat: 200 * time.Millisecond, Duration: 1500 * time.Millisecond, Idle: 500 * time.Millisecond,
		Burst: 60 << 10, Timeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, r, 200)
	if r.Heartbeats == 0 || r.RTTMax <= 0 || r.RTTP99 < r.RTTP50 {
		t.Errorf("heartbeats %d, RTT p50 %v p99 %v max %v: want heartbeats answered and timed", r.Heartbeats, r.RTTP50, r.RTTP99, r.RTTMax)
	}
	if r.Bursts != 200 {
		t.Errorf("bursts answered %d, want 200", r.Bursts)
	}
	if len(r.Sources) != 2 {
		t.Errorf("sources %v, want 2", r.Sources)
	}
	if procStats && (r.Self.RSSBefore <= 0 || r.Self.RSSIdle <= 0 || r.Self.HeldIdle != 200) {
		t.Errorf("self: %+v: want both samples and 200 held", r.Self)
	}
}

// An action the server lacks: every first call gets an error reply, so
// no connection is held, and the first error names it.
func TestSRMPUnknownActionFails(t *testing.T) {
	t.Parallel()
	addr := rpcServer(t, transport.NoLimit)
	r, err := Run(context.Background(), Config{Remote: addr, Conns: 5, Action: "Bench/Nope", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed != 5 || r.EverHeld != 0 || !strings.Contains(r.FirstFailed, "Bench/Nope: error 404") {
		t.Fatalf("failed %d, held %d, first %q: want 5 failed with the 404", r.Failed, r.EverHeld, r.FirstFailed)
	}
}

// --proto echo against a std echo server: held, heartbeats and bursts
// echoed.
func TestEchoFleet(t *testing.T) {
	t.Parallel()
	addr := echoServer(t)
	r, err := Run(context.Background(), Config{
		Remote: addr, Conns: 50, Proto: ProtoEcho, Heartbeat: 100 * time.Millisecond,
		Duration: time.Second, Idle: 300 * time.Millisecond, Burst: 100_000, Timeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, r, 50)
	if r.Heartbeats == 0 || r.Bursts != 50 {
		t.Errorf("heartbeats %d, bursts %d: want some and 50", r.Heartbeats, r.Bursts)
	}
}

// A server capped at 20 connections: 20 held, the other 10 refused, with
// the first refusal's text.
func TestRefusedPastMaxConns(t *testing.T) {
	t.Parallel()
	addr := rpcServer(t, 20)
	r, err := Run(context.Background(), Config{Remote: addr, Conns: 30, Heartbeat: time.Second, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if r.EverHeld != 20 || r.Refused != 10 || r.Failed != 0 || r.FirstRefused == "" {
		t.Fatalf("held %d, refused %d (%q), failed %d (%q): want 20 and 10", r.EverHeld, r.Refused, r.FirstRefused, r.Failed, r.FirstFailed)
	}
}

// No server: every connect refused, none hangs.
func TestConnectRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r, err := Run(context.Background(), Config{Remote: addr, Conns: 3, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if r.Refused != 3 || !strings.Contains(r.FirstRefused, "refused") {
		t.Fatalf("refused %d (%q), want 3", r.Refused, r.FirstRefused)
	}
}

// A cancelled context ends the run early and says so.
func TestInterrupted(t *testing.T) {
	t.Parallel()
	addr := rpcServer(t, transport.NoLimit)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Run(ctx, Config{Remote: addr, Conns: 10, Duration: time.Hour, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted {
		t.Fatal("not Interrupted")
	}
}

func TestBadConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{
		{Remote: "127.0.0.1:1"},
		{Remote: "127.0.0.1:1", Conns: 1, Proto: "http"},
		{Remote: "127.0.0.1:1", Conns: 1, Action: strings.Repeat("a", 128)},
		{Remote: "127.0.0.1:1", Conns: 1, Heartbeat: -time.Second},
		{Remote: "::1:1", Conns: 1},
		{Remote: "[::1]:1", Conns: 1, Sources: []netip.Addr{netip.MustParseAddr("127.0.0.1")}},
	} {
		if _, err := Run(context.Background(), c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
}
