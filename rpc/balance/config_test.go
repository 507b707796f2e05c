package balance_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc/balance"
)

func TestDefaultConfig(t *testing.T) {
	want := balance.Config{
		ShieldTime:    balance.DefaultShieldTime,
		MaxShieldTime: balance.DefaultMaxShieldTime,
		Decay:         balance.DefaultDecay,
		VirtualNodes:  balance.DefaultVirtualNodes,
	}
	if got := balance.DefaultConfig(); got != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", got, want)
	}
	if err := want.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (balance.Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	// A ShieldTime past the default cap raises the default cap with it.
	if err := (balance.Config{ShieldTime: 2 * time.Minute}).Validate(); err != nil {
		t.Fatalf("a long ShieldTime alone: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []balance.Config{
		{ShieldTime: -1},
		{MaxShieldTime: -1},
		{Decay: -time.Second},
		{VirtualNodes: -1},
		{VirtualNodes: balance.MaxVirtualNodes + 1},
		{ShieldTime: 10 * time.Second, MaxShieldTime: 5 * time.Second},
		{MaxShieldTime: time.Second}, // below the default ShieldTime
	} {
		if err := c.Validate(); !errors.Is(err, balance.ErrConfig) {
			t.Errorf("%+v: Validate = %v, want ErrConfig", c, err)
		}
		for _, name := range balance.Names() {
			if b, err := balance.ByName(name, c); !errors.Is(err, balance.ErrConfig) || b != nil {
				t.Errorf("%s with %+v: %v, %v; want nil, ErrConfig", name, c, b, err)
			}
		}
		if _, err := balance.NewFailover(c); !errors.Is(err, balance.ErrConfig) {
			t.Errorf("NewFailover(%+v) = %v", c, err)
		}
		if _, err := balance.NewRoundRobin(c); !errors.Is(err, balance.ErrConfig) {
			t.Errorf("NewRoundRobin(%+v) = %v", c, err)
		}
		if _, err := balance.NewWeightedRoundRobin(c); !errors.Is(err, balance.ErrConfig) {
			t.Errorf("NewWeightedRoundRobin(%+v) = %v", c, err)
		}
		if _, err := balance.NewP2C(c); !errors.Is(err, balance.ErrConfig) {
			t.Errorf("NewP2C(%+v) = %v", c, err)
		}
		if _, err := balance.NewConsistentHash(c); !errors.Is(err, balance.ErrConfig) {
			t.Errorf("NewConsistentHash(%+v) = %v", c, err)
		}
	}
	if err := (balance.Config{ShieldTime: time.Second, MaxShieldTime: time.Second}).Validate(); err != nil {
		t.Errorf("a flat shield: %v", err)
	}
}
