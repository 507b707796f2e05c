package otel

import (
	"context"
	"encoding/binary"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/lifenet/lifenet/rpc"
)

// unsampledCtx is the context of a call that WithSampling dropped and
// that starts a trace. It carries the new trace, unsampled, as
// OpenTelemetry and rpc look for it (trace.SpanFromContext,
// rpc.TraceContextFrom), so that the handler's calls pass the decision
// on: it is itself the trace's non-recording span, and it makes the
// trace's rpc.TraceContext (the IDs' hex text) when first asked for. Its
// IDs come from one random number, the sampler's (see ids). A handler that
// asks for neither costs the call this one allocation of 48 bytes, where
// the two contexts would cost five, the hex text and two more random
// numbers.
type unsampledCtx struct {
	context.Context
	embedded.Span
	seed uint64                           // the sampler's random number
	tc   atomic.Pointer[rpc.TraceContext] // nil until asked for
}

// ids are the trace's IDs: the trace ID's low half is the seed, its high
// half and the span ID are the next outputs of a splitmix64 sequence
// from it (a 64-bit random seed spreads over 128 bits as well as the
// sequence does; the IDs need only be unique, not secret).
func (c *unsampledCtx) ids() (tid trace.TraceID, sid trace.SpanID) {
	next := c.seed + splitmixGamma
	binary.BigEndian.PutUint64(tid[8:], c.seed)
	binary.BigEndian.PutUint64(tid[:8], splitmix64(next))
	binary.BigEndian.PutUint64(sid[:], splitmix64(next+splitmixGamma)|1) // never all zero
	if tid == (trace.TraceID{}) {
		tid[0] = 1
	}
	return tid, sid
}

const splitmixGamma = 0x9e3779b97f4a7c15

// splitmix64 is the output function of Steele, Lea and Flood's SplitMix64
// (the seed of Java's SplittableRandom and of xoshiro).
func splitmix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (c *unsampledCtx) Value(k any) any {
	switch k {
	case ctxKeys.span:
		return trace.Span(c)
	case ctxKeys.trace:
		return c.traceContext()
	}
	return c.Context.Value(k)
}

// traceContext makes the rpc trace context once (two goroutines asking at
// once may both make it; one is kept, and they are equal).
func (c *unsampledCtx) traceContext() *rpc.TraceContext {
	if tc := c.tc.Load(); tc != nil {
		return tc
	}
	tc := TraceContextOf(c.SpanContext())
	if !c.tc.CompareAndSwap(nil, &tc) {
		return c.tc.Load()
	}
	return &tc
}

// The trace.Span of a call not traced: its span context, and nothing
// recorded (as the span trace.ContextWithSpanContext makes).

func (c *unsampledCtx) SpanContext() trace.SpanContext {
	tid, sid := c.ids()
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})
}
func (c *unsampledCtx) End(...trace.SpanEndOption)              {}
func (c *unsampledCtx) AddEvent(string, ...trace.EventOption)   {}
func (c *unsampledCtx) AddLink(trace.Link)                      {}
func (c *unsampledCtx) IsRecording() bool                       { return false }
func (c *unsampledCtx) RecordError(error, ...trace.EventOption) {}
func (c *unsampledCtx) SetStatus(codes.Code, string)            {}
func (c *unsampledCtx) SetName(string)                          {}
func (c *unsampledCtx) SetAttributes(...attribute.KeyValue)     {}
func (c *unsampledCtx) TracerProvider() trace.TracerProvider    { return noop.NewTracerProvider() }

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
	c := &unsampledCtx{Context: context.Background(), seed: 1}
	sc := c.SpanContext()
	tc, ok := rpc.TraceContextFrom(c)
	k.ok = ok && tc == TraceContextOf(sc) && trace.SpanContextFromContext(c).Equal(sc)
	return k
}

// withUnsampled returns ctx carrying a new trace, unsampled, made from
// seed (see ids), for OpenTelemetry and for rpc.
func withUnsampled(ctx context.Context, seed uint64) context.Context {
	c := &unsampledCtx{Context: ctx, seed: seed}
	if ctxKeys.ok {
		return c
	}
	return rpc.WithTraceContext(trace.ContextWithSpanContext(ctx, c.SpanContext()), TraceContextOf(c.SpanContext()))
}
