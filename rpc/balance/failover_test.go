package balance_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
)

func newFailover(t *testing.T, cfg balance.Config, addrs ...string) *balance.Failover {
	t.Helper()
	f, err := balance.NewFailover(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.Update(endpoints(addrs...))
	return f
}

func pickOne(t *testing.T, b rpc.Balancer, info rpc.PickInfo) string {
	t.Helper()
	addr, err := b.Pick(info)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestFailoverOrder: every pick goes to the first endpoint not shielded,
// in the resolver's order; once the first is probed back, everything
// returns to it.
func TestFailoverOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFailover(t, balance.Config{}, "a", "b", "c")
		for range 100 {
			if addr := pickOne(t, f, rpc.PickInfo{}); addr != "a" {
				t.Fatalf("healthy: %s, want a", addr)
			}
			f.Done("a", rpc.PickResult{})
		}
		f.Done("a", rpc.PickResult{Unavailable: true})
		if addr := pickOne(t, f, rpc.PickInfo{}); addr != "b" {
			t.Fatalf("a shielded: %s, want b", addr)
		}
		f.Done("b", rpc.PickResult{Unavailable: true})
		if addr := pickOne(t, f, rpc.PickInfo{}); addr != "c" {
			t.Fatalf("a and b shielded: %s, want c", addr)
		}
		f.Done("c", rpc.PickResult{})

		time.Sleep(balance.DefaultShieldTime)
		if addr := pickOne(t, f, rpc.PickInfo{}); addr != "a" {
			t.Fatalf("after the shield: %s, want a probed", addr)
		}
		// While a's probe is out, b's (over too) is probed by the next pick,
		// and the rest go to c.
		if addr := pickOne(t, f, rpc.PickInfo{}); addr != "b" {
			t.Fatalf("while a's probe is out: %s, want b probed", addr)
		}
		if addr := pickOne(t, f, rpc.PickInfo{}); addr != "c" {
			t.Fatalf("while both probes are out: %s, want c", addr)
		}
		f.Done("b", rpc.PickResult{})
		if addr := pickOne(t, f, rpc.PickInfo{}); addr != "b" {
			t.Fatalf("b probed back, a's probe out: %s, want b", addr)
		}
		f.Done("a", rpc.PickResult{Latency: time.Millisecond})
		for range 100 {
			if addr := pickOne(t, f, rpc.PickInfo{}); addr != "a" {
				t.Fatalf("a probed back: %s, want a", addr)
			}
		}
	})
}

// TestFailoverFailedProbeStaysOnTheNext: a failed probe of the first keeps
// the calls on the second for twice the shield.
func TestFailoverFailedProbeStaysOnTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFailover(t, balance.Config{ShieldTime: time.Second}, "a", "b")
		f.Done("a", rpc.PickResult{Unavailable: true})
		time.Sleep(time.Second)
		if addr := pickOne(t, f, rpc.PickInfo{}); addr != "a" {
			t.Fatalf("probe: %s, want a", addr)
		}
		f.Done("a", rpc.PickResult{Unavailable: true})
		time.Sleep(1999 * time.Millisecond)
		if addr := pickOne(t, f, rpc.PickInfo{}); addr != "b" {
			t.Fatalf("within the doubled shield: %s, want b", addr)
		}
		time.Sleep(time.Millisecond)
		if addr := pickOne(t, f, rpc.PickInfo{}); addr != "a" {
			t.Fatalf("after the doubled shield: %s, want a probed", addr)
		}
	})
}

// TestFailoverExcludeTakesTheNext: a retry that excludes the first goes to
// the second, without shielding the first for the others.
func TestFailoverExcludeTakesTheNext(t *testing.T) {
	f := newFailover(t, balance.Config{}, "a", "b", "c")
	if addr := pickOne(t, f, rpc.PickInfo{Exclude: "a"}); addr != "b" {
		t.Fatalf("Exclude a: %s, want b", addr)
	}
	if addr := pickOne(t, f, rpc.PickInfo{}); addr != "a" {
		t.Fatalf("next call: %s, want a", addr)
	}
}
