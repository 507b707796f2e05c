package otel

import (
	"context"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"

	"github.com/lifenet/lifenet/rpc"
)

// WithSampling makes the interceptors take the head-sampling decision
// themselves, before the tracer sees a call, as the SDK's
// ParentBased(TraceIDRatioBased(ratio)) takes it: a call whose caller's
// trace context is sampled is traced, one whose caller's is not is not,
// and a call that starts a trace (no caller's trace context, or
// NewLife's, which cannot be a parent) is traced at ratio (0 to 1), by a
// random number that a dropped root's trace ID carries in its low half,
// where TraceIDRatioBased looks.
//
// It exists for its cost. A call the tracer's sampler drops still costs
// the SDK's Start and End, about 8,000 instructions and a dozen
// allocations on a server (docs/perf/observability.md); a call this
// sampler drops starts no span: it costs a random number and, so that
// the calls its handler makes carry the decision downstream, a context
// with the unsampled trace context (rpc's and OpenTelemetry's). Only the
// calls it keeps reach the tracer, whose sampler should keep what it is
// handed: the SDK's default, ParentBased(AlwaysSample), does; a ratio
// there as well would sample twice. A custom sampler that reads a span's
// attributes sees only the calls this one kept.
func WithSampling(ratio float64) Option {
	return func(c *config) { c.sampling = newHeadSampler(ratio) }
}

// headSampler is WithSampling's decision.
type headSampler struct {
	bound uint64 // a root is kept when its trace ID's low 63 bits are below this, as TraceIDRatioBased does
	all   bool   // ratio >= 1
}

func newHeadSampler(ratio float64) *headSampler {
	switch {
	case ratio >= 1:
		return &headSampler{all: true}
	case ratio > 0:
		return &headSampler{bound: uint64(ratio * (1 << 63))}
	}
	return &headSampler{}
}

// server decides for a server's call: keep true, it is traced (from the
// returned ctx as given); keep false, it is not, and ctx carries the
// unsampled trace context its handler's calls pass on.
func (h *headSampler) server(ctx context.Context, info *rpc.CallInfo) (context.Context, bool) {
	if info != nil {
		if tc, ok := info.Trace(); ok {
			if sc, ok := SpanContextOf(tc); ok {
				if sc.IsSampled() {
					return ctx, true
				}
				// The handler's rpc calls carry tc already (rpc passes a
				// caller's trace context on); other instrumentation finds it here.
				return trace.ContextWithRemoteSpanContext(ctx, sc), false
			}
		}
	}
	return h.root(ctx)
}

// client decides for a client's call, as server does: its parent is the
// context's span, or the trace context it carries for rpc.
func (h *headSampler) client(ctx context.Context) (context.Context, bool) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		if tc, ok := rpc.TraceContextFrom(ctx); ok {
			if sc, ok = SpanContextOf(tc); ok {
				return ctx, sc.IsSampled() // the call carries tc as it is
			}
		}
	}
	if sc.IsValid() {
		if sc.IsSampled() {
			return ctx, true
		}
		return rpc.WithTraceContext(ctx, TraceContextOf(sc)), false
	}
	return h.root(ctx)
}

// root decides for a call that starts a trace, by one random number as
// TraceIDRatioBased decides by a trace ID's low 63 bits: kept, the tracer
// makes the trace; dropped, ctx gets a new unsampled trace whose ID's low
// half is that number (so that a downstream TraceIDRatioBased at the same
// ratio drops it too) and downstream services, sampling parent-based, drop
// it as well.
func (h *headSampler) root(ctx context.Context) (context.Context, bool) {
	r := rand.Uint64()
	if h.all || r>>1 < h.bound {
		return ctx, true
	}
	return withUnsampled(ctx, r), false
}
