package balance_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/rpc/balance"
)

func TestByName(t *testing.T) {
	want := map[string]rpc.Balancer{
		"failover":    (*balance.Failover)(nil),
		"round-robin": (*balance.RoundRobin)(nil),
		"weighted":    (*balance.WeightedRoundRobin)(nil),
		"p2c":         (*balance.P2C)(nil),
		"hash":        (*balance.ConsistentHash)(nil),
	}
	names := balance.Names()
	if len(names) != len(want) {
		t.Fatalf("Names() = %v", names)
	}
	for _, name := range names {
		b, err := balance.ByName(name, balance.Config{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, w := typeName(b), typeName(want[name]); got != w {
			t.Errorf("ByName(%q) is a %s, want a %s", name, got, w)
		}
	}
	for _, name := range []string{"race", "", "Failover", "random", "least-request"} {
		b, err := balance.ByName(name, balance.Config{})
		if !errors.Is(err, balance.ErrConfig) || b != nil {
			t.Errorf("ByName(%q) = %v, %v; want nil, ErrConfig", name, b, err)
		}
		if name == "race" && !strings.Contains(err.Error(), "client") {
			t.Errorf("ByName(race): %v, want it to say the client handles race", err)
		}
	}
}

func typeName(b rpc.Balancer) string {
	switch b.(type) {
	case *balance.Failover:
		return "Failover"
	case *balance.RoundRobin:
		return "RoundRobin"
	case *balance.WeightedRoundRobin:
		return "WeightedRoundRobin"
	case *balance.P2C:
		return "P2C"
	case *balance.ConsistentHash:
		return "ConsistentHash"
	}
	return "?"
}
