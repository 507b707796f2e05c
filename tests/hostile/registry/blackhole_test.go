package registry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/cluster"
)

// blackHoleBound is what a black hole may cost a fresh client's first
// call: generous for a loaded machine, and still far under the 15 s call
// Timeout it cost before (the call written on a connection that never
// answers, or waiting for a dial of its own).
const blackHoleBound = 8 * time.Second

// A black hole first in a Failover list, so that a fresh client's first
// call picks it: its SYNs dropped, a listener that never accepts, one that
// accepts and never answers. Each of three fresh clients, with the
// defaults (Timeout 15 s, ConnectTimeout 3 s), gets its first call
// answered by the healthy endpoint within blackHoleBound: the call waits
// for the black hole's dial for connectStagger (250 ms), then dials the
// next pick too and goes to the first that connects; nothing was written
// to the black hole. The black hole's dial ends within ConnectTimeout and
// marks it unreachable.
func TestBlackHoleCostsAFreshClientLittle(t *testing.T) {
	leakcheck.Check(t)
	healthy := startServer(t, "healthy")
	for _, kind := range []struct {
		name string
		addr func(testing.TB) string
	}{
		{"SYNs dropped", synDrop},
		{"never accepts", neverAccepts},
		{"accepts, never answers", acceptsSilently},
	} {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			hole := kind.addr(t)
			var worst time.Duration
			for i := range 3 {
				c := dial(t, rpc.StaticResolver{{Addr: hole}, {Addr: healthy.addr}}, failover(t), cluster.Config{})
				start := time.Now()
				who, err := cluster.Call[string](context.Background(), c, "Test/Who", nil)
				took := time.Since(start)
				worst = max(worst, took)
				if err != nil || who != "healthy" {
					t.Fatalf("client %d's first call: %q, %v after %v; want the healthy endpoint's answer", i, who, err, took)
				}
				if took > blackHoleBound {
					t.Errorf("client %d's first call took %v with a black hole first (want < %v; the call Timeout is 15 s)", i, took, blackHoleBound)
				}
				until(t, "the black hole's dial to fail", func() bool {
					for _, e := range c.Endpoints() {
						if e.Addr == hole {
							return e.Unreachable && !e.Connected && e.Attempts == 0
						}
					}
					return false
				})
				// The next call goes to the healthy endpoint at once.
				start = time.Now()
				if who, err := cluster.Call[string](context.Background(), c, "Test/Who", nil); err != nil || who != "healthy" {
					t.Fatalf("client %d's second call: %q, %v", i, who, err)
				}
				if d := time.Since(start); d > blackHoleBound {
					t.Errorf("client %d's second call took %v", i, d)
				}
				c.Close()
			}
			t.Logf("FIGURES black hole %q first in the list: a fresh client's first call answered in at most %v (3 clients)", kind.name, worst.Round(time.Millisecond))
		})
	}
}

// With the client's health checks off (ProbeInterval < 0) there is no
// first Api/Health on a new connection: a listener that never accepts
// looks connected, the first call is written to it and waits its whole
// Timeout (it is not sent again: it was written). This is the limit the
// connect check removes; the test pins it.
func TestBlackHoleWithoutHealthChecksCostsTheTimeout(t *testing.T) {
	leakcheck.Check(t)
	hole := neverAccepts(t)
	healthy := startServer(t, "healthy")
	c := dial(t, rpc.StaticResolver{{Addr: hole}, {Addr: healthy.addr}}, failover(t),
		cluster.Config{Client: rpc.ClientConfig{Timeout: 500 * time.Millisecond}, ProbeInterval: -1})
	start := time.Now()
	_, err := cluster.Call[string](context.Background(), c, "Test/Who", nil)
	took := time.Since(start)
	if !errors.Is(err, rpc.ErrTimeout) || errors.Is(err, rpc.ErrNotSent) {
		t.Errorf("the first call, health checks off: %v; want rpc.ErrTimeout, written (not rpc.ErrNotSent)", err)
	}
	if took < 400*time.Millisecond {
		t.Errorf("it failed after %v, before its 500 ms Timeout", took)
	}
	t.Logf("FIGURES health checks off: a listener that never accepts cost the first call %v (its Timeout, 500 ms)", took.Round(time.Millisecond))
}
