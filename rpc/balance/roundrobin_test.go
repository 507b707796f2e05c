package balance_test

import (
	"testing"
	"testing/synctest"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
)

// TestRoundRobinExact: each endpoint in turn, so n consecutive picks hold
// each once and k·n picks give each exactly k.
func TestRoundRobinExact(t *testing.T) {
	r, err := balance.NewRoundRobin(balance.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r.Update([]rpc.Endpoint{{Addr: "a", Weight: 5}, {Addr: "b"}, {Addr: "c"}})
	order := make([]string, 3)
	for i := range order {
		order[i] = pickOne(t, r, rpc.PickInfo{})
	}
	for i := range 3000 {
		if addr := pickOne(t, r, rpc.PickInfo{}); addr != order[i%3] {
			t.Fatalf("pick %d: %s, want %s (the order %v)", i, addr, order[i%3], order)
		}
	}
	for _, s := range r.Stats() {
		if s.Picks != 1001 {
			t.Fatalf("%+v, want 1001 picks (weights ignored)", s)
		}
	}
}

// TestRoundRobinShieldedTurnsShared: a shielded endpoint's turns go to the
// others evenly.
func TestRoundRobinShieldedTurnsShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBalancer(t, "round-robin", balance.Config{}, "a", "b", "c", "d")
		r.Done("a", rpc.PickResult{Unavailable: true})
		got := pickN(t, r, 30000, rpc.PickInfo{}, true)
		for _, addr := range []string{"b", "c", "d"} {
			if n := got[addr]; n < 9700 || n > 10300 {
				t.Fatalf("%v: want 10 000 ± 3 %% each for b, c and d", got)
			}
		}
	})
}

// TestRoundRobinStartsAnywhere: balancers made together do not all start
// with the first endpoint.
func TestRoundRobinStartsAnywhere(t *testing.T) {
	first := map[string]int{}
	for range 200 {
		first[pickOne(t, newBalancer(t, "round-robin", balance.Config{}, "a", "b", "c"), rpc.PickInfo{})]++
	}
	if len(first) != 3 {
		t.Fatalf("first picks of 200 balancers: %v, want every endpoint among them", first)
	}
}
