package otel

import (
	"context"
	"encoding/hex"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/lifenet/lifenet/rpc"
)

// Attributes of a span whose caller's trace context is not W3C's.
const (
	NewLifeTraceIDKey      = attribute.Key("newlife.trace_id")
	NewLifeParentSpanIDKey = attribute.Key("newlife.parent_span_id")
)

// SpanContextOf returns tc as an OpenTelemetry remote span context; ok is
// false when its IDs are not W3C's (32 and 16 lower-case hex digits, not
// all zero), as NewLife's own 30-character trace IDs are not.
func SpanContextOf(tc rpc.TraceContext) (sc trace.SpanContext, ok bool) {
	tid, err := trace.TraceIDFromHex(tc.TraceID)
	if err != nil {
		return sc, false
	}
	sid, err := trace.SpanIDFromHex(tc.SpanID)
	if err != nil {
		return sc, false
	}
	sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(tc.Flags), Remote: true})
	return sc, sc.IsValid()
}

// TraceContextOf returns sc as the trace context a call carries (the
// traceparent NewLife's tracer reads).
func TraceContextOf(sc trace.SpanContext) rpc.TraceContext {
	// Both IDs in one string, one allocation (the IDs' String methods make two each).
	tid, sid := sc.TraceID(), sc.SpanID()
	var b [48]byte
	hex.Encode(b[:32], tid[:])
	hex.Encode(b[32:], sid[:])
	s := string(b[:])
	return rpc.TraceContext{TraceID: s[:32], SpanID: s[32:], Flags: byte(sc.TraceFlags())}
}

// serverParent returns ctx with the caller's span context as the remote
// parent, and the attributes recording a caller's trace context that
// cannot be a parent.
func serverParent(ctx context.Context, info *rpc.CallInfo) (context.Context, []attribute.KeyValue) {
	if info == nil {
		return ctx, nil
	}
	tc, ok := info.Trace()
	if !ok {
		return ctx, nil
	}
	if sc, ok := SpanContextOf(tc); ok {
		return trace.ContextWithRemoteSpanContext(ctx, sc), nil
	}
	kv := []attribute.KeyValue{NewLifeTraceIDKey.String(tc.TraceID)}
	if tc.SpanID != "" {
		kv = append(kv, NewLifeParentSpanIDKey.String(tc.SpanID))
	}
	// A new root: drop any span the context carries (the caller's is the
	// trace it asked for, and it is not one OpenTelemetry can continue).
	return trace.ContextWithSpanContext(ctx, trace.SpanContext{}), kv
}

// clientParent returns ctx with a parent for a client's span: its span
// if it has one, else the trace context it carries for rpc (a handler's
// caller's, or one set with rpc.WithTraceContext) when that is W3C's.
func clientParent(ctx context.Context) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	if tc, ok := rpc.TraceContextFrom(ctx); ok {
		if sc, ok := SpanContextOf(tc); ok {
			return trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	return ctx
}
