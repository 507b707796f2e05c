package balance_test

import (
	"math"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
)

func newWeighted(t *testing.T, eps ...rpc.Endpoint) *balance.WeightedRoundRobin {
	t.Helper()
	w, err := balance.NewWeightedRoundRobin(balance.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w.Update(eps)
	return w
}

// TestWeightedShares: weights 1:2:3 over 60 000 picks give 1/6, 2/6 and
// 3/6 of them, within ±1 % (a cycle is exact, so they are exact).
func TestWeightedShares(t *testing.T) {
	w := newWeighted(t, rpc.Endpoint{Addr: "a", Weight: 1}, rpc.Endpoint{Addr: "b", Weight: 2}, rpc.Endpoint{Addr: "c", Weight: 3})
	got := pickN(t, w, 60000, rpc.PickInfo{}, true)
	for addr, want := range map[string]int{"a": 10000, "b": 20000, "c": 30000} {
		if n := got[addr]; math.Abs(float64(n-want)) > 0.01*float64(want) {
			t.Fatalf("%v: %s want %d ± 1 %%", got, addr, want)
		}
		if got[addr] != want {
			t.Errorf("%v: %s got %d, want exactly %d", got, addr, got[addr], want)
		}
	}
}

// TestWeightedSmoothOrder: nginx's smooth order, 5:1:1 as a a b a c a a
// (from wherever the cycle starts), never five a in a row (four across
// the cycles' boundary); weight 0 is 1.
func TestWeightedSmoothOrder(t *testing.T) {
	w := newWeighted(t, rpc.Endpoint{Addr: "a", Weight: 5}, rpc.Endpoint{Addr: "b"}, rpc.Endpoint{Addr: "c", Weight: 1})
	var b strings.Builder
	for range 14 {
		b.WriteString(pickOne(t, w, rpc.PickInfo{}))
	}
	seq := b.String()
	if !strings.Contains(seq, "aabacaa") || strings.Contains(seq, "aaaaa") {
		t.Fatalf("two cycles: %s, want the rotation of aabacaa repeated", seq)
	}
	if seq[:7] != seq[7:] {
		t.Fatalf("two cycles: %s, want the same twice", seq)
	}
}

// TestWeightedReducedAndScaled: weights with a common divisor give the
// same order as the reduced ones; a cycle too long for the table is scaled
// and keeps the shares.
func TestWeightedReducedAndScaled(t *testing.T) {
	w := newWeighted(t, rpc.Endpoint{Addr: "a", Weight: 100}, rpc.Endpoint{Addr: "b", Weight: 300})
	if got := pickN(t, w, 4, rpc.PickInfo{}, true); got["a"] != 1 || got["b"] != 3 {
		t.Fatalf("100:300 over 4 picks: %v, want 1:3", got)
	}
	w.Update([]rpc.Endpoint{{Addr: "a", Weight: 333_331}, {Addr: "b", Weight: 3 * 333_331}, {Addr: "c", Weight: 7}})
	got := pickN(t, w, 40000, rpc.PickInfo{}, true)
	if got["a"] < 9900 || got["a"] > 10100 || got["b"] < 29900 || got["b"] > 30100 || got["c"] < 1 || got["c"] > 10 {
		t.Fatalf("prime weights 1:3 and a tiny one: %v", got)
	}
	w.Update([]rpc.Endpoint{{Addr: "a", Weight: 5_000_000}, {Addr: "b", Weight: 1_000_000}})
	if got := pickN(t, w, 2000, rpc.PickInfo{}, true); got["a"] != 1000 {
		t.Fatalf("a weight above 1 000 000: %v, want it to count as 1 000 000", got)
	}
}

// TestWeightedShieldedTurnsByWeight: a shielded endpoint's turns go to the
// others in proportion to their weights.
func TestWeightedShieldedTurnsByWeight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWeighted(t, rpc.Endpoint{Addr: "a", Weight: 1}, rpc.Endpoint{Addr: "b", Weight: 2}, rpc.Endpoint{Addr: "c", Weight: 3})
		w.Done("c", rpc.PickResult{Unavailable: true})
		got := pickN(t, w, 60000, rpc.PickInfo{}, true)
		if got["c"] != 0 || math.Abs(float64(got["a"]-20000)) > 600 || math.Abs(float64(got["b"]-40000)) > 600 {
			t.Fatalf("c shielded: %v, want a 1/3 and b 2/3 ± 1 %%", got)
		}
	})
}
