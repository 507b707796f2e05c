package balance_test

import (
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
)

func newP2C(t *testing.T, cfg balance.Config, addrs ...string) *balance.P2C {
	t.Helper()
	p, err := balance.NewP2C(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Update(endpoints(addrs...))
	return p
}

// serve picks n times, one call every step of fake time, each answered at
// once with the latency of its endpoint (1 ms unless given).
func serve(t *testing.T, b rpc.Balancer, n int, step time.Duration, latency map[string]time.Duration) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		addr := pickOne(t, b, rpc.PickInfo{})
		got[addr]++
		l, ok := latency[addr]
		if !ok {
			l = time.Millisecond
		}
		b.Done(addr, rpc.PickResult{Latency: l})
		if step > 0 {
			time.Sleep(step)
		}
	}
	return got
}

// TestP2CMovesLoadFromSlow: an endpoint 50 times slower than the others
// gets few calls but never none (about one in a thousand: each 30 s
// window, of about 30 expected, has at least one, p < 1e-12), and has
// its share back within seconds of being fast again.
func TestP2CMovesLoadFromSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP2C(t, balance.Config{}, "a", "b", "c")
		slow := map[string]time.Duration{"a": 50 * time.Millisecond}
		for i := range 2 {
			got := serve(t, p, 30000, time.Millisecond, slow) // 30 s
			t.Logf("a 50× slower, 30 s (%d): %v", i+1, got)
			if got["a"] < 1 || got["a"] > 150 || got["b"] < 14000 || got["c"] < 14000 {
				t.Fatalf("a 50× slower, 30 s (%d): %v, want a 1 to 150 (0.5 %%), b and c about half each", i+1, got)
			}
		}
		// a as fast as the others: its next sample comes within seconds,
		// its chance rising as its slow samples age; then a third.
		serve(t, p, 10000, time.Millisecond, nil)
		got := serve(t, p, 5000, time.Millisecond, nil)
		t.Logf("a fast again, 10 s to 15 s: %v", got)
		if got["a"] < 1250 {
			t.Fatalf("a fast again, 10 s to 15 s: %v, want about a third for a", got)
		}
	})
}

// TestP2CMovesLoadFromBusy: an endpoint with calls piling up in flight
// gets almost no new ones until they end, even at the same latency: with
// 20 stuck and the others idle, one in 442 of its draws (about 4.5 of the
// 3 000 calls expected; over 30, p < 1e-12).
func TestP2CMovesLoadFromBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP2C(t, balance.Config{}, "a", "b", "c")
		serve(t, p, 300, 0, nil)
		// a stalls with 20 calls in flight: made while a is alone in the set,
		// which keeps them (by Addr) when b and c come back.
		p.Update(endpoints("a"))
		const held = 20
		for range held {
			pickOne(t, p, rpc.PickInfo{})
		}
		p.Update(endpoints("a", "b", "c"))
		if got := serve(t, p, 3000, 0, nil); got["a"] > 30 {
			t.Fatalf("20 calls stuck on a: %v, want a 1 %% at most", got)
		}
		for range held {
			p.Done("a", rpc.PickResult{Latency: time.Millisecond})
		}
		if got := serve(t, p, 3000, 0, nil); got["a"] < 800 {
			t.Fatalf("a's calls done: %v, want its share back", got)
		}
	})
}

// TestP2CUnseenIsNeutral: a new endpoint without a latency sample is
// compared on its calls in flight alone: it gets calls at once, but ever
// fewer while it has not answered (with i in flight, one in 1+(i+1)² of
// its draws: about 8 of 300 calls; 16 would need some 1 500 draws of it,
// where it has about 200).
func TestP2CUnseenIsNeutral(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP2C(t, balance.Config{}, "a", "b")
		serve(t, p, 100, 0, nil)
		p.Update(endpoints("a", "b", "new"))
		got := map[string]int{}
		for range 300 { // new never answers; the others at once
			addr := pickOne(t, p, rpc.PickInfo{})
			got[addr]++
			if addr != "new" {
				p.Done(addr, rpc.PickResult{Latency: time.Millisecond})
			}
		}
		if got["new"] < 1 || got["new"] > 16 {
			t.Fatalf("new endpoint that does not answer: %v, want a few calls, not the lot", got)
		}
		for range got["new"] {
			p.Done("new", rpc.PickResult{Latency: time.Millisecond})
		}
		if got := serve(t, p, 3000, 0, nil); got["new"] < 800 {
			t.Fatalf("new endpoint answered as fast: %v, want a third", got)
		}
	})
}

// TestP2CAverage: the average is geometric; samples at once are
// averaged evenly; a later one weighs against the others decayed by
// e^(-age/Decay); an unavailable report, or a zero latency, is no sample;
// one more than Decay after the last starts afresh.
func TestP2CAverage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP2C(t, balance.Config{Decay: 2 * time.Second}, "a")
		latency := func() float64 { return float64(p.Stats()[0].Latency) }
		near := func(got, want float64) bool { return math.Abs(got-want) <= 1 } // Stats rounds to the ns
		p.Done("a", rpc.PickResult{Latency: 500 * time.Millisecond})            // a dial
		for range 7 {
			p.Done("a", rpc.PickResult{Latency: time.Millisecond})
		}
		want := float64(time.Millisecond) * math.Pow(500, 1.0/8) // about 2.17 ms
		if got := latency(); !near(got, want) {
			t.Fatalf("after 8 samples at once: %v, want their geometric mean %v", time.Duration(got), time.Duration(want))
		}
		p.Done("a", rpc.PickResult{Latency: time.Hour, Unavailable: true})
		p.Done("a", rpc.PickResult{})
		if got := latency(); !near(got, want) {
			t.Fatalf("after an unavailable report and a zero latency: %v, want %v still", time.Duration(got), time.Duration(want))
		}
		time.Sleep(2 * time.Second)
		before := math.Log(latency())
		p.Done("a", rpc.PickResult{Latency: 200 * time.Millisecond})
		// The eight earlier samples, one Decay old, weigh 8/e together.
		want = math.Exp(before + (math.Log(float64(200*time.Millisecond))-before)/(8*math.Exp(-1)+1))
		if got := latency(); math.Abs(got-want) > 1000 {
			t.Fatalf("a sample one time constant later: %v, want %v", time.Duration(got), time.Duration(want))
		}
		time.Sleep(2*time.Second + time.Nanosecond)
		p.Done("a", rpc.PickResult{Latency: 7 * time.Millisecond})
		if got := latency(); !near(got, float64(7*time.Millisecond)) {
			t.Fatalf("a sample more than a time constant later: %v, want it alone (the average was stale)", time.Duration(got))
		}
	})
}

// TestP2CEarlyOutlierDiluted: one slow call among an endpoint's first (20
// times the others, a cold connection or a pause) weighs 1/n of its
// average after n calls: after a second of calls 1 ms apart the average
// is within 5 % of the others' latency, where an average that took the
// first few evenly and the rest by time (each 1 ms later weighing
// 1-e^(-1ms/Decay), a ten-thousandth) kept it for a Decay. (Geometric,
// it is within 0.3 %: 20^(1/1000).)
func TestP2CEarlyOutlierDiluted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP2C(t, balance.Config{}, "a")
		p.Done("a", rpc.PickResult{Latency: 20 * time.Millisecond})
		for range 999 {
			time.Sleep(time.Millisecond)
			p.Done("a", rpc.PickResult{Latency: time.Millisecond})
		}
		if got := p.Stats()[0].Latency; got > 1050*time.Microsecond {
			t.Fatalf("average after a 20 ms first call and 999 of 1 ms: %v, want within 5 %% of 1 ms", got)
		}
	})
}

// TestP2CSplitsNearEqualEvenly: endpoints whose latencies are 1 % apart,
// called one at a time (their calls in flight always equal), split the
// calls about evenly: each of two 40 to 60 %, each of three at least
// 25 %. Taking the lower load every time gave the faster all of its
// pairs' calls: 100 / 0 %, and 66.7 / 33.3 / 0 %. (Within the tolerance,
// 50 / 50 % expected; the bounds are more than 25 standard deviations
// off.)
func TestP2CSplitsNearEqualEvenly(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				addrs := []string{"a", "b", "c"}[:n]
				p := newP2C(t, balance.Config{}, addrs...)
				lat := map[string]time.Duration{"a": 1000 * time.Microsecond, "b": 1010 * time.Microsecond, "c": 1020 * time.Microsecond}
				const calls = 30000
				got := serve(t, p, calls, time.Millisecond, lat)
				t.Logf("%d endpoints 1 %% apart: %v", n, got)
				for _, a := range addrs {
					share := float64(got[a]) / calls
					if (n == 2 && (share < 0.4 || share > 0.6)) || (n == 3 && share < 0.25) {
						t.Fatalf("%d endpoints 1 %% apart: %v, want an even split", n, got)
					}
				}
			})
		})
	}
}

// TestP2COneStallDoesNotLockOut: an endpoint whose first answer stalled
// (200 ms, where every other answer takes 50 µs) has its share within a
// second of calls, not after the minute a stall of 4 000 times takes to
// decay (ln 4 000 Decays), nor for as long as an arithmetic mean of its
// few later samples keeps it high: its first samples weigh little
// against the pair's mean, and each fast one halves, then thirds... the
// stall's part in the geometric mean. A stall after a thousand calls
// changes its share by nothing to speak of (4 000^(1/1000) = 1.008),
// where an arithmetic mean would make it 9 times slower for seconds.
func TestP2COneStallDoesNotLockOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP2C(t, balance.Config{}, "a", "b")
		p.Done("a", rpc.PickResult{Latency: 50 * time.Microsecond})
		p.Done("b", rpc.PickResult{Latency: 200 * time.Millisecond})
		fast := map[string]time.Duration{"a": 50 * time.Microsecond, "b": 50 * time.Microsecond}
		first := serve(t, p, 5000, 100*time.Microsecond, fast) // 0.5 s
		got := serve(t, p, 5000, 100*time.Microsecond, fast)
		t.Logf("b's first answer stalled: first 5 000 calls %v, next 5 000 %v", first, got)
		if got["b"] < 2000 {
			t.Fatalf("b's first answer stalled, then as fast: calls 5 000 to 10 000 %v, want about half for b", got)
		}
		p.Done("b", rpc.PickResult{Latency: 200 * time.Millisecond})
		got = serve(t, p, 5000, 100*time.Microsecond, fast)
		t.Logf("b stalled once more: next 5 000 %v", got)
		if got["b"] < 2000 {
			t.Fatalf("b stalled once more: the next 5 000 calls %v, want about half for b", got)
		}
	})
}

// TestP2COddsByLatency: of two endpoints called one at a time, the slower
// gets the share P2C's doc states: a ratio within 1.25 none less than the
// other, a larger one counting for what it exceeds 1.25 by, squared:
// 1/(1+(r/1.25)²). (30 000 calls: the bounds, ±2.5 points, are 9
// standard deviations off or more.)
func TestP2COddsByLatency(t *testing.T) {
	for _, r := range []float64{1.2, 2, 5} {
		t.Run(fmt.Sprint(r), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newP2C(t, balance.Config{}, "fast", "slow")
				lat := map[string]time.Duration{"fast": time.Millisecond, "slow": time.Duration(r * float64(time.Millisecond))}
				const calls = 30000
				got := serve(t, p, calls, time.Millisecond, lat)
				want := 0.5
				if r > 1.25 {
					want = 1 / (1 + (r/1.25)*(r/1.25))
				}
				share := float64(got["slow"]) / calls
				t.Logf("slow %.1f times slower: %v (%.1f %%, want %.1f %%)", r, got, 100*share, 100*want)
				if math.Abs(share-want) > 0.025 {
					t.Fatalf("slow %.1f times slower: %.1f %% of the calls, want %.1f %%", r, 100*share, 100*want)
				}
			})
		})
	}
}
