package balance

import (
	"errors"
	"fmt"
	"time"
)

// ErrConfig is wrapped by every Validate error of this package, and by
// [ByName]'s error for a name it does not know.
var ErrConfig = errors.New("balance: invalid config")

// The defaults a zero [Config] field takes.
const (
	// DefaultShieldTime is how long an endpoint reported unavailable is
	// first skipped.
	DefaultShieldTime = 10 * time.Second
	// DefaultMaxShieldTime caps the doubling of the shield of an endpoint
	// that fails its probes: NewLife's ShieldingTime, which NewLife applies
	// flat.
	DefaultMaxShieldTime = 60 * time.Second
	// DefaultDecay is the time constant of [P2C]'s latency average
	// (go-zero's).
	DefaultDecay = 10 * time.Second
	// DefaultVirtualNodes is the number of points a [ConsistentHash] ring
	// gives each unit of an endpoint's weight (Dubbo's and ketama's 160).
	DefaultVirtualNodes = 160
)

// Limits on [Config] fields.
const (
	// MaxVirtualNodes bounds [Config.VirtualNodes].
	MaxVirtualNodes = 4096
	// maxRingPoints bounds a ConsistentHash ring; past it the endpoints'
	// points are scaled down in proportion.
	maxRingPoints = 1 << 16
	// maxSequence bounds a WeightedRoundRobin cycle; past it the weights
	// are scaled down in proportion.
	maxSequence = 1 << 14
	// maxWeight bounds an endpoint's weight; a larger one counts as it.
	maxWeight = 1_000_000
)

// Config holds a balancer's settings. The zero value means "all defaults";
// a zero field takes the default named on it. Every policy reads the shield
// settings; the others are read only by the policy named on them, so one
// Config can serve [ByName] whatever the name.
type Config struct {
	// ShieldTime is how long an endpoint reported unavailable
	// ([rpc.PickResult.Unavailable]) is skipped before a pick probes it
	// back (default 10 s). Each failed probe doubles it, up to
	// MaxShieldTime; a successful one clears it.
	ShieldTime time.Duration
	// MaxShieldTime caps the doubled shield (default 60 s, or ShieldTime
	// if that is longer). Set it to ShieldTime for a flat shield, as
	// NewLife's.
	MaxShieldTime time.Duration
	// Decay is the time constant of [P2C]'s moving average of latency
	// (default 10 s): a sample older by Decay weighs 1/e of a new one.
	Decay time.Duration
	// VirtualNodes is the number of ring points [ConsistentHash] gives an
	// endpoint per unit of weight (default 160, at most
	// [MaxVirtualNodes]).
	VirtualNodes int
}

// DefaultConfig returns a Config with every default filled in.
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	if c.ShieldTime == 0 {
		c.ShieldTime = DefaultShieldTime
	}
	if c.MaxShieldTime == 0 {
		c.MaxShieldTime = max(DefaultMaxShieldTime, c.ShieldTime)
	}
	if c.Decay == 0 {
		c.Decay = DefaultDecay
	}
	if c.VirtualNodes == 0 {
		c.VirtualNodes = DefaultVirtualNodes
	}
	return c
}

// Validate reports the first setting out of range; its errors wrap
// [ErrConfig].
func (c Config) Validate() error {
	switch {
	case c.ShieldTime < 0:
		return fmt.Errorf("%w: ShieldTime %v < 0", ErrConfig, c.ShieldTime)
	case c.MaxShieldTime < 0:
		return fmt.Errorf("%w: MaxShieldTime %v < 0", ErrConfig, c.MaxShieldTime)
	case c.Decay < 0:
		return fmt.Errorf("%w: Decay %v < 0", ErrConfig, c.Decay)
	case c.VirtualNodes < 0 || c.VirtualNodes > MaxVirtualNodes:
		return fmt.Errorf("%w: VirtualNodes %d not in [0, %d]", ErrConfig, c.VirtualNodes, MaxVirtualNodes)
	}
	if d := c.withDefaults(); d.MaxShieldTime < d.ShieldTime {
		return fmt.Errorf("%w: MaxShieldTime %v < ShieldTime %v", ErrConfig, d.MaxShieldTime, d.ShieldTime)
	}
	return nil
}
