package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// ErrConfig is wrapped by every Validate error of this package, and by the
// error of a call marked with [Race] but not [Idempotent].
var ErrConfig = errors.New("cluster: invalid config")

// The defaults a zero [Config] or [RetryPolicy] field takes.
const (
	// DefaultResolveTimeout bounds Dial's wait for the resolver's first
	// endpoint set.
	DefaultResolveTimeout = 10 * time.Second
	// DefaultRaceAttempts is how many endpoints a [Race] call is sent to
	// at most (NewLife's ApiHttpClient races every server; three bound the
	// extra load).
	DefaultRaceAttempts = 3
	// DefaultInitialBackoff, DefaultMaxBackoff, DefaultMultiplier and
	// DefaultJitter shape the wait before each retry: Initial ×
	// Multiplier^(n-1), capped at Max, spread by ± Jitter of itself.
	DefaultInitialBackoff = 20 * time.Millisecond
	DefaultMaxBackoff     = time.Second
	DefaultMultiplier     = 2.0
	DefaultJitter         = 0.2
	// DefaultBudgetTokens and DefaultBudgetRatio are grpc-go's retry
	// throttling figures ([RetryBudget]).
	DefaultBudgetTokens = 10.0
	DefaultBudgetRatio  = 0.1
)

// Limits on [Config] fields.
const (
	// MaxAttempts bounds [RetryPolicy.MaxAttempts] (grpc-go caps at 5).
	MaxAttempts = 10
	// MaxRaceAttempts bounds [Config.RaceAttempts].
	MaxRaceAttempts = 10
)

// Config holds a cluster client's settings. The zero value means "all
// defaults"; a zero field takes the default named on it.
type Config struct {
	// Client is the configuration of each endpoint's [rpc.Client]: its
	// Timeout bounds each attempt of a call (default 15 s).
	Client rpc.ClientConfig
	// Retry is the retry policy; its zero value makes no retries.
	Retry RetryPolicy
	// RaceAttempts is how many endpoints a [Race] call may be sent to
	// (default 3).
	RaceAttempts int
	// ResolveTimeout bounds Dial's wait for the resolver's first set
	// (default 10 s, and never past Dial's ctx).
	ResolveTimeout time.Duration
	// Logger receives endpoint set changes, failed dials and a resolver
	// that stops (nil: the cluster logs nothing), and is the endpoints'
	// clients' Client.Log when that is nil (both nil: slog.Default()).
	Logger *slog.Logger
}

// RetryPolicy is opt-in: a zero MaxAttempts makes one attempt per call. A
// call is retried only when it is safe: it never left (its error matches
// [rpc.ErrNotSent], as a failed dial's does), the server
// refused it unrun while shutting down ([rpc.ErrShutdown]), or it is
// marked with [Idempotent] and failed for a reason of its endpoint
// (unavailable, or a timeout of the attempt while the call's ctx still
// runs). Error replies are never retried. Each retry avoids every endpoint
// the call's earlier attempts went to ([rpc.PickInfo.Tried]) while another
// is usable.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts per call, the first included
	// (0 or 1: no retry; at most [MaxAttempts]).
	MaxAttempts int
	// InitialBackoff is the wait before the first retry (default 20 ms);
	// each next wait is Multiplier (default 2) times longer, up to
	// MaxBackoff (default 1 s).
	InitialBackoff, MaxBackoff time.Duration
	Multiplier                 float64
	// Jitter spreads each wait uniformly by ± Jitter of itself (default
	// 0.2; 0 < Jitter ≤ 1; a negative value means none).
	Jitter float64
	// Budget bounds retries to a share of the traffic.
	Budget RetryBudget
}

// RetryBudget is grpc-go's retry throttling: the client holds up to
// MaxTokens tokens (default 10), starting full; each failed attempt that
// could be retried takes one, each successful call gives back TokenRatio
// (default 0.1), and a call is retried only while more than half of
// MaxTokens remain. Once the servers fail for good, retries stop after
// about MaxTokens/2 of them, and come back at one per 1/TokenRatio
// successes: at most about TokenRatio of the calls are retries. A negative
// MaxTokens turns the budget off.
type RetryBudget struct {
	MaxTokens  float64
	TokenRatio float64
}

// DefaultConfig returns a Config with every default filled in.
func DefaultConfig() Config {
	c := Config{Client: rpc.DefaultClientConfig()}
	c.fill()
	return c
}

func (c *Config) fill() {
	if c.RaceAttempts == 0 {
		c.RaceAttempts = DefaultRaceAttempts
	}
	if c.ResolveTimeout == 0 {
		c.ResolveTimeout = DefaultResolveTimeout
	}
	r := &c.Retry
	if r.MaxAttempts == 0 {
		r.MaxAttempts = 1
	}
	if r.InitialBackoff == 0 {
		r.InitialBackoff = DefaultInitialBackoff
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = max(DefaultMaxBackoff, r.InitialBackoff)
	}
	if r.Multiplier == 0 {
		r.Multiplier = DefaultMultiplier
	}
	if r.Jitter == 0 {
		r.Jitter = DefaultJitter
	}
	if r.Budget.MaxTokens == 0 {
		r.Budget.MaxTokens = DefaultBudgetTokens
	}
	if r.Budget.TokenRatio == 0 {
		r.Budget.TokenRatio = DefaultBudgetRatio
	}
}

// Validate reports the first setting out of range.
func (c Config) Validate() error {
	if err := c.Client.Validate(); err != nil {
		return fmt.Errorf("%w: Client: %w", ErrConfig, err)
	}
	r := c.Retry
	switch {
	case c.RaceAttempts < 0 || c.RaceAttempts > MaxRaceAttempts:
		return fmt.Errorf("%w: RaceAttempts %d (0 to %d)", ErrConfig, c.RaceAttempts, MaxRaceAttempts)
	case c.ResolveTimeout < 0:
		return fmt.Errorf("%w: ResolveTimeout %v < 0", ErrConfig, c.ResolveTimeout)
	case r.MaxAttempts < 0 || r.MaxAttempts > MaxAttempts:
		return fmt.Errorf("%w: Retry.MaxAttempts %d (0 to %d)", ErrConfig, r.MaxAttempts, MaxAttempts)
	case r.InitialBackoff < 0:
		return fmt.Errorf("%w: Retry.InitialBackoff %v < 0", ErrConfig, r.InitialBackoff)
	case r.MaxBackoff < 0 || (r.MaxBackoff > 0 && r.MaxBackoff < r.InitialBackoff):
		return fmt.Errorf("%w: Retry.MaxBackoff %v (0, or at least InitialBackoff %v)", ErrConfig, r.MaxBackoff, r.InitialBackoff)
	case r.Multiplier != 0 && !(r.Multiplier >= 1 && r.Multiplier <= 100):
		return fmt.Errorf("%w: Retry.Multiplier %v (0, or 1 to 100)", ErrConfig, r.Multiplier)
	case r.Jitter > 1 || r.Jitter != r.Jitter:
		return fmt.Errorf("%w: Retry.Jitter %v (at most 1)", ErrConfig, r.Jitter)
	case r.Budget.MaxTokens > 1e6 || r.Budget.MaxTokens != r.Budget.MaxTokens:
		return fmt.Errorf("%w: Retry.Budget.MaxTokens %v (at most 1e6)", ErrConfig, r.Budget.MaxTokens)
	case r.Budget.TokenRatio < 0 || r.Budget.TokenRatio > 1 || r.Budget.TokenRatio != r.Budget.TokenRatio:
		return fmt.Errorf("%w: Retry.Budget.TokenRatio %v (0 to 1)", ErrConfig, r.Budget.TokenRatio)
	}
	return nil
}
