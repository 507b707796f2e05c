package otel

import (
	"context"
	"sync/atomic"

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
	tid  trace.TraceID
	sid  trace.SpanID
	made atomic.Pointer[madeTrace] // nil until asked for
}

// madeTrace is an unsampledCtx's values, made when first asked for.
type madeTrace struct {
	span  trace.Span
	trace rpc.TraceContext
}

func (c *unsampledCtx) Value(k any) any {
	switch k {
	case ctxKeys.span:
		return c.values().span
	case ctxKeys.trace:
		return &c.values().trace
	}
	return c.Context.Value(k)
}

// values makes the values once (two goroutines asking at once may both
// make them; one is kept, and they are equal).
func (c *unsampledCtx) values() *madeTrace {
	if m := c.made.Load(); m != nil {
		return m
	}
	sc := c.spanContext()
	m := &madeTrace{span: trace.SpanFromContext(trace.ContextWithSpanContext(context.Background(), sc)), trace: TraceContextOf(sc)}
	if !c.made.CompareAndSwap(nil, m) {
		return c.made.Load()
	}
	return m
}

func (c *unsampledCtx) spanContext() trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: c.tid, SpanID: c.sid})
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
	c := &unsampledCtx{Context: context.Background(), tid: trace.TraceID{1}, sid: trace.SpanID{2}}
	sc := c.spanContext()
	tc, ok := rpc.TraceContextFrom(c)
	k.ok = ok && tc == TraceContextOf(sc) && trace.SpanContextFromContext(c).Equal(sc)
	return k
}

// withUnsampled returns ctx carrying a new trace, unsampled, of tid and
// sid for OpenTelemetry and for rpc.
func withUnsampled(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	c := &unsampledCtx{Context: ctx, tid: tid, sid: sid}
	if ctxKeys.ok {
		return c
	}
	return rpc.WithTraceContext(trace.ContextWithSpanContext(ctx, c.spanContext()), TraceContextOf(c.spanContext()))
}
