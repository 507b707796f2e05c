package cluster

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

type markKey struct{}

// mark is what Idempotent and Race put in a call's ctx.
type mark struct {
	idempotent bool
	race       bool
	stagger    time.Duration
}

// Idempotent returns a ctx whose calls may run more than once: Config.Retry
// may send one again after it was written (on a timeout or a connection
// that ended), and [Race] may send it to several endpoints at once.
func Idempotent(ctx context.Context) context.Context {
	m := mark{idempotent: true}
	if old, _ := ctx.Value(markKey{}).(*mark); old != nil {
		m.race, m.stagger = old.race, old.stagger
	}
	return context.WithValue(ctx, markKey{}, &m)
}

// Race returns a ctx whose calls race (NewLife ApiHttpClient's Race): the
// call goes to one endpoint, then, each stagger that passes with no
// answer, to another (up to Config.RaceAttempts endpoints, each a new one);
// the first success wins and the other attempts are canceled. A failed
// attempt starts the next at once; the call fails only when every attempt
// has. The call must be marked [Idempotent] too (it may run on each
// endpoint): one that is not fails with [ErrConfig]. A race is not
// retried.
func Race(ctx context.Context, stagger time.Duration) context.Context {
	m := mark{race: true, stagger: max(stagger, 0)}
	if old, _ := ctx.Value(markKey{}).(*mark); old != nil {
		m.idempotent = old.idempotent
	}
	return context.WithValue(ctx, markKey{}, &m)
}

// retryable reports whether a call whose attempt n failed with err may be
// sent again: attempts and budget remain, ctx has not ended, err is no
// error reply (but a draining server's 503, which ran nothing), and
// the call either never left (!sent) or is idempotent and failed for a
// reason of its endpoint.
func (c *Client) retryable(ctx context.Context, err error, sent, idempotent bool, n int) bool {
	if c.cfg.Retry.MaxAttempts <= 1 || ctx.Err() != nil || errors.Is(err, errNoEndpoints) || c.closed.Load() {
		return false
	}
	var ae *rpc.APIError
	switch {
	case errors.As(err, &ae):
		if !refusing(ae) {
			return false
		}
	case !sent:
	case !idempotent:
		return false
	case !unavailable(err) && !errors.Is(err, rpc.ErrTimeout):
		return false
	}
	if !c.budget.failure() {
		return false
	}
	return n < c.cfg.Retry.MaxAttempts
}

// retrier computes the waits between attempts.
type retrier struct{ p RetryPolicy }

// backoff is the wait after attempt n (1 for the first): Initial ×
// Multiplier^(n-1), capped at Max, spread by ± Jitter.
func (r retrier) backoff(n int) time.Duration {
	d := float64(r.p.InitialBackoff) * math.Pow(r.p.Multiplier, float64(n-1))
	d = min(d, float64(r.p.MaxBackoff))
	if j := r.p.Jitter; j > 0 {
		d *= 1 + j*(2*rand.Float64()-1)
	}
	return time.Duration(d)
}

// wait sleeps the backoff after attempt n, or until ctx ends.
func (r retrier) wait(ctx context.Context, n int) error {
	d := r.backoff(n)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// budget is grpc-go's retry throttle, in thousandths of a token.
type budget struct {
	off       bool
	max, gain int64
	tokens    atomic.Int64
}

func (b *budget) init(rb RetryBudget) {
	if rb.MaxTokens < 0 {
		b.off = true
		return
	}
	b.max = int64(rb.MaxTokens * 1000)
	b.gain = int64(rb.TokenRatio * 1000)
	b.tokens.Store(b.max)
}

// success gives back TokenRatio of a token, up to MaxTokens.
func (b *budget) success() {
	if b.off || b.gain == 0 {
		return
	}
	for {
		t := b.tokens.Load()
		if t >= b.max {
			return
		}
		if b.tokens.CompareAndSwap(t, min(t+b.gain, b.max)) {
			return
		}
	}
}

// failure takes a token for a failed attempt that could be retried and
// reports whether the retry may go: more than half the tokens remain.
func (b *budget) failure() bool {
	if b.off {
		return true
	}
	for {
		t := b.tokens.Load()
		n := max(t-1000, 0)
		if b.tokens.CompareAndSwap(t, n) {
			return n > b.max/2
		}
	}
}
