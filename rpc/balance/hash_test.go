package balance_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
)

func newHash(t *testing.T, cfg balance.Config, eps []rpc.Endpoint) *balance.ConsistentHash {
	t.Helper()
	h, err := balance.NewConsistentHash(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.Update(eps)
	return h
}

func servers(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("10.0.0.%d:8080", i+1)
	}
	return s
}

// owners maps each of n keys to the endpoint its pick goes to.
func owners(t *testing.T, b rpc.Balancer, n int) []string {
	t.Helper()
	o := make([]string, n)
	for i := range o {
		o[i] = pickOne(t, b, rpc.PickInfo{Key: fmt.Sprintf("user-%d", i)})
		b.Done(o[i], rpc.PickResult{})
	}
	return o
}

// TestHashStable: a key goes to the same endpoint every time, in every
// balancer over the same set whatever its order (every client process
// maps a key the same way).
func TestHashStable(t *testing.T) {
	addrs := servers(5)
	h1 := newHash(t, balance.Config{}, endpoints(addrs...))
	h2 := newHash(t, balance.Config{}, endpoints(addrs[4], addrs[2], addrs[0], addrs[3], addrs[1]))
	first := owners(t, h1, 5000)
	for round := range 3 {
		for i, o := range owners(t, h1, 5000) {
			if o != first[i] {
				t.Fatalf("round %d: key %d went to %s, then %s", round, i, first[i], o)
			}
		}
	}
	for i, o := range owners(t, h2, 5000) {
		if o != first[i] {
			t.Fatalf("another balancer, the set reordered: key %d to %s, want %s", i, o, first[i])
		}
	}
}

// TestHashSpread: 160 points per endpoint give each of 5 a share within
// a third of the even one, and weights scale the shares.
func TestHashSpread(t *testing.T) {
	addrs := servers(5)
	h := newHash(t, balance.Config{}, endpoints(addrs...))
	share := map[string]int{}
	for _, o := range owners(t, h, 50000) {
		share[o]++
	}
	t.Logf("5 endpoints, 50 000 keys: %v", share)
	for _, a := range addrs {
		if n := share[a]; n < 6700 || n > 13300 {
			t.Fatalf("shares %v: want 10 000 ± a third each", share)
		}
	}
	w := newHash(t, balance.Config{}, []rpc.Endpoint{{Addr: addrs[0], Weight: 1}, {Addr: addrs[1], Weight: 3}})
	share = map[string]int{}
	for _, o := range owners(t, w, 40000) {
		share[o]++
	}
	if n := share[addrs[1]]; n < 27000 || n > 33000 {
		t.Fatalf("weights 1:3: %v, want 30 000 ± 10 %% on the second", share)
	}
}

// TestHashMovementOnAdd: adding an endpoint to n moves about 1/(n+1) of
// the keys, every one of them to the new endpoint.
func TestHashMovementOnAdd(t *testing.T) {
	for _, n := range []int{2, 5, 10} {
		addrs := servers(n + 1)
		h := newHash(t, balance.Config{}, endpoints(addrs[:n]...))
		const keys = 20000
		before := owners(t, h, keys)
		h.Update(endpoints(addrs...))
		after := owners(t, h, keys)
		moved := 0
		for i := range before {
			if before[i] != after[i] {
				moved++
				if after[i] != addrs[n] {
					t.Fatalf("n=%d: key %d moved from %s to %s, not to the new endpoint", n, i, before[i], after[i])
				}
			}
		}
		ideal := 1 / float64(n+1)
		t.Logf("n=%d → %d: %.4f of the keys moved (1/(n+1) = %.4f)", n, n+1, float64(moved)/keys, ideal)
		if f := float64(moved) / keys; f > ideal*1.35 || f < ideal*0.65 {
			t.Fatalf("n=%d: %.3f of the keys moved, want about %.3f", n, f, ideal)
		}
	}
}

// TestHashMovementOnRemove: removing an endpoint moves only its keys.
func TestHashMovementOnRemove(t *testing.T) {
	addrs := servers(6)
	h := newHash(t, balance.Config{}, endpoints(addrs...))
	before := owners(t, h, 20000)
	h.Update(endpoints(append(addrs[:2:2], addrs[3:]...)...))
	for i, o := range owners(t, h, 20000) {
		if (before[i] == addrs[2]) == (o == before[i]) {
			t.Fatalf("key %d: %s before, %s after removing %s", i, before[i], o, addrs[2])
		}
	}
}

// TestHashShieldedKeysMoveAndReturn: while a key's endpoint is shielded
// its calls go to one other endpoint (the next on the ring), and return
// once it is probed back; the other keys do not move.
func TestHashShieldedKeysMoveAndReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		addrs := servers(4)
		h := newHash(t, balance.Config{}, endpoints(addrs...))
		before := owners(t, h, 4000)
		h.Done(addrs[1], rpc.PickResult{Unavailable: true})
		during := owners(t, h, 4000)
		for i := range before {
			switch {
			case before[i] != addrs[1] && during[i] != before[i]:
				t.Fatalf("key %d moved from %s, which is healthy", i, before[i])
			case before[i] == addrs[1] && during[i] == addrs[1]:
				t.Fatalf("key %d still on the shielded endpoint", i)
			}
		}
		for i, o := range owners(t, h, 4000) {
			if o != during[i] {
				t.Fatalf("key %d: %s, then %s, while the shield holds", i, during[i], o)
			}
		}
		// Exclude moves a key the same way.
		for i := range 200 {
			if o := pickOne(t, h, rpc.PickInfo{Key: fmt.Sprintf("user-%d", i), Exclude: addrs[1]}); o != during[i] {
				t.Fatalf("key %d excluding %s: %s, want %s", i, addrs[1], o, during[i])
			}
		}
		time.Sleep(balance.DefaultShieldTime)
		owners(t, h, 4000) // one probe: its Done (a success) clears the shield
		for i, o := range owners(t, h, 4000) {
			if o != before[i] {
				t.Fatalf("key %d: %s after the probe, want %s back", i, o, before[i])
			}
		}
	})
}

// TestHashEmptyKeyRoundRobin: calls with no key go round-robin.
func TestHashEmptyKeyRoundRobin(t *testing.T) {
	h := newHash(t, balance.Config{}, []rpc.Endpoint{{Addr: "a", Weight: 9}, {Addr: "b"}, {Addr: "c"}})
	for range 6000 {
		addr := pickOne(t, h, rpc.PickInfo{})
		h.Done(addr, rpc.PickResult{})
	}
	for _, s := range h.Stats() {
		if s.Picks != 2000 {
			t.Fatalf("%+v, want 2000 picks each", h.Stats())
		}
	}
}

// TestHashRingIsBounded: weights that would need more than 65 536 points
// are scaled down, and keep their proportions.
func TestHashRingIsBounded(t *testing.T) {
	h := newHash(t, balance.Config{VirtualNodes: balance.MaxVirtualNodes}, []rpc.Endpoint{{Addr: "a", Weight: 1000}, {Addr: "b", Weight: 3000}})
	share := map[string]int{}
	for _, o := range owners(t, h, 40000) {
		share[o]++
	}
	if n := share["b"]; n < 28000 || n > 32000 {
		t.Fatalf("weights 1000:3000 on a bounded ring: %v", share)
	}
}
