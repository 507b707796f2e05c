package cluster_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/logattr/logtest"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
	"github.com/lifenet/lifenet/rpc/cluster"
)

// load runs n calls of Test/Who from workers goroutines and returns the
// first error.
func load(c *cluster.Client, n, workers int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := cluster.Call[string](context.Background(), c, "Test/Who", nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// checkShares fails t unless each server's share of total calls is within
// 3 points of want (in per cent).
func checkShares(t *testing.T, ss []*server, want []float64, total int) {
	t.Helper()
	for i, s := range ss {
		got := 100 * float64(s.calls.Load()) / float64(total)
		t.Logf("server %s: %d calls, %.1f %% (want %.1f ± 3)", s.name, s.calls.Load(), got, want[i])
		if got < want[i]-3 || got > want[i]+3 {
			t.Errorf("server %s took %.1f %% of the calls, want %.1f ± 3", s.name, got, want[i])
		}
	}
}

func TestRoundRobinShares(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 3, nil)
	c := dial(t, rpc.StaticResolver(endpointsOf(ss...)), roundRobin(t), cluster.Config{})
	must(t, load(c, 3000, 8))
	checkShares(t, ss, []float64{100.0 / 3, 100.0 / 3, 100.0 / 3}, 3000)
}

func TestWeightedShares(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 3, nil)
	eps := endpointsOf(ss...)
	for i := range eps {
		eps[i].Weight = i + 1
	}
	b, err := balance.NewWeightedRoundRobin(balance.Config{})
	must(t, err)
	c := dial(t, rpc.StaticResolver(eps), b, cluster.Config{})
	must(t, load(c, 3000, 8))
	checkShares(t, ss, []float64{100.0 / 6, 200.0 / 6, 300.0 / 6}, 3000)
}

// A server killed mid-load (rpc.Server.Close: its connections cut, the
// calls it runs end unanswered): only the calls in flight on it fail, each
// with rpc.ErrConnClosed; no call runs twice (the calls are not
// idempotent; retries may resend only what was never written); and no
// attempt goes to it 1 s after the kill.
func TestServerKilledMidLoad(t *testing.T) {
	leakcheck.Check(t)
	l := newLedger()
	ss := startServers(t, 3, l)
	victim := ss[1]
	cfg := cluster.Config{Retry: cluster.RetryPolicy{MaxAttempts: 3, Budget: cluster.RetryBudget{MaxTokens: 1000}}}
	c := dial(t, rpc.StaticResolver(endpointsOf(ss...)), roundRobin(t), cfg)

	type failure struct {
		id  int64
		err error
	}
	var (
		id       atomic.Int64
		stop     atomic.Bool
		mu       sync.Mutex
		failures []failure
		calls    atomic.Int64
	)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for !stop.Load() {
				n := id.Add(1)
				_, err := cluster.Call[string](context.Background(), c, "Test/Work", WorkArgs{ID: n, Sleep: 2 * time.Millisecond})
				calls.Add(1)
				if err != nil {
					mu.Lock()
					failures = append(failures, failure{n, err})
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	victim.srv.Close()
	killed := time.Now()
	time.Sleep(time.Second)
	attemptsAt1s := attemptsOf(c, victim.addr)
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()

	if twice := l.twice(); len(twice) > 0 {
		t.Errorf("calls run twice: %v", twice)
	}
	for _, f := range failures {
		if !errors.Is(f.err, rpc.ErrConnClosed) {
			t.Errorf("call %d failed with %v, want an error matching rpc.ErrConnClosed", f.id, f.err)
		}
		if on, ran := l.server(f.id); ran && on != victim.name {
			t.Errorf("call %d ran on %s but failed: %v", f.id, on, f.err)
		}
	}
	if end := attemptsOf(c, victim.addr); end != attemptsAt1s {
		t.Errorf("attempts to the killed server: %d 1 s after the kill, %d at the end", attemptsAt1s, end)
	}
	t.Logf("%d calls, %d failed (in flight on the killed server), kill at %v; attempts to it: %d",
		calls.Load(), len(failures), killed.Format("15:04:05.000"), attemptsAt1s)
	if len(failures) > 8 {
		t.Errorf("%d calls failed; at most the 8 in flight may", len(failures))
	}
}

func attemptsOf(c *cluster.Client, addr string) uint64 {
	for _, e := range c.Endpoints() {
		if e.Addr == addr {
			return e.Attempts
		}
	}
	return 0
}

// A server added to the set mid-run takes calls at once (round-robin: one
// of the next three); one removed drains: its calls in flight finish, it
// gets no new one, and its client closes once they have.
func TestSetChangesUnderLoad(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 3, nil)
	r := newSetResolver(endpointsOf(ss[0], ss[1]))
	c := dial(t, r, roundRobin(t), cluster.Config{})

	// Added: the next few calls reach it.
	r.Set(endpointsOf(ss...))
	until(t, "the new endpoint in the set", func() bool { return len(c.Endpoints()) == 3 })
	for range 3 {
		_, err := cluster.Call[string](context.Background(), c, "Test/Who", nil)
		must(t, err)
	}
	if n := ss[2].calls.Load(); n != 1 {
		t.Errorf("the added server took %d of the 3 calls after the update, want 1", n)
	}

	// Removed with calls in flight on it: they finish.
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for range 30 {
		wg.Go(func() {
			_, err := cluster.Call[string](context.Background(), c, "Test/Work", WorkArgs{Sleep: 200 * time.Millisecond})
			errs <- err
		})
	}
	until(t, "calls in flight on every server", func() bool {
		for _, e := range c.Endpoints() {
			if e.InFlight == 0 {
				return false
			}
		}
		return true
	})
	before := ss[0].who.Load()
	r.Set(endpointsOf(ss[1], ss[2]))
	until(t, "the removed endpoint draining", func() bool {
		for _, e := range c.Endpoints() {
			if e.Addr == ss[0].addr {
				return e.Draining
			}
		}
		return false
	})
	for range 30 {
		_, err := cluster.Call[string](context.Background(), c, "Test/Who", nil)
		must(t, err)
	}
	if n := ss[0].who.Load(); n != before {
		t.Errorf("the removed server took %d calls after it left the set", n-before)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a call in flight across the set change failed: %v", err)
		}
	}
	until(t, "the drained endpoint closed", func() bool {
		for _, e := range c.Endpoints() {
			if e.Addr == ss[0].addr {
				return false
			}
		}
		return ss[0].srv.Stats().Sessions == 0
	})
}

// A set change back and forth under load fails no call.
func TestSetFlapUnderLoad(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 3, nil)
	r := newSetResolver(endpointsOf(ss...))
	c := dial(t, r, roundRobin(t), cluster.Config{})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sets := [][]rpc.Endpoint{endpointsOf(ss[0]), endpointsOf(ss[1], ss[2]), endpointsOf(ss...), endpointsOf(ss[2])}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				r.Set(sets[i%len(sets)])
			}
		}
	}()
	err := load(c, 3000, 8)
	close(stop)
	<-done
	must(t, err)
}

// A dial that fails (nothing listens) reports the endpoint unavailable at
// once: it is shielded, and the calls go to the live one. The call whose
// pick fell on it was never written: it went to the live one too.
func TestDialFailureShields(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t, "A", nil)
	dead := deadAddr(t)
	b := record(roundRobin(t))
	c := dial(t, rpc.StaticResolver{{Addr: dead}, {Addr: s.addr}}, b, cluster.Config{})
	for i := range 20 {
		if who, err := cluster.Call[string](context.Background(), c, "Test/Who", nil); err != nil || who != "A" {
			t.Errorf("call %d: %q, %v; want A's answer (the dead endpoint's dial fails, the call moves)", i, who, err)
		}
	}
	if o := b.of(dead); o.unavailable != 1 || o.ok != 0 {
		t.Errorf("the dead endpoint's outcomes: %+v, want 1 unavailable", o)
	}
	for _, e := range c.Endpoints() {
		if e.Addr == dead && (!e.Unreachable || e.DialFailures != 1 || e.Connected) {
			t.Errorf("the dead endpoint's state: %+v, want unreachable after 1 failed dial", e)
		}
	}
}

// How Done learns each outcome: an error reply is no unavailability, a
// timeout is a plain sample, a canceled caller is Canceled; a draining
// server's 503 is an error reply too (a plain sample) while the client
// shields it itself (HealthNotServing), and Unavailable with the client's
// health checks off.
func TestOutcomes(t *testing.T) {
	leakcheck.Check(t)
	t.Run("health", func(t *testing.T) { testOutcomes(t, cluster.Config{}) })
	t.Run("no health checks", func(t *testing.T) { testOutcomes(t, cluster.Config{ProbeInterval: -1}) })
}

func testOutcomes(t *testing.T, cfg cluster.Config) {
	l := newLedger()
	s := startServer(t, "A", l)
	b := record(roundRobin(t))
	c := dial(t, rpc.StaticResolver{{Addr: s.addr}}, b, cfg)
	ctx := context.Background()

	_, err := cluster.Call[string](ctx, c, "Test/Fail", nil)
	if !errors.Is(err, rpc.ErrArgs) {
		t.Fatalf("Test/Fail: %v, want rpc.ErrArgs", err)
	}
	if o := b.of(s.addr); o != (outcomes{ok: 1}) {
		t.Errorf("after an error reply: %+v, want a plain sample", o)
	}

	tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	_, err = cluster.Call[string](tctx, c, "Test/Work", WorkArgs{Sleep: time.Second})
	cancel()
	if !errors.Is(err, rpc.ErrTimeout) {
		t.Fatalf("a call past its deadline: %v, want rpc.ErrTimeout", err)
	}
	if o := b.of(s.addr); o != (outcomes{ok: 2}) {
		t.Errorf("after a timeout: %+v, want a plain sample", o)
	}
	if h := c.Endpoints()[0].Health; h != cluster.HealthOK {
		t.Errorf("after one timeout: health %v, want ok (one is not enough)", h)
	}

	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = cluster.Call[string](cctx, c, "Test/Work", WorkArgs{Sleep: time.Second})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled call: %v, want context.Canceled", err)
	}
	if o := b.of(s.addr); o != (outcomes{ok: 2, canceled: 1}) {
		t.Errorf("after a canceled call: %+v, want Canceled", o)
	}

	// Shutdown refuses new calls with 503 while one runs.
	running := make(chan error, 1)
	go func() {
		_, err := cluster.Call[string](ctx, c, "Test/Work", WorkArgs{ID: 99, Sleep: 300 * time.Millisecond})
		running <- err
	}()
	until(t, "a call running", func() bool { return l.count(99) == 1 })
	shut := make(chan error, 1)
	go func() { shut <- s.srv.Shutdown(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	_, err = cluster.Call[string](ctx, c, "Test/Who", nil)
	if !errors.Is(err, rpc.ErrShutdown) {
		t.Errorf("a call to a draining server: %v, want rpc.ErrShutdown", err)
	}
	o, h := b.of(s.addr), c.Endpoints()[0].Health
	if cfg.ProbeInterval < 0 {
		if o.unavailable != 1 || h != cluster.HealthOK {
			t.Errorf("after a 503 shutdown, no health checks: %+v, health %v; want 1 unavailable, health ok", o, h)
		}
	} else if o.unavailable != 0 || h != cluster.HealthNotServing {
		t.Errorf("after a 503 shutdown: %+v, health %v; want no unavailable, health not serving", o, h)
	}
	must(t, <-running)
	must(t, <-shut)
}

func TestConfig(t *testing.T) {
	leakcheck.Check(t)
	bad := []cluster.Config{
		{RaceAttempts: -1},
		{RaceAttempts: cluster.MaxRaceAttempts + 1},
		{ResolveTimeout: -1},
		{Retry: cluster.RetryPolicy{MaxAttempts: cluster.MaxAttempts + 1}},
		{Retry: cluster.RetryPolicy{InitialBackoff: time.Second, MaxBackoff: time.Millisecond}},
		{Retry: cluster.RetryPolicy{Multiplier: 0.5}},
		{Retry: cluster.RetryPolicy{Jitter: 2}},
		{Retry: cluster.RetryPolicy{Budget: cluster.RetryBudget{TokenRatio: 2}}},
		{Client: rpc.ClientConfig{Timeout: -1}},
		{ConnectTimeout: -1},
		{ConnectTimeout: cluster.MaxConnectTimeout + 1},
		{MaxEndpoints: -1},
		{MaxEndpoints: cluster.MaxMaxEndpoints + 1},
	}
	for i, cfg := range bad {
		if err := cfg.Validate(); !errors.Is(err, cluster.ErrConfig) {
			t.Errorf("config %d: Validate = %v, want ErrConfig", i, err)
		}
		if _, err := cluster.Dial(context.Background(), rpc.StaticResolver{{Addr: "x"}}, roundRobin(t), cfg); !errors.Is(err, cluster.ErrConfig) {
			t.Errorf("config %d: Dial = %v, want ErrConfig", i, err)
		}
	}
	must(t, cluster.DefaultConfig().Validate())
	if d := cluster.DefaultConfig(); d.Retry.MaxAttempts != 1 || d.RaceAttempts != cluster.DefaultRaceAttempts || d.ResolveTimeout != cluster.DefaultResolveTimeout ||
		d.ConnectTimeout != cluster.DefaultConnectTimeout || d.MaxEndpoints != cluster.DefaultMaxEndpoints {
		t.Errorf("DefaultConfig = %+v", d)
	}
}

// A set past MaxEndpoints keeps its first MaxEndpoints valid entries
// (invalid ones and repeats do not count) and says once what it skipped.
func TestMaxEndpoints(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 3, nil)
	rec, log := logtest.New(slog.LevelInfo)
	set := []rpc.Endpoint{{Addr: "udp://"}, {Addr: ss[0].addr}, {Addr: ss[0].addr}, {Addr: ss[1].addr}, {Addr: ss[2].addr}}
	r := newSetResolver(set)
	c := dial(t, r, roundRobin(t), cluster.Config{MaxEndpoints: 2, Logger: log})
	kept := map[string]bool{}
	for _, e := range c.Endpoints() {
		kept[e.Addr] = true
	}
	if len(kept) != 2 || !kept[ss[0].addr] || !kept[ss[1].addr] {
		t.Fatalf("endpoints kept: %v; want A's and B's", kept)
	}
	r.Set(set)
	until(t, "the set again", func() bool { return len(rec.Find(slog.LevelInfo, "cluster: endpoint set")) == 2 })
	if n := len(rec.Find(slog.LevelWarn, "cluster: endpoint set over MaxEndpoints; the rest skipped")); n != 1 {
		t.Errorf("%d lines for the set over MaxEndpoints, want 1 (the same set again says nothing new)", n)
	}
	if n := len(rec.Find(slog.LevelWarn, "cluster: endpoint skipped")); n != 1 {
		t.Errorf("%d lines for the invalid entry, want 1", n)
	}
}

// Dial fails with the resolver's error, or when no set comes in time.
func TestDialResolution(t *testing.T) {
	leakcheck.Check(t)
	_, err := cluster.Dial(context.Background(), rpc.StaticResolver{}, roundRobin(t), cluster.Config{})
	if !errors.Is(err, rpc.ErrNoEndpoints) {
		t.Errorf("Dial with an empty static list: %v, want rpc.ErrNoEndpoints", err)
	}
	start := time.Now()
	_, err = cluster.Dial(context.Background(), silentResolver{}, roundRobin(t), cluster.Config{ResolveTimeout: 50 * time.Millisecond})
	if !errors.Is(err, rpc.ErrNoEndpoints) || time.Since(start) > 2*time.Second {
		t.Errorf("Dial with a silent resolver: %v after %v, want rpc.ErrNoEndpoints after 50 ms", err, time.Since(start))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = cluster.Dial(ctx, silentResolver{}, roundRobin(t), cluster.Config{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Dial past its ctx: %v, want context.DeadlineExceeded", err)
	}
}

type silentResolver struct{}

func (silentResolver) Watch(ctx context.Context, _ func([]rpc.Endpoint)) error {
	<-ctx.Done()
	return ctx.Err()
}

// Close waits for the calls in flight, then refuses calls with
// rpc.ErrClosed.
func TestCloseDrains(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t, "A", nil)
	c := dial(t, rpc.StaticResolver{{Addr: s.addr}}, roundRobin(t), cluster.Config{})
	res := make(chan error, 1)
	go func() {
		_, err := cluster.Call[string](context.Background(), c, "Test/Work", WorkArgs{Sleep: 100 * time.Millisecond})
		res <- err
	}()
	until(t, "a call in flight", func() bool { return c.Endpoints()[0].InFlight == 1 })
	must(t, c.Close())
	// Close returns once the call has ended on its endpoint, which may be
	// a moment before Call returns to the goroutine: wait for it, and ask
	// that it succeeded (a Close that did not wait would have closed its
	// connection under it).
	select {
	case err := <-res:
		if err != nil {
			t.Errorf("the call in flight at Close: %v, want its answer (Close waits for it)", err)
		}
	case <-time.After(testTimeout):
		t.Error("the call in flight at Close did not end")
	}
	if _, err := cluster.Call[string](context.Background(), c, "Test/Who", nil); !errors.Is(err, rpc.ErrClosed) {
		t.Errorf("a call after Close: %v, want rpc.ErrClosed", err)
	}
	if s.srv.Stats().Sessions != 0 {
		until(t, "the server's session closed", func() bool { return s.srv.Stats().Sessions == 0 })
	}
}

// A call that races Close either runs or fails with rpc.ErrClosed: not
// with ErrNoEndpoints, as if the set had emptied.
func TestCallRacingCloseIsClosed(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t, "A", nil)
	for range 20 {
		c := dial(t, rpc.StaticResolver{{Addr: s.addr}}, roundRobin(t), cluster.Config{})
		errs := make(chan error, 4*100)
		var wg sync.WaitGroup
		var made atomic.Int32
		for range 4 {
			wg.Go(func() {
				for range 100 {
					_, err := cluster.Call[string](context.Background(), c, "Test/Who", nil)
					made.Add(1)
					errs <- err
				}
			})
		}
		until(t, "calls under way", func() bool { return made.Load() >= 20 })
		must(t, c.Close())
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, rpc.ErrClosed) {
				t.Fatalf("a call racing Close: %v, want its answer or rpc.ErrClosed", err)
			}
		}
	}
}

// The hot path adds at most 2 allocations to rpc.Client.Invoke's.
func TestInvokeAllocs(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t, "A", nil)
	direct, err := rpc.Dial(context.Background(), s.addr, rpc.ClientConfig{})
	must(t, err)
	defer direct.Close()
	c := dial(t, rpc.StaticResolver{{Addr: s.addr}}, roundRobin(t), cluster.Config{})
	ctx := context.Background()
	var out string
	base := testing.AllocsPerRun(500, func() { must(t, direct.Invoke(ctx, "Test/Who", nil, &out)) })
	over := testing.AllocsPerRun(500, func() { must(t, c.Invoke(ctx, "Test/Who", nil, &out)) })
	t.Logf("allocations per call: rpc.Client %.1f, cluster.Client %.1f", base, over)
	if over > base+2 {
		t.Errorf("cluster.Client.Invoke allocates %.1f per call, rpc.Client.Invoke %.1f: more than 2 over", over, base)
	}
}
