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
	// DefaultProbeInterval is how often the client asks Api/Health of
	// each endpoint it is connected to, and probes a shielded one back
	// ([Config.ProbeInterval]).
	DefaultProbeInterval = time.Second
	// DefaultShieldTimeouts is how many timeouts in a row, with no reply
	// from the endpoint in between, shield it ([Config.ShieldTimeouts]).
	DefaultShieldTimeouts = 2
	// DefaultConnectTimeout bounds the making of an endpoint's connection,
	// its first reply included ([Config.ConnectTimeout]): NewLife
	// ISocketClient.Timeout's 3 s, the transport's dial timeout.
	DefaultConnectTimeout = 3 * time.Second
	// DefaultMaxEndpoints bounds the endpoints a client keeps of a set
	// ([Config.MaxEndpoints]).
	DefaultMaxEndpoints = 65536
)

// Limits on [Config] fields.
const (
	// MaxAttempts bounds [RetryPolicy.MaxAttempts] (grpc-go caps at 5).
	MaxAttempts = 10
	// MaxRaceAttempts bounds [Config.RaceAttempts].
	MaxRaceAttempts = 10
	// MinProbeInterval and MaxProbeInterval bound a positive
	// [Config.ProbeInterval].
	MinProbeInterval = 10 * time.Millisecond
	MaxProbeInterval = time.Hour
	// MaxShieldTimeouts bounds [Config.ShieldTimeouts].
	MaxShieldTimeouts = 100
	// MaxConnectTimeout bounds [Config.ConnectTimeout].
	MaxConnectTimeout = time.Minute
	// MaxMaxEndpoints bounds [Config.MaxEndpoints].
	MaxMaxEndpoints = 1 << 20
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
	// Logger receives endpoint set changes, entries of a set skipped,
	// failed dials (those two rate-limited: 10 lines of each per 10 s,
	// then one counting the rest), endpoints shielded and back, and a
	// resolver that stops (nil: the cluster logs nothing), and is the
	// endpoints' clients' Client.Log when that is nil (both nil:
	// slog.Default()).
	Logger *slog.Logger

	// ProbeInterval is the period of the client's health checks (default
	// 1 s): each endpoint it is connected to is asked Api/Health, and an
	// endpoint it shields ([EndpointState.Health]) is probed back. A
	// server that answers 503 ([rpc.ErrNotServing]: draining, or
	// [rpc.ErrShutdown]) takes no new call until it answers "Serving";
	// one that gave no reply to ShieldTimeouts timed-out requests in a row
	// (a partition, a hung server) takes none until a probe, on a new
	// connection, gets a reply. Negative: no health checks, no such
	// shields (a 503 refusal is then reported to the balancer as
	// unavailable, and a timeout is a latency sample only) and no
	// Api/Health on a new connection (see ConnectTimeout: a listener that
	// never answers then costs the first call written to it its Timeout).
	ProbeInterval time.Duration
	// ProbeTimeout bounds each probe, its dial included (default half of
	// ProbeInterval; at most ProbeInterval).
	ProbeTimeout time.Duration
	// ShieldTimeouts is how many timed-out attempts in a row, each written
	// after the endpoint's last reply, shield it (default 2, at most
	// [MaxShieldTimeouts]; negative: timeouts never shield). A probe's
	// timeout counts as one.
	ShieldTimeouts int

	// ConnectTimeout bounds the making of an endpoint's connection
	// (default 3 s, at most [MaxConnectTimeout]): its dial (each within
	// Client.Transport.DialTimeout too) and, unless ProbeInterval is
	// negative, the reply to a first Api/Health call on it (any reply,
	// a 404 or a 503 included: a server is there). A connection with no
	// reply in time is closed and its endpoint counts as one that could
	// not be dialed, so that a listener which takes connections and never
	// answers (a process stopped, a full accept queue) costs no call its
	// whole Timeout: no call was written on it. A call waits for one of
	// its picks to connect at most its own Timeout, which the wait counts
	// in (see the package's "Connecting").
	ConnectTimeout time.Duration
	// MaxEndpoints bounds the endpoints the client keeps of a set
	// (default [DefaultMaxEndpoints], 65,536, at most [MaxMaxEndpoints]):
	// the first MaxEndpoints valid ones are kept, the rest skipped with a
	// log line.
	MaxEndpoints int
}

// RetryPolicy is opt-in: a zero MaxAttempts makes one attempt per call. A
// call is retried only when it is safe: it never left (its error matches
// [rpc.ErrNotSent], as a failed dial's does), the server
// refused it unrun while draining (a 503 [rpc.ErrShutdown] or
// [rpc.ErrNotServing]), or it is
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
	if c.ProbeInterval == 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = c.ProbeInterval / 2
	}
	if c.ShieldTimeouts == 0 {
		c.ShieldTimeouts = DefaultShieldTimeouts
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxEndpoints == 0 {
		c.MaxEndpoints = DefaultMaxEndpoints
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
	interval := c.ProbeInterval
	if interval == 0 {
		interval = DefaultProbeInterval
	}
	switch {
	case c.RaceAttempts < 0 || c.RaceAttempts > MaxRaceAttempts:
		return fmt.Errorf("%w: RaceAttempts %d (0 to %d)", ErrConfig, c.RaceAttempts, MaxRaceAttempts)
	case c.ResolveTimeout < 0:
		return fmt.Errorf("%w: ResolveTimeout %v < 0", ErrConfig, c.ResolveTimeout)
	case c.ProbeInterval > 0 && (c.ProbeInterval < MinProbeInterval || c.ProbeInterval > MaxProbeInterval):
		return fmt.Errorf("%w: ProbeInterval %v (negative, 0, or %v to %v)", ErrConfig, c.ProbeInterval, MinProbeInterval, MaxProbeInterval)
	case c.ProbeTimeout < 0:
		return fmt.Errorf("%w: ProbeTimeout %v < 0", ErrConfig, c.ProbeTimeout)
	case c.ProbeTimeout > 0 && interval > 0 && c.ProbeTimeout > interval:
		return fmt.Errorf("%w: ProbeTimeout %v over ProbeInterval %v", ErrConfig, c.ProbeTimeout, interval)
	case c.ShieldTimeouts > MaxShieldTimeouts:
		return fmt.Errorf("%w: ShieldTimeouts %d (at most %d)", ErrConfig, c.ShieldTimeouts, MaxShieldTimeouts)
	case c.ConnectTimeout < 0 || c.ConnectTimeout > MaxConnectTimeout:
		return fmt.Errorf("%w: ConnectTimeout %v (0 to %v)", ErrConfig, c.ConnectTimeout, MaxConnectTimeout)
	case c.MaxEndpoints < 0 || c.MaxEndpoints > MaxMaxEndpoints:
		return fmt.Errorf("%w: MaxEndpoints %d (0 to %d)", ErrConfig, c.MaxEndpoints, MaxMaxEndpoints)
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
