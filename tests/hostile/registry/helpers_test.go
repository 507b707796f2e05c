package registry_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/tcpserver"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
	"github.com/lifenet/lifenet/rpc/cluster"
)

// patience bounds every wait for something a passing test gets: generous,
// since the machine is shared and the race detector is slow. A passing
// test never waits it out.
const patience = 30 * time.Second

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// server is a real rpc.Server on loopback whose action Test/Who answers
// its name and counts the calls.
type server struct {
	name  string
	addr  string
	calls atomic.Int64
}

func startServer(t testing.TB, name string) *server {
	t.Helper()
	srv, err := rpc.NewServer(rpc.Config{Log: quietLog()})
	must(t, err)
	s := &server{name: name}
	must(t, rpc.Handle(srv, "Test/Who", func(context.Context, struct{}) (string, error) {
		s.calls.Add(1)
		return name, nil
	}))
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	must(t, err)
	s.addr = a.String()
	t.Cleanup(func() { srv.Close() })
	return s
}

// neverAccepts returns the address of a listener that never accepts: the
// kernel completes the handshakes (its backlog), so a dial succeeds and
// whatever is written waits unread.
func neverAccepts(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// acceptsSilently returns the address of a listener that accepts, reads
// everything and never answers (a hung process).
func acceptsSilently(t testing.TB) string {
	t.Helper()
	return tcpserver.Start(t, func(c net.Conn) { io.Copy(io.Discard, c) })
}

func failover(t testing.TB) rpc.Balancer {
	b, err := balance.NewFailover(balance.Config{})
	must(t, err)
	return b
}

func roundRobin(t testing.TB) rpc.Balancer {
	b, err := balance.NewRoundRobin(balance.Config{})
	must(t, err)
	return b
}

// dial dials a cluster client of r with cfg (its Logger quiet unless
// set), closed when the test ends.
func dial(t testing.TB, r rpc.Resolver, b rpc.Balancer, cfg cluster.Config) *cluster.Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLog()
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, err := cluster.Dial(ctx, r, b, cfg)
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// setResolver reports the set the test gives it with Set, each time.
type setResolver struct {
	mu      sync.Mutex
	cur     []rpc.Endpoint
	changed chan struct{}
}

func newSetResolver(eps []rpc.Endpoint) *setResolver {
	return &setResolver{cur: eps, changed: make(chan struct{}, 1)}
}

func (r *setResolver) Set(eps []rpc.Endpoint) {
	r.mu.Lock()
	r.cur = eps
	r.mu.Unlock()
	r.changed <- struct{}{}
}

func (r *setResolver) Watch(ctx context.Context, update func([]rpc.Endpoint)) error {
	for {
		r.mu.Lock()
		eps := append([]rpc.Endpoint(nil), r.cur...)
		r.mu.Unlock()
		update(eps)
		select {
		case <-r.changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// until polls cond every 10 ms until it holds, failing t after patience.
func until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// quantile returns the q quantile (0 to 1) of ds, sorted in place.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[min(int(q*float64(len(ds))), len(ds)-1)]
}
