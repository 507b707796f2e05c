package cluster_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
	"github.com/lifenet/lifenet/rpc/cluster"
)

// testTimeout bounds every wait, so that a broken client fails a test in
// seconds instead of hanging it.
const testTimeout = 10 * time.Second

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ledger counts the runs of each call ID across every server of a test.
type ledger struct {
	mu   sync.Mutex
	runs map[int64]int
	on   map[int64]string // the server that ran it (the last one)
}

func newLedger() *ledger { return &ledger{runs: map[int64]int{}, on: map[int64]string{}} }

func (l *ledger) ran(id int64, name string) {
	l.mu.Lock()
	l.runs[id]++
	l.on[id] = name
	l.mu.Unlock()
}

// twice returns the IDs that ran more than once.
func (l *ledger) twice() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int64
	for id, n := range l.runs {
		if n > 1 {
			out = append(out, id)
		}
	}
	return out
}

func (l *ledger) count(id int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[id]
}

func (l *ledger) server(id int64) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.on[id]
	return s, ok
}

// WorkArgs are Test/Work's: the call's ID (for the ledger) and how long
// it runs.
type WorkArgs struct {
	ID    int64
	Sleep time.Duration
}

// server is one real rpc.Server on loopback.
type server struct {
	name  string
	srv   *rpc.Server
	addr  string
	calls atomic.Int64 // Test/Who and Test/Work calls it answered or ran
	who   atomic.Int64 // Test/Who calls alone
	delay atomic.Int64 // how long Test/Slow takes here (a time.Duration)
}

// startServer starts a server named name on 127.0.0.1:0 with the actions
// Test/Who (its name), Test/Slow (its name after its delay), Test/Work (WorkArgs: counted in l, sleeps, then its
// name; nil l counts nothing) and Test/Fail (a 400 error reply). It is
// closed when the test ends.
func startServer(t *testing.T, name string, l *ledger) *server {
	t.Helper()
	return startServerWith(t, name, l, rpc.Config{})
}

// startServerWith is startServer with cfg (its Log quiet unless set).
func startServerWith(t *testing.T, name string, l *ledger, cfg rpc.Config) *server {
	t.Helper()
	if cfg.Log == nil {
		cfg.Log = quietLog()
	}
	srv, err := rpc.NewServer(cfg)
	must(t, err)
	s := &server{name: name, srv: srv}
	must(t, rpc.Handle(srv, "Test/Who", func(context.Context, struct{}) (string, error) {
		s.calls.Add(1)
		s.who.Add(1)
		return name, nil
	}))
	must(t, rpc.Handle(srv, "Test/Work", func(ctx context.Context, a WorkArgs) (string, error) {
		s.calls.Add(1)
		if l != nil {
			l.ran(a.ID, name)
		}
		if a.Sleep > 0 {
			select {
			case <-time.After(a.Sleep):
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return name, nil
	}))
	must(t, rpc.Handle(srv, "Test/Slow", func(ctx context.Context, _ struct{}) (string, error) {
		s.calls.Add(1)
		select {
		case <-time.After(time.Duration(s.delay.Load())):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return name, nil
	}))
	must(t, rpc.Handle(srv, "Test/Fail", func(context.Context, struct{}) (string, error) {
		s.calls.Add(1)
		return "", rpc.NewError(rpc.CodeBadRequest, "refused by "+name)
	}))
	addr, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	must(t, err)
	s.addr = addr.String()
	t.Cleanup(func() { srv.Close() })
	return s
}

func startServers(t *testing.T, n int, l *ledger) []*server {
	t.Helper()
	out := make([]*server, n)
	for i := range out {
		out[i] = startServer(t, string(rune('A'+i)), l)
	}
	return out
}

func endpointsOf(ss ...*server) []rpc.Endpoint {
	out := make([]rpc.Endpoint, len(ss))
	for i, s := range ss {
		out[i] = rpc.Endpoint{Addr: s.addr}
	}
	return out
}

// setResolver is a resolver whose set the test changes with Set.
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
	select {
	case r.changed <- struct{}{}:
	default:
	}
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

// recorder wraps a balancer and counts the outcomes Done reports, by
// address.
type recorder struct {
	rpc.Balancer
	mu      sync.Mutex
	results map[string]*outcomes
}

type outcomes struct{ ok, unavailable, canceled int }

func record(b rpc.Balancer) *recorder { return &recorder{Balancer: b, results: map[string]*outcomes{}} }

func (r *recorder) Done(addr string, res rpc.PickResult) {
	r.mu.Lock()
	o := r.results[addr]
	if o == nil {
		o = &outcomes{}
		r.results[addr] = o
	}
	switch {
	case res.Unavailable:
		o.unavailable++
	case res.Canceled:
		o.canceled++
	default:
		o.ok++
	}
	r.mu.Unlock()
	r.Balancer.Done(addr, res)
}

func (r *recorder) of(addr string) outcomes {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.results[addr]; o != nil {
		return *o
	}
	return outcomes{}
}

func roundRobin(t testing.TB) rpc.Balancer {
	b, err := balance.NewRoundRobin(balance.Config{})
	must(t, err)
	return b
}

// dial dials a cluster client of r with cfg (a short per-call timeout
// unless cfg sets one), closed when the test ends.
func dial(t *testing.T, r rpc.Resolver, b rpc.Balancer, cfg cluster.Config) *cluster.Client {
	t.Helper()
	if cfg.Client.Timeout == 0 {
		cfg.Client.Timeout = testTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLog()
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := cluster.Dial(ctx, r, b, cfg)
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	l.Close()
	return addr
}

// until polls cond every 5 ms until it holds or testTimeout passes.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
