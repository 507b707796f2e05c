package otel_test

import (
	"context"
	"iter"
	"maps"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// num is an argument object: a call's trace context travels in one (a
// bare value, as NewLife sends it, carries none).
type num struct {
	N int `json:"n"`
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func findSpan(t *testing.T, spans []sdktrace.ReadOnlySpan, name string, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name && s.SpanKind() == kind {
			return s
		}
	}
	var have []string
	for _, s := range spans {
		have = append(have, s.Name()+"/"+s.SpanKind().String())
	}
	t.Fatalf("no %s span %q; have %v", kind, name, have)
	return nil
}

// One trace across a lifenet client → a lifenet server → a second
// lifenet call its handler makes → a second server: four spans, each the
// child of the one before.
func TestTraceAcrossClientServerAndSecondCall(t *testing.T) {
	tp, rec := tracer(t)
	mp, _ := meters(t)
	opts := []otel.Option{otel.WithTracerProvider(tp), otel.WithMeterProvider(mp)}
	seenB := make(chan rpc.TraceContext, 1)
	_, addrB := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{otel.ServerInterceptor(opts...)}}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "B/Twice", func(ctx context.Context, a num) (int, error) {
			tc, _ := rpc.TraceContextFrom(ctx)
			seenB <- tc
			return 2 * a.N, nil
		}))
	})
	clB := dial(t, addrB, rpc.ClientConfig{Interceptors: []rpc.Interceptor{otel.ClientInterceptor(opts...)}})
	_, addrA := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{otel.ServerInterceptor(opts...)}}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "A/Quad", func(ctx context.Context, a num) (int, error) {
			var r int
			err := clB.Invoke(ctx, "B/Twice", a, &r)
			return 2 * r, err
		}))
	})
	clA := dial(t, addrA, rpc.ClientConfig{Interceptors: []rpc.Interceptor{otel.ClientInterceptor(opts...)}})

	ctx, root := tp.Tracer("test").Start(testCtx(t), "root")
	var r int
	must(t, clA.Invoke(ctx, "A/Quad", num{N: 3}, &r))
	root.End()
	if r != 12 {
		t.Fatalf("A/Quad(3) = %d", r)
	}
	spans := rec.Ended()
	if len(spans) != 5 {
		t.Fatalf("%d spans, want 5 (root, 2 clients, 2 servers)", len(spans))
	}
	cA := findSpan(t, spans, "A/Quad", trace.SpanKindClient)
	sA := findSpan(t, spans, "A/Quad", trace.SpanKindServer)
	cB := findSpan(t, spans, "B/Twice", trace.SpanKindClient)
	sB := findSpan(t, spans, "B/Twice", trace.SpanKindServer)
	chain := []sdktrace.ReadOnlySpan{cA, sA, cB, sB}
	parent := root.SpanContext()
	for _, s := range chain {
		if s.SpanContext().TraceID() != parent.TraceID() {
			t.Errorf("%s %s: trace %s, want %s", s.SpanKind(), s.Name(), s.SpanContext().TraceID(), parent.TraceID())
		}
		if s.Parent().SpanID() != parent.SpanID() {
			t.Errorf("%s %s: parent %s, want %s", s.SpanKind(), s.Name(), s.Parent().SpanID(), parent.SpanID())
		}
		parent = s.SpanContext()
	}
	if !sA.Parent().IsRemote() || !sB.Parent().IsRemote() {
		t.Error("a server span's parent is not remote")
	}
	if tc := <-seenB; tc.TraceID != sB.SpanContext().TraceID().String() || tc.SpanID != sB.SpanContext().SpanID().String() || tc.Flags != 1 {
		t.Errorf("B's handler's trace context %+v, want its server span %s", tc, sB.SpanContext().SpanID())
	}
	a := spanAttrs(sA)
	for k, v := range map[string]string{"rpc.system.name": "newlife", "rpc.method": "A/Quad", "rpc.response.status_code": "0", "network.transport": "tcp", "network.protocol.name": "srmp"} {
		if a[k] != v {
			t.Errorf("server span %s = %q, want %q (all: %v)", k, a[k], v, a)
		}
	}
	if a["network.peer.address"] == "" {
		t.Errorf("server span has no network.peer.address: %v", a)
	}
	for _, s := range chain {
		if s.Status().Code == codes.Error {
			t.Errorf("%s %s: status %v", s.SpanKind(), s.Name(), s.Status())
		}
	}
}

// A client call made from a context carrying only an rpc trace context
// (a handler's without the server interceptor, or one set by hand) is its
// child.
func TestClientSpanContinuesRPCTraceContext(t *testing.T) {
	tp, rec := tracer(t)
	_, addr := echoServer(t)
	cl := dial(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{otel.ClientInterceptor(otel.WithTracerProvider(tp), otel.WithoutMetrics())}})
	in := rpc.TraceContext{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", Flags: 1}
	var out string
	must(t, cl.Invoke(rpc.WithTraceContext(testCtx(t), in), "Echo/Say", "x", &out))
	s := findSpan(t, rec.Ended(), "Echo/Say", trace.SpanKindClient)
	if s.SpanContext().TraceID().String() != in.TraceID || s.Parent().SpanID().String() != in.SpanID {
		t.Errorf("client span %s parent %s, want trace %s parent %s", s.SpanContext().TraceID(), s.Parent().SpanID(), in.TraceID, in.SpanID)
	}
}

// With a tracer that makes no spans (OpenTelemetry's no-op, the global
// default), the interceptors change no call's trace context: a handler's
// calls carry what they would carry without them (NewLife's IDs, a W3C
// parent, or none), not the no-op span's empty context.
func TestNoopTracerKeepsTheCallsTraceContext(t *testing.T) {
	noopTP := noop.NewTracerProvider()
	echoTrace := func(s *rpc.Server) {
		must(t, rpc.Handle(s, "T/Trace", func(ctx context.Context, _ num) (string, error) {
			if tc, ok := rpc.TraceContextFrom(ctx); ok {
				return tc.String(), nil
			}
			return "none", nil
		}))
	}
	_, plain := startServer(t, rpc.Config{}, echoTrace)
	_, traced := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{otel.ServerInterceptor(otel.WithTracerProvider(noopTP), otel.WithoutMetrics())}}, echoTrace)
	plainCl := dial(t, plain, rpc.ClientConfig{})
	tracedCl := dial(t, traced, rpc.ClientConfig{Interceptors: []rpc.Interceptor{otel.ClientInterceptor(otel.WithTracerProvider(noopTP), otel.WithoutMetrics())}})
	ctx := testCtx(t)
	for name, c := range map[string]context.Context{
		"none":    ctx,
		"newlife": rpc.WithTraceContext(ctx, rpc.TraceContext{TraceID: "0a0000051785888000123000ae1f2c", SpanID: "0a0000051f2c0002"}),
		"w3c":     rpc.WithTraceContext(ctx, rpc.TraceContext{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", Flags: 1}),
	} {
		var want, got string
		must(t, plainCl.Invoke(c, "T/Trace", num{1}, &want))
		must(t, tracedCl.Invoke(c, "T/Trace", num{1}, &got))
		if got != want {
			t.Errorf("%s: the handler's calls carry %q through the no-op interceptors, %q without them", name, got, want)
		}
	}
}

// A raw SRMP request as a NewLife client with a W3C tracer writes it,
// traceparent merged into its argument object, gets a server span that is
// the child of the caller's span.
func TestRawSRMPTraceparentIsParent(t *testing.T) {
	tp, rec := tracer(t)
	_, addr := echoServer(t, otel.ServerInterceptor(otel.WithTracerProvider(tp), otel.WithoutMetrics()))
	const traceID, spanID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	b0, p := rawCall(t, addr, rawBody("Echo/Say", `{"input":"x","traceparent":"00-`+traceID+`-`+spanID+`-01"}`))
	if b0 != 0x81 {
		t.Fatalf("reply flag %#x payload %q", b0, p)
	}
	s := findSpan(t, rec.Ended(), "Echo/Say", trace.SpanKindServer)
	if s.SpanContext().TraceID().String() != traceID || s.Parent().SpanID().String() != spanID || !s.Parent().IsRemote() || !s.SpanContext().IsSampled() {
		t.Errorf("server span trace %s parent %s (remote %v, sampled %v), want trace %s parent %s",
			s.SpanContext().TraceID(), s.Parent().SpanID(), s.Parent().IsRemote(), s.SpanContext().IsSampled(), traceID, spanID)
	}
}

// NewLife's own trace IDs have 30 characters: not a W3C parent. The
// server span starts a new trace and keeps the caller's IDs.
func TestRawSRMPNewLifeTraceIDStartsATrace(t *testing.T) {
	tp, rec := tracer(t)
	_, addr := echoServer(t, otel.ServerInterceptor(otel.WithTracerProvider(tp), otel.WithoutMetrics()))
	const nlTrace, nlSpan = "0a0000051785888000123000ae1f2c", "0a0000051f2c0002"
	b0, p := rawCall(t, addr, rawBody("Echo/Say", `{"input":"x","traceparent":"00-`+nlTrace+`-`+nlSpan+`-01"}`))
	if b0 != 0x81 {
		t.Fatalf("reply flag %#x payload %q", b0, p)
	}
	s := findSpan(t, rec.Ended(), "Echo/Say", trace.SpanKindServer)
	if s.Parent().IsValid() || !s.SpanContext().IsValid() {
		t.Errorf("server span parent %v: want a new root", s.Parent())
	}
	a := spanAttrs(s)
	if a["newlife.trace_id"] != nlTrace || a["newlife.parent_span_id"] != nlSpan {
		t.Errorf("attributes %v: want newlife.trace_id %s, newlife.parent_span_id %s", a, nlTrace, nlSpan)
	}
}

// A failed call's spans carry its code; a server span is an error only
// for a 5xx (a 4xx is the caller's), a client span for any code.
func TestSpanStatusFromReplyCode(t *testing.T) {
	tp, rec := tracer(t)
	opts := []otel.Option{otel.WithTracerProvider(tp), otel.WithoutMetrics()}
	_, addr := echoServer(t, otel.ServerInterceptor(opts...))
	cl := dial(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{otel.ClientInterceptor(opts...)}})
	ctx := testCtx(t)
	cl.Invoke(ctx, "Echo/Deny", nil, nil)
	cl.Invoke(ctx, "Echo/Fail", nil, nil)
	spans := rec.Ended()
	for _, c := range []struct {
		name string
		kind trace.SpanKind
		code string
		err  bool
	}{
		{"Echo/Deny", trace.SpanKindServer, "403", false},
		{"Echo/Deny", trace.SpanKindClient, "403", true},
		{"Echo/Fail", trace.SpanKindServer, "500", true},
		{"Echo/Fail", trace.SpanKindClient, "500", true},
	} {
		s := findSpan(t, spans, c.name, c.kind)
		if a := spanAttrs(s); a["rpc.response.status_code"] != c.code {
			t.Errorf("%s %s: status code %q, want %s", c.kind, c.name, a["rpc.response.status_code"], c.code)
		}
		if (s.Status().Code == codes.Error) != c.err {
			t.Errorf("%s %s: status %v, want error %v", c.kind, c.name, s.Status(), c.err)
		}
	}
}

// A stream is one span on each side, ended when the stream ends.
func TestStreamIsOneSpan(t *testing.T) {
	tp, rec := tracer(t)
	mp, r := meters(t)
	opts := []otel.Option{otel.WithTracerProvider(tp), otel.WithMeterProvider(mp)}
	_, addr := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{otel.ServerInterceptor(opts...)}}, func(s *rpc.Server) {
		must(t, rpc.HandleStream(s, "Count/To", func(_ context.Context, a num) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				for i := range a.N {
					if !yield(i, nil) {
						return
					}
				}
			}
		}))
	})
	cl := dial(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{otel.ClientInterceptor(opts...)}})
	n := 0
	for _, err := range rpc.Stream[int](testCtx(t), cl, "Count/To", num{N: 5}) {
		must(t, err)
		n++
	}
	if n != 5 {
		t.Fatalf("%d items, want 5", n)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	sv := findSpan(t, spans, "Count/To", trace.SpanKindServer)
	cs := findSpan(t, spans, "Count/To", trace.SpanKindClient)
	if sv.Parent().SpanID() != cs.SpanContext().SpanID() {
		t.Error("the stream's server span is not the child of its client span")
	}
	ms := collect(t, r)
	histPoint[float64](t, ms["rpc.server.call.duration"], map[string]string{"rpc.method": "Count/To"})
	histPoint[float64](t, ms["rpc.client.call.duration"], map[string]string{"rpc.method": "Count/To"})
	checkMessageEvents(t, sv, "SENT", 5)
	checkMessageEvents(t, cs, "RECEIVED", 5)
}

// checkMessageEvents fails t unless s has n rpc.message events of type
// typ, ids 1 to n, each the size of its item (0 to n-1: one digit).
func checkMessageEvents(t *testing.T, s sdktrace.ReadOnlySpan, typ string, n int) {
	t.Helper()
	evs := s.Events()
	if len(evs) != n {
		t.Fatalf("%s span: %d events, want %d", s.SpanKind(), len(evs), n)
	}
	for i, e := range evs {
		a := map[string]string{}
		for _, kv := range e.Attributes {
			a[string(kv.Key)] = kv.Value.String()
		}
		want := map[string]string{"rpc.message.type": typ, "rpc.message.id": strconv.Itoa(i + 1), "rpc.message.uncompressed_size": "1"}
		if e.Name != "rpc.message" || !maps.Equal(a, want) {
			t.Errorf("%s span event %d: %s %v, want rpc.message %v", s.SpanKind(), i, e.Name, a, want)
		}
	}
}
