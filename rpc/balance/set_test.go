package balance_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
)

// statser is what every balancer of the package has beside rpc.Balancer.
type statser interface {
	rpc.Balancer
	Stats() []balance.EndpointStats
}

func newBalancer(t testing.TB, name string, cfg balance.Config, addrs ...string) statser {
	t.Helper()
	b, err := balance.ByName(name, cfg)
	if err != nil {
		t.Fatalf("ByName(%q): %v", name, err)
	}
	if len(addrs) > 0 {
		b.Update(endpoints(addrs...))
	}
	return b.(statser)
}

func endpoints(addrs ...string) []rpc.Endpoint {
	eps := make([]rpc.Endpoint, len(addrs))
	for i, a := range addrs {
		eps[i] = rpc.Endpoint{Addr: a}
	}
	return eps
}

// keys are balancing keys, so that a ConsistentHash spreads the picks of
// the shared tests over every endpoint as the others do.
var keys = func() []string {
	k := make([]string, 4096)
	for i := range k {
		k[i] = fmt.Sprintf("key-%d", i)
	}
	return k
}()

// pickN picks n times with info (a key of keys each time) and counts the
// addresses; done reports each pick at once as a success.
func pickN(t testing.TB, b rpc.Balancer, n int, info rpc.PickInfo, done bool) map[string]int {
	t.Helper()
	got := map[string]int{}
	for i := range n {
		info.Key = keys[i%len(keys)]
		addr, err := b.Pick(info)
		if err != nil {
			t.Fatalf("Pick %d: %v", i, err)
		}
		got[addr]++
		if done {
			b.Done(addr, rpc.PickResult{Latency: time.Millisecond})
		}
	}
	return got
}

func stat(t testing.TB, b statser, addr string) balance.EndpointStats {
	t.Helper()
	for _, s := range b.Stats() {
		if s.Addr == addr {
			return s
		}
	}
	t.Fatalf("no stats for %s", addr)
	return balance.EndpointStats{}
}

func forEach(t *testing.T, f func(t *testing.T, name string)) {
	for _, name := range balance.Names() {
		t.Run(name, func(t *testing.T) { f(t, name) })
	}
}

func TestEmptySetFails(t *testing.T) {
	forEach(t, func(t *testing.T, name string) {
		b := newBalancer(t, name, balance.Config{})
		if _, err := b.Pick(rpc.PickInfo{}); !errors.Is(err, rpc.ErrNoEndpoints) {
			t.Fatalf("Pick before Update = %v, want ErrNoEndpoints", err)
		}
		b.Update(endpoints("a"))
		if addr, err := b.Pick(rpc.PickInfo{Key: "k"}); err != nil || addr != "a" {
			t.Fatalf("Pick = %q, %v, want a", addr, err)
		}
		b.Update(nil)
		if _, err := b.Pick(rpc.PickInfo{Key: "k"}); !errors.Is(err, rpc.ErrNoEndpoints) {
			t.Fatalf("Pick after an empty Update = %v, want ErrNoEndpoints", err)
		}
		b.Update([]rpc.Endpoint{{Addr: ""}})
		if _, err := b.Pick(rpc.PickInfo{}); !errors.Is(err, rpc.ErrNoEndpoints) {
			t.Fatalf("Pick over an empty address = %v, want ErrNoEndpoints", err)
		}
	})
}

// TestShieldSkipsThenProbesOnce: an endpoint reported unavailable gets no
// pick for ShieldTime, then exactly one (the probe) until the probe's Done;
// a success brings it back.
func TestShieldSkipsThenProbesOnce(t *testing.T) {
	forEach(t, func(t *testing.T, name string) {
		synctest.Test(t, func(t *testing.T) {
			b := newBalancer(t, name, balance.Config{ShieldTime: 10 * time.Second}, "a", "b", "c")
			addr, _ := b.Pick(rpc.PickInfo{})
			b.Done("a", rpc.PickResult{Unavailable: true})
			b.Done(addr, rpc.PickResult{}) // the pick itself ends; "a" was reported by another call
			if s := stat(t, b, "a"); s.Failures != 1 || !s.ShieldedUntil.Equal(time.Now().Add(10*time.Second)) {
				t.Fatalf("after the report: %+v, want 1 failure, shielded 10 s", s)
			}
			if got := pickN(t, b, 3000, rpc.PickInfo{}, true); got["a"] != 0 {
				t.Fatalf("while shielded: %v, want no pick of a", got)
			}
			time.Sleep(9 * time.Second)
			if got := pickN(t, b, 300, rpc.PickInfo{}, true); got["a"] != 0 {
				t.Fatalf("9 s in: %v, want no pick of a", got)
			}
			time.Sleep(time.Second)
			if got := pickN(t, b, 3000, rpc.PickInfo{}, false); got["a"] != 1 {
				t.Fatalf("after the shield: %v, want one probe of a", got)
			}
			b.Done("a", rpc.PickResult{Latency: time.Millisecond})
			if s := stat(t, b, "a"); s.Failures != 0 || !s.ShieldedUntil.IsZero() {
				t.Fatalf("after the probe's success: %+v, want healthy", s)
			}
			if got := pickN(t, b, 3000, rpc.PickInfo{}, true); name != "failover" && got["a"] < 300 {
				t.Fatalf("after the probe's success: %v, want a back", got)
			} else if name == "failover" && got["a"] != 3000 {
				t.Fatalf("failover after the probe's success: %v, want every pick on a", got)
			}
		})
	})
}

// TestShieldBackoff: a failed probe doubles the shield, up to
// MaxShieldTime; a success resets it.
func TestShieldBackoff(t *testing.T) {
	forEach(t, func(t *testing.T, name string) {
		synctest.Test(t, func(t *testing.T) {
			b := newBalancer(t, name, balance.Config{ShieldTime: time.Second, MaxShieldTime: 5 * time.Second}, "a", "b")
			b.Done("a", rpc.PickResult{Unavailable: true})
			for i, want := range []time.Duration{2, 4, 5, 5} {
				time.Sleep(time.Until(b.Stats()[0].ShieldedUntil))
				if got := pickN(t, b, 200, rpc.PickInfo{}, false); got["a"] != 1 {
					t.Fatalf("probe %d: %v, want one pick of a", i, got)
				}
				b.Done("a", rpc.PickResult{Unavailable: true})
				s := stat(t, b, "a")
				if d := time.Until(s.ShieldedUntil); d != want*time.Second || s.Failures != i+2 {
					t.Fatalf("after failed probe %d: shield %v, failures %d; want %v, %d", i, d, s.Failures, want*time.Second, i+2)
				}
			}
			time.Sleep(5 * time.Second)
			pickN(t, b, 200, rpc.PickInfo{}, false)
			b.Done("a", rpc.PickResult{})
			b.Done("a", rpc.PickResult{Unavailable: true})
			if d := time.Until(stat(t, b, "a").ShieldedUntil); d != time.Second {
				t.Fatalf("after a success and a new failure: shield %v, want 1 s", d)
			}
		})
	})
}

// TestShieldReportsOfEarlierCallsCountOnce: the calls in flight when an
// endpoint fails all report it; the shield does not grow with each, and a
// late success of one of them does not clear it.
func TestShieldReportsOfEarlierCallsCountOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBalancer(t, "failover", balance.Config{}, "a", "b")
		for range 10 {
			b.Pick(rpc.PickInfo{})
		}
		for range 9 {
			b.Done("a", rpc.PickResult{Unavailable: true})
		}
		b.Done("a", rpc.PickResult{}) // a call answered just before the reset
		s := stat(t, b, "a")
		if s.Failures != 1 || time.Until(s.ShieldedUntil) != balance.DefaultShieldTime || s.InFlight != 0 {
			t.Fatalf("after 9 reports and a success: %+v, want 1 failure, the default shield, none in flight", s)
		}
	})
}

// TestAllShieldedPicksSoonest: with every endpoint shielded a pick does not
// fail: it probes the endpoint whose shield ends soonest.
func TestAllShieldedPicksSoonest(t *testing.T) {
	forEach(t, func(t *testing.T, name string) {
		synctest.Test(t, func(t *testing.T) {
			b := newBalancer(t, name, balance.Config{}, "a", "b", "c")
			b.Done("b", rpc.PickResult{Unavailable: true})
			time.Sleep(time.Second)
			b.Done("c", rpc.PickResult{Unavailable: true})
			time.Sleep(time.Second)
			b.Done("a", rpc.PickResult{Unavailable: true})
			for i := range 20 {
				addr, err := b.Pick(rpc.PickInfo{Key: keys[i]})
				if err != nil || addr != "b" {
					t.Fatalf("pick %d with all shielded = %q, %v; want b, whose shield ends first", i, addr, err)
				}
			}
			b.Done("b", rpc.PickResult{}) // the forced probe succeeded
			if s := stat(t, b, "b"); !s.ShieldedUntil.IsZero() {
				t.Fatalf("b after its forced probe succeeded: %+v, want healthy", s)
			}
			if got := pickN(t, b, 100, rpc.PickInfo{}, false); got["b"] != 100 {
				t.Fatalf("with only b healthy: %v", got)
			}
		})
	})
}

func TestExclude(t *testing.T) {
	forEach(t, func(t *testing.T, name string) {
		synctest.Test(t, func(t *testing.T) {
			b := newBalancer(t, name, balance.Config{}, "a", "b", "c")
			for _, x := range []string{"a", "b", "c"} {
				if got := pickN(t, b, 1000, rpc.PickInfo{Exclude: x}, true); got[x] != 0 {
					t.Fatalf("Exclude %s: %v", x, got)
				}
			}
			b.Done("b", rpc.PickResult{Unavailable: true})
			time.Sleep(time.Second)
			if got := pickN(t, b, 300, rpc.PickInfo{Exclude: "a"}, true); got["c"] != 300 {
				t.Fatalf("Exclude a with b shielded: %v, want all on c", got)
			}
			b.Done("c", rpc.PickResult{Unavailable: true})
			time.Sleep(time.Second)
			if got := pickN(t, b, 300, rpc.PickInfo{Exclude: "a"}, true); got["a"] != 300 {
				t.Fatalf("Exclude a with b and c shielded: %v, want a: nothing else is usable", got)
			}
			b.Done("a", rpc.PickResult{Unavailable: true})
			if got := pickN(t, b, 10, rpc.PickInfo{Exclude: "b"}, false); got["c"] != 10 {
				t.Fatalf("Exclude b with all shielded: %v, want c, the soonest of the others", got)
			}

			one := newBalancer(t, name, balance.Config{}, "a")
			if got := pickN(t, one, 10, rpc.PickInfo{Exclude: "a"}, true); got["a"] != 10 {
				t.Fatalf("Exclude the only endpoint: %v, want it anyway", got)
			}
		})
	})
}

// TestExcludeTried: a pick avoids every endpoint of PickInfo.Tried, not
// only Exclude; with all of them excluded, it still returns one.
func TestExcludeTried(t *testing.T) {
	forEach(t, func(t *testing.T, name string) {
		synctest.Test(t, func(t *testing.T) {
			b := newBalancer(t, name, balance.Config{}, "a", "b", "c", "d")
			for _, tried := range [][]string{{"a", "b"}, {"b", "a"}, {"c", "a", "b"}} {
				info := rpc.PickInfo{Key: "k", Exclude: tried[len(tried)-1], Tried: tried}
				got := pickN(t, b, 300, info, true)
				for _, x := range tried {
					if got[x] != 0 {
						t.Fatalf("Tried %v: %v, want none on %s", tried, got, x)
					}
				}
			}
			all := []string{"a", "b", "c", "d"}
			got := pickN(t, b, 10, rpc.PickInfo{Exclude: "d", Tried: all}, true)
			if n := got["a"] + got["b"] + got["c"] + got["d"]; n != 10 {
				t.Fatalf("every endpoint tried: %v, want 10 picks anyway", got)
			}
		})
	})
}

func TestInFlightCounts(t *testing.T) {
	forEach(t, func(t *testing.T, name string) {
		b := newBalancer(t, name, balance.Config{}, "a", "b", "c")
		picked := map[string]int{}
		for i := range 30 {
			addr, _ := b.Pick(rpc.PickInfo{Key: keys[i]})
			picked[addr]++
		}
		for _, s := range b.Stats() {
			if s.InFlight != picked[s.Addr] || s.Picks != uint64(picked[s.Addr]) {
				t.Fatalf("%+v, want %d in flight and picked", s, picked[s.Addr])
			}
		}
		for addr, n := range picked {
			for range n + 3 { // more Done than picks
				b.Done(addr, rpc.PickResult{})
			}
		}
		b.Done("unknown", rpc.PickResult{})
		for _, s := range b.Stats() {
			if s.InFlight != 0 {
				t.Fatalf("after every Done and more: %+v, want 0 in flight", s)
			}
		}
	})
}

// TestUpdateKeepsStateByAddr: an endpoint keeps its shield and counts
// across an Update that reorders the set and adds to it, and one removed
// with calls in flight still counts their Done.
func TestUpdateKeepsStateByAddr(t *testing.T) {
	forEach(t, func(t *testing.T, name string) {
		synctest.Test(t, func(t *testing.T) {
			b := newBalancer(t, name, balance.Config{}, "a", "b", "c")
			b.Done("a", rpc.PickResult{Unavailable: true})
			until := stat(t, b, "a").ShieldedUntil
			pickN(t, b, 10, rpc.PickInfo{Exclude: "c"}, false) // 10 in flight on b (and none on a)
			b.Update(endpoints("d", "c", "b", "a"))
			if s := stat(t, b, "a"); !s.ShieldedUntil.Equal(until) || s.Failures != 1 {
				t.Fatalf("a after a reordering Update: %+v, want its shield kept", s)
			}
			if s := stat(t, b, "b"); s.InFlight != 10 || s.Picks != 10 {
				t.Fatalf("b after a reordering Update: %+v, want its counts kept", s)
			}
			if got := pickN(t, b, 1000, rpc.PickInfo{}, true); got["a"] != 0 {
				t.Fatalf("after Update: %v, want a still shielded", got)
			}

			before := stat(t, b, "b")
			if before.InFlight != 10 {
				t.Fatalf("b before its removal: %+v, want 10 in flight", before)
			}
			b.Update(endpoints("c", "d"))
			for _, s := range b.Stats() {
				if s.Addr == "a" || s.Addr == "b" {
					t.Fatalf("removed endpoint in Stats: %+v", s)
				}
			}
			if got := pickN(t, b, 1000, rpc.PickInfo{}, true); got["a"]+got["b"] != 0 {
				t.Fatalf("after removing a and b: %v", got)
			}
			for range 4 {
				b.Done("b", rpc.PickResult{})
			}
			b.Update(endpoints("c", "d", "b"))
			if s := stat(t, b, "b"); s.InFlight != 6 || s.Picks != before.Picks {
				t.Fatalf("b back while 6 of its calls are in flight: %+v, want its counts kept", s)
			}
			for range 6 {
				b.Done("b", rpc.PickResult{})
			}
			b.Update(endpoints("c"))
			b.Update(endpoints("c", "b"))
			if s := stat(t, b, "b"); s.InFlight != 0 || s.Picks != 0 {
				t.Fatalf("b back after it drained and left: %+v, want a fresh endpoint", s)
			}
			b.Done("b", rpc.PickResult{}) // a stale Done never takes the count below 0
			if s := stat(t, b, "b"); s.InFlight != 0 {
				t.Fatalf("after a stale Done: %+v", s)
			}
		})
	})
}

func TestUpdateDuplicatesAndWeights(t *testing.T) {
	b := newBalancer(t, "weighted", balance.Config{})
	b.Update([]rpc.Endpoint{{Addr: "a", Weight: 1}, {Addr: "b", Weight: -5}, {Addr: "a", Weight: 100}, {Addr: ""}})
	got := pickN(t, b, 2000, rpc.PickInfo{}, true)
	if len(got) != 2 || got["a"] != 1000 || got["b"] != 1000 {
		t.Fatalf("a (first of two), b (negative weight): %v, want an even split", got)
	}
}

// TestConcurrentPickDoneUpdate runs picks and reports from many goroutines
// while the set changes under them (run it with -race): no error, no count
// below zero, and every count back to zero at the end.
func TestConcurrentPickDoneUpdate(t *testing.T) {
	sets := [][]string{{"a", "b", "c"}, {"b", "c", "d"}, {"a", "d"}, {"c"}, {"a", "b", "c", "d", "e"}}
	forEach(t, func(t *testing.T, name string) {
		b := newBalancer(t, name, balance.Config{ShieldTime: time.Millisecond, MaxShieldTime: 4 * time.Millisecond}, sets[0]...)
		var stop atomic.Bool
		var wg sync.WaitGroup
		var picks atomic.Int64
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for i := 0; !stop.Load() || i < 2000; i++ {
					info := rpc.PickInfo{Key: keys[r.IntN(len(keys))]}
					if i%7 == 0 {
						info.Exclude = "b"
					}
					addr, err := b.Pick(info)
					if err != nil {
						errs <- err
						return
					}
					picks.Add(1)
					b.Done(addr, rpc.PickResult{Latency: time.Duration(r.IntN(1000)) * time.Microsecond, Unavailable: r.IntN(50) == 0})
				}
			})
		}
		wg.Go(func() {
			defer stop.Store(true)
			for i := range 300 {
				b.Update(endpoints(sets[i%len(sets)]...))
				for _, s := range b.Stats() {
					if s.InFlight < 0 {
						errs <- fmt.Errorf("%+v", s)
						return
					}
				}
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		b.Update(endpoints("a", "b", "c", "d", "e"))
		b.Update(endpoints("a", "b", "c", "d", "e")) // the drained ones are dropped by now
		for _, s := range b.Stats() {
			if s.InFlight != 0 {
				t.Fatalf("after every Done: %+v (%d picks)", s, picks.Load())
			}
		}
	})
}

// TestPickDoneDoNotAllocate covers the healthy path, Exclude, the shield's
// transitions and the all-shielded fallback.
func TestPickDoneDoNotAllocate(t *testing.T) {
	forEach(t, func(t *testing.T, name string) {
		b := newBalancer(t, name, balance.Config{ShieldTime: time.Microsecond, MaxShieldTime: time.Microsecond}, "10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80")
		i := 0
		allocs := testing.AllocsPerRun(2000, func() {
			i++
			info := rpc.PickInfo{Key: keys[i%len(keys)]}
			if i%3 == 0 {
				info.Exclude = "10.0.0.2:80"
			}
			addr, err := b.Pick(info)
			if err != nil {
				panic(err)
			}
			b.Done(addr, rpc.PickResult{Latency: time.Millisecond, Unavailable: i%5 == 0})
		})
		if allocs != 0 {
			t.Fatalf("Pick+Done: %v allocations per run, want 0", allocs)
		}
	})
}

func BenchmarkPickDone(b *testing.B) {
	addrs := []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80", "10.0.0.4:80", "10.0.0.5:80"}
	for _, name := range balance.Names() {
		bal := newBalancer(b, name, balance.Config{}, addrs...)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				addr, _ := bal.Pick(rpc.PickInfo{Key: keys[i%len(keys)]})
				bal.Done(addr, rpc.PickResult{Latency: time.Millisecond})
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					i++
					addr, _ := bal.Pick(rpc.PickInfo{Key: keys[i%len(keys)]})
					bal.Done(addr, rpc.PickResult{Latency: time.Millisecond})
				}
			})
		})
	}
}

// TestCanceledChangesNothingButInFlight: an attempt canceled for a reason
// not of the endpoint ends its in-flight count and leaves the shield and
// the latency as they were.
func TestCanceledChangesNothingButInFlight(t *testing.T) {
	forEach(t, func(t *testing.T, name string) {
		synctest.Test(t, func(t *testing.T) {
			b := newBalancer(t, name, balance.Config{ShieldTime: 10 * time.Second}, "a", "b")
			b.Done("a", rpc.PickResult{Unavailable: true})
			time.Sleep(10 * time.Second)
			var probe string
			for range 100 {
				addr, err := b.Pick(rpc.PickInfo{})
				if err != nil {
					t.Fatal(err)
				}
				if addr == "a" {
					probe = addr
					break
				}
				b.Done(addr, rpc.PickResult{})
			}
			if probe != "a" {
				t.Fatal("no probe of a after its shield")
			}
			if s := stat(t, b, "a"); s.InFlight != 1 {
				t.Fatalf("the probe in flight: %+v", s)
			}
			b.Done("a", rpc.PickResult{Canceled: true, Latency: time.Millisecond})
			s := stat(t, b, "a")
			if s.InFlight != 0 || s.Failures != 1 || s.ShieldedUntil.IsZero() || s.Latency != 0 {
				t.Fatalf("after a canceled probe: %+v, want nothing but the in-flight count changed", s)
			}
		})
	})
}
