package balance_test

import (
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
// gets almost no calls, but is tried again once its average has decayed
// below theirs (after about ln 50 time constants without a call), and has
// its share back as soon as it is fast again.
func TestP2CMovesLoadFromSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP2C(t, balance.Config{}, "a", "b", "c")
		slow := map[string]time.Duration{"a": 50 * time.Millisecond}
		got := serve(t, p, 30000, time.Millisecond, slow) // 30 s
		t.Logf("a 50× slower, 30 s: %v", got)
		if got["a"] > 30 || got["b"] < 14000 || got["c"] < 14000 {
			t.Fatalf("a 50× slower, 30 s: %v, want a < 0.1 %%, b and c about half each", got)
		}
		got = serve(t, p, 60000, time.Millisecond, slow) // 60 s more
		t.Logf("60 s more: %v", got)
		if got["a"] < 1 || got["a"] > 60 {
			t.Fatalf("60 s more: %v, want a tried again, a few times", got)
		}
		// a as fast as the others: tried again within ln 50 time constants
		// of its last (slow) call, and then a third of the calls.
		serve(t, p, 45000, time.Millisecond, nil)
		got = serve(t, p, 15000, time.Millisecond, nil)
		t.Logf("a fast again, 45 s to 60 s: %v", got)
		if got["a"] < 4500 {
			t.Fatalf("a fast again, 45 s to 60 s: %v, want a third for a", got)
		}
	})
}

// TestP2CMovesLoadFromBusy: an endpoint with calls piling up in flight
// gets no new ones until they end, even at the same latency.
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
		if got := serve(t, p, 3000, 0, nil); got["a"] != 0 {
			t.Fatalf("20 calls stuck on a: %v, want none to a", got)
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
// compared on its calls in flight alone: it gets calls at once, but not
// all of them while it has not answered.
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
		if got["new"] < 1 || got["new"] > 3 {
			t.Fatalf("new endpoint that does not answer: %v, want one call (or so), not the lot", got)
		}
		p.Done("new", rpc.PickResult{Latency: time.Millisecond})
		if got := serve(t, p, 3000, 0, nil); got["new"] < 800 {
			t.Fatalf("new endpoint answered as fast: %v, want a third", got)
		}
	})
}

// TestP2CAverage: samples at once are averaged evenly; a later one
// weighs against the others decayed by e^(-age/Decay); an unavailable
// report, or a zero latency, is no sample; one more than Decay after the
// last starts afresh.
func TestP2CAverage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newP2C(t, balance.Config{Decay: 2 * time.Second}, "a")
		latency := func() time.Duration { return p.Stats()[0].Latency }
		p.Done("a", rpc.PickResult{Latency: 500 * time.Millisecond}) // a dial
		for range 7 {
			p.Done("a", rpc.PickResult{Latency: time.Millisecond})
		}
		if got, want := latency(), 507*time.Millisecond/8; got != want {
			t.Fatalf("after 8 samples at once: %v, want their mean %v", got, want)
		}
		p.Done("a", rpc.PickResult{Latency: time.Hour, Unavailable: true})
		p.Done("a", rpc.PickResult{})
		if got, want := latency(), 507*time.Millisecond/8; got != want {
			t.Fatalf("after an unavailable report and a zero latency: %v, want %v still", got, want)
		}
		time.Sleep(2 * time.Second)
		before := float64(latency())
		p.Done("a", rpc.PickResult{Latency: 200 * time.Millisecond})
		// The eight earlier samples, one Decay old, weigh 8/e together.
		want := before + (float64(200*time.Millisecond)-before)/(8*math.Exp(-1)+1)
		if got := float64(latency()); math.Abs(got-want) > 1000 {
			t.Fatalf("a sample one time constant later: %v, want %v", time.Duration(got), time.Duration(want))
		}
		time.Sleep(2*time.Second + time.Nanosecond)
		p.Done("a", rpc.PickResult{Latency: 7 * time.Millisecond})
		if got := latency(); got != 7*time.Millisecond {
			t.Fatalf("a sample more than a time constant later: %v, want it alone (the average was stale)", got)
		}
	})
}

// TestP2CEarlyOutlierDiluted: one slow call among an endpoint's first (20
// times the others, a cold connection or a pause) weighs 1/n of its
// average after n calls: after a second of calls 1 ms apart the average
// is within 5 % of the others' latency, where an average that took the
// first few evenly and the rest by time (each 1 ms later weighing
// 1-e^(-1ms/Decay), a ten-thousandth) kept it for a Decay.
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
