package cluster_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
	"github.com/lifenet/lifenet/rpc/cluster"
)

func failover(t testing.TB) rpc.Balancer {
	b, err := balance.NewFailover(balance.Config{})
	must(t, err)
	return b
}

// killDuring runs a Test/Work call of id on c (Failover: it goes to ss[0]
// first), closes ss[0] once the call runs there, and returns the call's
// answer.
func killDuring(t *testing.T, ctx context.Context, c *cluster.Client, l *ledger, ss []*server, id int64) (string, error) {
	t.Helper()
	type answer struct {
		who string
		err error
	}
	res := make(chan answer, 1)
	go func() {
		who, err := cluster.Call[string](ctx, c, "Test/Work", WorkArgs{ID: id, Sleep: 500 * time.Millisecond})
		res <- answer{who, err}
	}()
	until(t, "the call running on the first server", func() bool { on, ok := l.server(id); return ok && on == ss[0].name })
	ss[0].srv.Close()
	a := <-res
	return a.who, a.err
}

var retry3 = cluster.Config{Retry: cluster.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond}}

// An idempotent call whose server dies under it is sent again, to another
// endpoint, and succeeds there.
func TestRetryIdempotent(t *testing.T) {
	leakcheck.Check(t)
	l := newLedger()
	ss := startServers(t, 2, l)
	c := dial(t, rpc.StaticResolver(endpointsOf(ss...)), failover(t), retry3)
	who, err := killDuring(t, cluster.Idempotent(context.Background()), c, l, ss, 1)
	if err != nil || who != "B" {
		t.Fatalf("an idempotent call whose server died: %q, %v; want B's answer", who, err)
	}
	if n := l.count(1); n != 2 {
		t.Errorf("the idempotent call ran %d times, want 2 (once on each server)", n)
	}
}

// A call not marked idempotent that was written is never sent again: it
// fails with rpc.ErrConnClosed, having run once.
func TestRetryNeverResendsWritten(t *testing.T) {
	leakcheck.Check(t)
	l := newLedger()
	ss := startServers(t, 2, l)
	c := dial(t, rpc.StaticResolver(endpointsOf(ss...)), failover(t), retry3)
	_, err := killDuring(t, context.Background(), c, l, ss, 1)
	if !errors.Is(err, rpc.ErrConnClosed) {
		t.Fatalf("a written call whose server died: %v, want rpc.ErrConnClosed", err)
	}
	if n := l.count(1); n != 1 {
		t.Errorf("the call ran %d times, want 1", n)
	}
	if ss[1].calls.Load() != 0 {
		t.Errorf("the call reached the second server")
	}
}

// A call that never left (its endpoint could not be dialed) goes to
// another endpoint, idempotent or not, with a retry policy or without.
func TestRetryNotSent(t *testing.T) {
	leakcheck.Check(t)
	l := newLedger()
	s := startServer(t, "A", l)
	eps := rpc.StaticResolver{{Addr: deadAddr(t)}, {Addr: s.addr}}

	c := dial(t, eps, failover(t), retry3)
	who, err := cluster.Call[string](context.Background(), c, "Test/Work", WorkArgs{ID: 1})
	if err != nil || who != "A" {
		t.Errorf("a call whose first endpoint is down, with retries: %q, %v; want A's answer", who, err)
	}

	c = dial(t, eps, failover(t), cluster.Config{})
	who, err = cluster.Call[string](context.Background(), c, "Test/Work", WorkArgs{ID: 2})
	if err != nil || who != "A" {
		t.Errorf("the same without retries: %q, %v; want A's answer", who, err)
	}
	if n := l.count(1) + l.count(2); n != 2 {
		t.Errorf("the two calls ran %d times, want 2", n)
	}
}

// An error reply is not retried, idempotent or not.
func TestRetryNotOnErrorReply(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 2, nil)
	c := dial(t, rpc.StaticResolver(endpointsOf(ss...)), roundRobin(t), retry3)
	if _, err := cluster.Call[string](cluster.Idempotent(context.Background()), c, "Test/Fail", nil); !errors.Is(err, rpc.ErrArgs) {
		t.Fatalf("Test/Fail: %v, want rpc.ErrArgs", err)
	}
	if n := ss[0].calls.Load() + ss[1].calls.Load(); n != 1 {
		t.Errorf("an error reply ran %d times, want 1", n)
	}
}

// attempts sums the attempts c sent to its endpoints.
func attempts(c *cluster.Client) uint64 {
	var n uint64
	for _, e := range c.Endpoints() {
		n += e.Attempts
	}
	return n
}

// With every server down, the budget stops the retry storm: of 200 calls
// (3 attempts each allowed), about MaxTokens/2 are retried, not 400; with
// the budget off, every call makes its 3 attempts.
func TestRetryBudget(t *testing.T) {
	leakcheck.Check(t)
	eps := rpc.StaticResolver{{Addr: deadAddr(t)}, {Addr: deadAddr(t)}}
	const calls = 200
	run := func(cfg cluster.Config) uint64 {
		c := dial(t, eps, roundRobin(t), cfg)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range calls / 4 {
					if _, err := cluster.Call[string](context.Background(), c, "Test/Who", nil); !errors.Is(err, rpc.ErrNoServer) {
						t.Errorf("a call with every server down: %v, want rpc.ErrNoServer", err)
						return
					}
				}
			})
		}
		wg.Wait()
		return attempts(c)
	}
	with := run(retry3)
	off := retry3
	off.Retry.Budget.MaxTokens = -1
	without := run(off)
	t.Logf("attempts for %d calls, every server down: %d with the default budget (10 tokens), %d without", calls, with, without)
	if with > calls+10 {
		t.Errorf("with the budget, %d attempts for %d calls: the retries went past the budget", with, calls)
	}
	if without != 3*calls {
		t.Errorf("without the budget, %d attempts for %d calls, want %d", without, calls, 3*calls)
	}
}

// Successes refill the budget: once a burst of failures spent it, a call
// that could be retried is not; after 100 successes (the 10 tokens back)
// it is again. The failures are timeouts of idempotent calls on a server too slow (a
// failed dial no longer fails a call while another endpoint answers).
func TestRetryBudgetRefills(t *testing.T) {
	leakcheck.Check(t)
	slow := startServer(t, "S", nil)
	slow.delay.Store(int64(time.Hour))
	fast := startServer(t, "A", nil)
	cfg := retry3
	cfg.Client.Timeout = 50 * time.Millisecond
	cfg.ShieldTimeouts = -1 // the slow server keeps its turns
	r := newSetResolver([]rpc.Endpoint{{Addr: slow.addr}})
	c := dial(t, r, roundRobin(t), cfg)
	ctx := cluster.Idempotent(context.Background())
	setTo := func(eps ...rpc.Endpoint) {
		r.Set(eps)
		until(t, "the new set", func() bool { return len(c.Endpoints()) == len(eps) })
	}
	// failures counts the calls of 4 that fail, each of which starts on
	// the slow server (round-robin: each retry takes A's turn), retried
	// on A if the budget lets.
	failures := func() int {
		setTo(rpc.Endpoint{Addr: slow.addr}, rpc.Endpoint{Addr: fast.addr})
		n := 0
		for range 4 {
			if _, err := cluster.Call[string](ctx, c, "Test/Slow", nil); err != nil {
				n++
			}
		}
		return n
	}
	for range 20 { // spend the budget
		cluster.Call[string](ctx, c, "Test/Slow", nil)
	}
	if n := failures(); n == 0 {
		t.Errorf("with the budget spent, no call failed: retries went on")
	}
	setTo(rpc.Endpoint{Addr: fast.addr})
	for range 100 {
		_, err := cluster.Call[string](ctx, c, "Test/Slow", nil)
		must(t, err)
	}
	if n := failures(); n != 0 {
		t.Errorf("with the budget refilled, %d calls failed: they were not retried", n)
	}
}

// A failed dial leaves nothing written, and its error says so: it matches
// rpc.ErrNotSent (and rpc.ErrNoServer), whether the cluster client's first
// dial of the endpoint failed or the endpoint's rpc.Client could not dial
// again after its server went away.
func TestDialFailureIsNotSent(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	c := dial(t, rpc.StaticResolver{{Addr: deadAddr(t)}}, roundRobin(t), cluster.Config{})
	_, err := cluster.Call[string](ctx, c, "Test/Who", nil)
	if !errors.Is(err, rpc.ErrNotSent) || !errors.Is(err, rpc.ErrNoServer) {
		t.Errorf("a call whose endpoint cannot be dialed: %v; want rpc.ErrNotSent and rpc.ErrNoServer", err)
	}

	s := startServer(t, "A", nil)
	c = dial(t, rpc.StaticResolver{{Addr: s.addr}}, roundRobin(t), cluster.Config{})
	_, err = cluster.Call[string](ctx, c, "Test/Who", nil)
	must(t, err)
	s.srv.Close()
	until(t, "a call that finds its server gone and cannot dial it again", func() bool {
		_, err = cluster.Call[string](ctx, c, "Test/Who", nil)
		return errors.Is(err, rpc.ErrNoServer)
	})
	if !errors.Is(err, rpc.ErrNotSent) {
		t.Errorf("a call whose endpoint's client could not dial again: %v; want rpc.ErrNotSent", err)
	}
}

// A retry avoids every endpoint the call's earlier attempts went to, not
// only the last one's: under failover, with the first two of three servers
// too slow, an idempotent call's third attempt goes to the third server,
// not back to the first.
func TestRetryAvoidsEveryTriedEndpoint(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 3, nil)
	ss[0].delay.Store(int64(3 * time.Second))
	ss[1].delay.Store(int64(3 * time.Second))
	cfg := retry3
	cfg.Client.Timeout = 200 * time.Millisecond
	c := dial(t, rpc.StaticResolver(endpointsOf(ss...)), failover(t), cfg)
	who, err := cluster.Call[string](cluster.Idempotent(context.Background()), c, "Test/Slow", nil)
	if err != nil || who != "C" {
		t.Errorf("an idempotent call, A and B timing out: %q, %v; want C's answer", who, err)
	}
	for _, s := range ss {
		if n := s.calls.Load(); n != 1 {
			t.Errorf("server %s got %d attempts, want 1", s.name, n)
		}
	}
}

// A handler that passes on a refusal it got from a server it called (a
// draining one's 503) ran: its reply no longer reads as a refusal, so a
// call not marked idempotent is not sent again elsewhere, and the server
// that passed it on is not shielded as not serving.
func TestARefusalPassedOnIsNotRetried(t *testing.T) {
	leakcheck.Check(t)
	draining, err := rpc.NewServer(rpc.Config{Log: quietLog(), Interceptors: []rpc.Interceptor{
		func(context.Context, *rpc.Invocation, rpc.Next) error { return rpc.ErrNotServing },
	}})
	must(t, err)
	defer draining.Close()
	must(t, rpc.Handle(draining, "C/Do", func(context.Context, struct{}) (string, error) { return "c", nil }))
	da, err := draining.Listen(context.Background(), "tcp", "127.0.0.1:0")
	must(t, err)
	down, err := rpc.Dial(context.Background(), da.String(), rpc.ClientConfig{Log: quietLog()})
	must(t, err)
	defer down.Close()

	var runs atomic.Int64 // the middle tier's side effects
	middle := func() string {
		s, err := rpc.NewServer(rpc.Config{Log: quietLog()})
		must(t, err)
		t.Cleanup(func() { s.Close() })
		must(t, rpc.Handle(s, "B/Charge", func(ctx context.Context, _ struct{}) (string, error) {
			runs.Add(1)
			_, err := rpc.Call[string](ctx, down, "C/Do", nil)
			return "", err // passed on as it came
		}))
		a, err := s.Listen(context.Background(), "tcp", "127.0.0.1:0")
		must(t, err)
		return a.String()
	}
	b1, b2 := middle(), middle()
	c := dial(t, rpc.StaticResolver{{Addr: b1}, {Addr: b2}}, roundRobin(t), cluster.Config{Retry: cluster.RetryPolicy{MaxAttempts: 3}})
	_, err = cluster.Call[string](context.Background(), c, "B/Charge", nil)
	if rpc.CodeOf(err) != rpc.CodeUnavailable || errors.Is(err, rpc.ErrNotServing) || !strings.Contains(err.Error(), "rpc: not serving") {
		t.Errorf("the front's error %v: want a 503 that names the refusal but is none", err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the call ran %d times, want once", n)
	}
	for _, addr := range []string{b1, b2} {
		if h := healthOf(c, addr); h != cluster.HealthOK {
			t.Errorf("%s: health %v, want OK", addr, h)
		}
	}
}
