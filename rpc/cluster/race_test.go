package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/cluster"
)

func raceCtx(stagger time.Duration) context.Context {
	return cluster.Race(cluster.Idempotent(context.Background()), stagger)
}

// A race answers with the fast server while the slow one, asked first, is
// canceled (Done reports it Canceled).
func TestRaceFastWins(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 2, nil)
	ss[0].delay.Store(int64(5 * time.Second))
	b := record(failover(t)) // the first attempt goes to A
	c := dial(t, rpc.StaticResolver(endpointsOf(ss...)), b, cluster.Config{})
	start := time.Now()
	who, err := cluster.Call[string](raceCtx(30*time.Millisecond), c, "Test/Slow", nil)
	took := time.Since(start)
	if err != nil || who != "B" {
		t.Fatalf("race: %q, %v; want B's answer", who, err)
	}
	t.Logf("race answered by %s in %v (stagger 30 ms; A takes 5 s)", who, took)
	if took > time.Second {
		t.Errorf("the race took %v", took)
	}
	if o := b.of(ss[0].addr); o != (outcomes{canceled: 1}) {
		t.Errorf("the slow server's outcomes: %+v, want one Canceled", o)
	}
	if o := b.of(ss[1].addr); o != (outcomes{ok: 1}) {
		t.Errorf("the fast server's outcomes: %+v, want one success", o)
	}
	if n := ss[0].calls.Load(); n != 1 {
		t.Errorf("the slow server got %d calls, want 1", n)
	}
}

// With round-robin over three servers, two slow, the race widens every
// stagger until the fast one answers; each endpoint gets one attempt.
func TestRaceWidens(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 3, nil)
	fast := 2
	for i, s := range ss {
		if i != fast {
			s.delay.Store(int64(5 * time.Second))
		}
	}
	b := record(roundRobin(t))
	c := dial(t, rpc.StaticResolver(endpointsOf(ss...)), b, cluster.Config{})
	who, err := cluster.Call[string](raceCtx(20*time.Millisecond), c, "Test/Slow", nil)
	if err != nil || who != ss[fast].name {
		t.Fatalf("race: %q, %v; want %s's answer", who, err, ss[fast].name)
	}
	for i, s := range ss {
		if n := s.calls.Load(); n > 1 {
			t.Errorf("server %s got %d attempts of the race", s.name, n)
		}
		want := outcomes{canceled: 1}
		if i == fast {
			want = outcomes{ok: 1}
		}
		if o := b.of(s.addr); o != want && !(i != fast && o == (outcomes{})) {
			t.Errorf("server %s: outcomes %+v, want %+v", s.name, o, want)
		}
	}
}

// An attempt that fails starts the next at once, without waiting out the
// stagger.
func TestRaceFailureStartsNext(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t, "A", nil)
	c := dial(t, rpc.StaticResolver{{Addr: deadAddr(t)}, {Addr: s.addr}}, failover(t), cluster.Config{})
	start := time.Now()
	who, err := cluster.Call[string](raceCtx(5*time.Second), c, "Test/Slow", nil)
	if err != nil || who != "A" {
		t.Fatalf("race: %q, %v; want A's answer", who, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the race took %v: the failed attempt did not start the next", took)
	}
}

// A race fails with every attempt's failure (the first), and a race call
// not marked idempotent fails with ErrConfig, sent nowhere.
func TestRaceErrors(t *testing.T) {
	leakcheck.Check(t)
	s := startServer(t, "A", nil)
	c := dial(t, rpc.StaticResolver{{Addr: s.addr}}, roundRobin(t), cluster.Config{})
	_, err := cluster.Call[string](cluster.Race(context.Background(), time.Millisecond), c, "Test/Who", nil)
	if !errors.Is(err, cluster.ErrConfig) {
		t.Errorf("a race not marked idempotent: %v, want ErrConfig", err)
	}
	if s.calls.Load() != 0 {
		t.Errorf("the refused race reached the server")
	}
	if _, err := cluster.Call[string](raceCtx(time.Millisecond), c, "Test/Fail", nil); !errors.Is(err, rpc.ErrArgs) {
		t.Errorf("a race of Test/Fail: %v, want rpc.ErrArgs", err)
	}
	if who, err := cluster.Call[string](raceCtx(time.Millisecond), c, "Test/Who", nil); err != nil || who != "A" {
		t.Errorf("a race over one endpoint: %q, %v", who, err)
	}
	if err := c.Invoke(raceCtx(time.Millisecond), "Test/Who", nil, nil); err != nil {
		t.Errorf("a race with no result: %v", err)
	}
}

// Under failover, which always prefers the first usable endpoint, a race
// over three servers, the first two slow, still widens to the third.
func TestRaceWidensUnderFailover(t *testing.T) {
	leakcheck.Check(t)
	ss := startServers(t, 3, nil)
	ss[0].delay.Store(int64(3 * time.Second))
	ss[1].delay.Store(int64(3 * time.Second))
	c := dial(t, rpc.StaticResolver(endpointsOf(ss...)), failover(t), cluster.Config{})
	who, err := cluster.Call[string](raceCtx(20*time.Millisecond), c, "Test/Slow", nil)
	if err != nil || who != "C" {
		t.Errorf("race under failover: %q, %v; want C's answer", who, err)
	}
}
