//go:build linux

package registry_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/cluster"
)

// The bogus set: how many endpoints of each kind.
const (
	bogusRefused   = 9_860 // 127.a.b.c at a port nothing listens on: refused at once
	bogusUnrouted  = 100   // 198.18.0.0/15 (benchmarking, never routed): see bogusSet
	bogusSYNDrop   = 20    // SYNs dropped: a dial waits its whole timeout
	bogusNoAccept  = 20    // a listener that never accepts: connects, never answers
	bogusEndpoints = bogusRefused + bogusUnrouted + bogusSYNDrop + bogusNoAccept
)

// bogusSet returns 10,000 endpoints that answer nothing, in an order that
// mixes the kinds: refused ports on 127.0.0.0/8 (a port bound and not
// listening), addresses in 198.18.0.0/15 (routed nowhere: a dial there
// fails at once, waits its timeout, or, on a machine whose outbound
// traffic goes through a proxy, connects to something that is not an
// SRMP server: each fails the connect check), SYN-dropping listeners and
// listeners that never accept (one of each on each of several 127.0.0.x
// addresses would need as many sockets: these reuse a few, at distinct
// addresses of the same port where they can).
func bogusSet(t *testing.T) []rpc.Endpoint {
	t.Helper()
	var eps []rpc.Endpoint
	port := refusedPort(t)
	for i := range bogusRefused {
		eps = append(eps, rpc.Endpoint{Addr: fmt.Sprintf("127.%d.%d.%d:%d", 1+i/62500, i/250%250+1, i%250+1, port)})
	}
	for i := range bogusUnrouted {
		eps = append(eps, rpc.Endpoint{Addr: fmt.Sprintf("198.18.%d.%d:9", i/250, i%250+1)})
	}
	for range bogusSYNDrop {
		eps = append(eps, rpc.Endpoint{Addr: synDrop(t)})
	}
	for range bogusNoAccept {
		eps = append(eps, rpc.Endpoint{Addr: neverAccepts(t)})
	}
	// Spread the few black holes over the list.
	for i := range bogusSYNDrop + bogusNoAccept {
		j := bogusRefused + bogusUnrouted + i
		k := (i + 1) * (bogusRefused / (bogusSYNDrop + bogusNoAccept + 1))
		eps[j], eps[k] = eps[k], eps[j]
	}
	return eps
}

// unroutedKind tells how a dial to 198.18.0.1 ends on this machine.
func unroutedKind() string {
	start := time.Now()
	c, err := net.DialTimeout("tcp", "198.18.0.1:9", 2*time.Second)
	took := time.Since(start).Round(time.Millisecond)
	if err == nil {
		c.Close()
		return fmt.Sprintf("connects (%v): something answers for it here", took)
	}
	return fmt.Sprintf("fails after %v: %v", took, err)
}

// call is one call of the load: when it started (since the client's
// Dial), how long it took, its error.
type call struct {
	at, took time.Duration
	err      error
}

// 10,000 endpoints that answer nothing and one healthy, through a fresh
// cluster client with the defaults (round-robin): 8 callers for 8 s. At
// least 99 % of the calls started after the first 3 s succeed (all of
// them, in every run so far: a pick that falls on an endpoint not yet
// connected waits for its dial at most connectStagger, and a dial that
// fails sends the call to the connected endpoint); so do one-shot
// clients, which `lifenet call` is: each a fresh client making one call.
func TestTenThousandBogusEndpoints(t *testing.T) {
	leakcheck.Check(t)
	healthy := startServer(t, "healthy")
	eps := bogusSet(t)
	if len(eps) != bogusEndpoints {
		t.Fatalf("%d bogus endpoints", len(eps))
	}
	all := append(eps[:len(eps):len(eps)], rpc.Endpoint{Addr: healthy.addr})
	// The healthy one in the middle, not last, whatever the balancer's order.
	mid := len(all) / 2
	all[mid], all[len(all)-1] = all[len(all)-1], all[mid]
	t.Logf("FIGURES a dial of 198.18.0.1:9 here %s", unroutedKind())

	t.Run("one-shot clients", func(t *testing.T) {
		for i := range 3 {
			c := dial(t, rpc.StaticResolver(all), roundRobin(t), cluster.Config{Retry: cluster.RetryPolicy{MaxAttempts: 3}})
			start := time.Now()
			who, err := cluster.Call[string](context.Background(), c, "Test/Who", nil)
			took := time.Since(start)
			if err != nil || who != "healthy" {
				t.Errorf("one-shot client %d: %q, %v after %v; want the healthy endpoint's answer", i, who, err, took)
			}
			var failed uint64
			for _, e := range c.Endpoints() {
				failed += e.DialFailures
			}
			c.Close()
			t.Logf("FIGURES one-shot client %d: answered in %v, %d dials failed meanwhile", i, took.Round(time.Millisecond), failed)
		}
	})

	t.Run("load", func(t *testing.T) {
		const (
			callers = 8
			run     = 8 * time.Second
			warm    = 3 * time.Second
		)
		begin := time.Now()
		c := dial(t, rpc.StaticResolver(all), roundRobin(t), cluster.Config{})
		var mu sync.Mutex
		var calls []call
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				var mine []call
				for {
					at := time.Since(begin)
					if at >= run {
						break
					}
					start := time.Now()
					_, err := cluster.Call[string](context.Background(), c, "Test/Who", nil)
					mine = append(mine, call{at: at, took: time.Since(start), err: err})
				}
				mu.Lock()
				calls = append(calls, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		var early, earlyFailed, late, lateFailed int
		var lateTook []time.Duration
		var firstErr error
		for _, k := range calls {
			if k.at < warm {
				early++
				if k.err != nil {
					earlyFailed++
				}
				continue
			}
			late++
			lateTook = append(lateTook, k.took)
			if k.err != nil {
				lateFailed++
				if firstErr == nil {
					firstErr = k.err
				}
			}
		}
		var dialFailures uint64
		unreachable := 0
		for _, e := range c.Endpoints() {
			dialFailures += e.DialFailures
			if e.Unreachable {
				unreachable++
			}
		}
		c.Close()
		ok := 100 * float64(late-lateFailed) / float64(max(late, 1))
		t.Logf("FIGURES %d bogus endpoints + 1 healthy, %d callers, %v: first %v: %d calls, %d failed; after: %d calls, %d failed (%.2f %% succeeded), p50 %v, p99 %v, max %v; %d dials failed, %d endpoints unreachable at the end",
			bogusEndpoints, callers, run, warm, early, earlyFailed, late, lateFailed, ok,
			quantile(lateTook, 0.5).Round(time.Microsecond), quantile(lateTook, 0.99).Round(time.Microsecond), quantile(lateTook, 1).Round(time.Millisecond),
			dialFailures, unreachable)
		if late < 100 {
			t.Errorf("only %d calls after the first %v: the client is stuck", late, warm)
		}
		if ok < 99 {
			t.Errorf("%.2f %% of the calls after the first %v succeeded, want at least 99 %% (first error: %v)", ok, warm, firstErr)
		}
		if firstErr != nil && !errors.Is(firstErr, rpc.ErrNotSent) {
			t.Logf("a call after the first %v failed written: %v", warm, firstErr)
		}
	})
}
