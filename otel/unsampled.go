package otel

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/lifenet/lifenet/rpc"
)

// unsampledCtx is the context of a call that WithSampling dropped and
// that starts a trace. It carries the new trace's span context, unsampled,
// as OpenTelemetry and rpc look for it (trace.SpanFromContext,
// rpc.TraceContextFrom), so that the handler's calls pass the decision
// on; both are made when first asked for. Most handlers never ask, and
// the call costs this one allocation where the two contexts would cost
// five and the IDs' hex text.
type unsampledCtx struct {
	context.Context
	sc    trace.SpanContext
	once  sync.Once
	span  trace.Span
	trace rpc.TraceContext
}

func (c *unsampledCtx) Value(k any) any {
	switch k {
	case ctxKeys.span:
		c.once.Do(c.build)
		return c.span
	case ctxKeys.trace:
		c.once.Do(c.build)
		return &c.trace
	}
	return c.Context.Value(k)
}

func (c *unsampledCtx) build() {
	c.span = trace.SpanFromContext(trace.ContextWithSpanContext(context.Background(), c.sc))
	c.trace = TraceContextOf(c.sc)
}

// ctxKeys are the context keys trace.SpanFromContext and
// rpc.TraceContextFrom look up, found by asking a context that records
// the key it is asked for, and checked: ok false (the lookups changed)
// leaves unsampledCtx unused and the two contexts made at once.
var ctxKeys lookupKeys

func init() { ctxKeys = findKeys() }

type lookupKeys struct {
	span, trace any
	ok          bool
}

// keyProbe answers nothing and records the first key it is asked for.
type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(k any) any {
	if p.key == nil {
		p.key = k
	}
	return nil
}

func findKeys() lookupKeys {
	var k lookupKeys
	p := &keyProbe{Context: context.Background()}
	trace.SpanFromContext(p)
	k.span = p.key
	p = &keyProbe{Context: context.Background()}
	rpc.TraceContextFrom(p)
	k.trace = p.key
	if k.span == nil || k.trace == nil || k.span == k.trace {
		return k
	}
	ctxKeys = k // for the check; init sets the result
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}})
	c := &unsampledCtx{Context: context.Background(), sc: sc}
	tc, ok := rpc.TraceContextFrom(c)
	k.ok = ok && tc == TraceContextOf(sc) && trace.SpanContextFromContext(c).Equal(sc)
	return k
}

// withUnsampled returns ctx carrying sc (a new trace, unsampled) for
// OpenTelemetry and for rpc.
func withUnsampled(ctx context.Context, sc trace.SpanContext) context.Context {
	if ctxKeys.ok {
		return &unsampledCtx{Context: ctx, sc: sc}
	}
	return rpc.WithTraceContext(trace.ContextWithSpanContext(ctx, sc), TraceContextOf(sc))
}
