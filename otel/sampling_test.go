package otel_test

import (
	"context"
	"math"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// A root call WithSampling drops starts no span, and its handler's
// context carries a new unsampled trace (rpc's and OpenTelemetry's), so
// that the server it calls, sampling parent-based, drops it as well, even
// at a ratio of 1.
func TestSamplingDropsARootAndCarriesTheDecision(t *testing.T) {
	tp, rec := tracer(t)
	sampling := func(r float64) rpc.Interceptor {
		return otel.ServerInterceptor(otel.WithTracerProvider(tp), otel.WithoutMetrics(), otel.WithSampling(r))
	}
	_, addrB := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{sampling(1)}}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "B/Twice", func(_ context.Context, a num) (int, error) { return 2 * a.N, nil }))
	})
	clB := dial(t, addrB, rpc.ClientConfig{Log: quietLog()})
	type seen struct {
		rpc  rpc.TraceContext
		otel trace.SpanContext
	}
	got := make(chan seen, 1)
	_, addrA := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{sampling(0)}}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "A/Relay", func(ctx context.Context, a num) (int, error) {
			tc, _ := rpc.TraceContextFrom(ctx)
			got <- seen{tc, trace.SpanContextFromContext(ctx)}
			var out int
			return out, clB.Invoke(ctx, "B/Twice", a, &out) // an argument object: it carries the trace context
		}))
	})
	var out int
	must(t, dial(t, addrA, rpc.ClientConfig{Log: quietLog()}).Invoke(testCtx(t), "A/Relay", num{N: 1}, &out))
	s := <-got
	if len(s.rpc.TraceID) != 32 || len(s.rpc.SpanID) != 16 || s.rpc.Flags != 0 {
		t.Errorf("the handler's rpc trace context %+v: want a W3C trace, unsampled", s.rpc)
	}
	if !s.otel.IsValid() || s.otel.IsSampled() || s.otel.TraceID().String() != s.rpc.TraceID {
		t.Errorf("the handler's span context %v: want the same trace, unsampled", s.otel)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans; want none (A drops the root, B follows its parent)", n)
	}
}

// A caller's sampled W3C trace context is traced at any ratio, an
// unsampled one at none, as ParentBased decides.
func TestSamplingFollowsTheCallersFlag(t *testing.T) {
	const traceID, spanID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	for _, c := range []struct {
		ratio float64
		flags string
		spans int
	}{{0, "01", 1}, {1, "00", 0}} {
		tp, rec := tracer(t)
		_, addr := echoServer(t, otel.ServerInterceptor(otel.WithTracerProvider(tp), otel.WithoutMetrics(), otel.WithSampling(c.ratio)))
		b0, p := rawCall(t, addr, rawBody("Echo/Say", `{"input":"x","traceparent":"00-`+traceID+`-`+spanID+`-`+c.flags+`"}`))
		if b0 != 0x81 {
			t.Fatalf("reply flag %#x payload %q", b0, p)
		}
		spans := rec.Ended()
		if len(spans) != c.spans {
			t.Fatalf("ratio %g, caller's flags %s: %d spans, want %d", c.ratio, c.flags, len(spans), c.spans)
		}
		if c.spans == 1 && (spans[0].Parent().SpanID().String() != spanID || !spans[0].SpanContext().IsSampled()) {
			t.Errorf("span parent %v: want the caller's %s", spans[0].Parent(), spanID)
		}
	}
}

// Root calls are kept at the ratio: 4,000 at 25 % within five standard
// deviations of 1,000.
func TestSamplingRatio(t *testing.T) {
	tp, rec := tracer(t)
	srv, err := rpc.NewServer(rpc.Config{Log: quietLog(), Interceptors: []rpc.Interceptor{
		otel.ServerInterceptor(otel.WithTracerProvider(tp), otel.WithoutMetrics(), otel.WithSampling(0.25))}})
	must(t, err)
	defer srv.Close()
	must(t, rpc.Handle(srv, "Bench/NoArg", func(context.Context, struct{}) (int32, error) { return 42, nil }))
	req := rawBody("Bench/NoArg", "")
	const n, p = 4000, 0.25
	for range n {
		if _, isErr, ok := srv.Process(context.Background(), req, nil); !ok || isErr {
			t.Fatal("no reply")
		}
	}
	got, sd := float64(len(rec.Ended())), math.Sqrt(n*p*(1-p))
	if math.Abs(got-n*p) > 5*sd {
		t.Errorf("%v spans of %d calls at %g; want %v ± %.0f", got, n, p, n*p, 5*sd)
	}
}

// A client's call WithSampling drops has no span and carries an
// unsampled trace context; one it keeps is traced by the provider.
func TestSamplingOnTheClient(t *testing.T) {
	got := make(chan rpc.TraceContext, 2)
	_, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "T/See", func(ctx context.Context, _ struct{}) (int, error) {
			tc, _ := rpc.TraceContextFrom(ctx)
			got <- tc
			return 1, nil
		}))
	})
	for _, c := range []struct {
		ratio float64
		spans int
		flags byte
	}{{0, 0, 0}, {1, 1, 1}} {
		tp, rec := tracer(t)
		cl := dial(t, addr, rpc.ClientConfig{Log: quietLog(), Interceptors: []rpc.Interceptor{
			otel.ClientInterceptor(otel.WithTracerProvider(tp), otel.WithoutMetrics(), otel.WithSampling(c.ratio))}})
		var r int
		must(t, cl.Invoke(testCtx(t), "T/See", struct{}{}, &r))
		tc := <-got
		if n := len(rec.Ended()); n != c.spans || tc.Flags != c.flags || len(tc.TraceID) != 32 {
			t.Errorf("ratio %g: %d client spans, the server saw %+v; want %d spans, flags %d", c.ratio, n, tc, c.spans, c.flags)
		}
	}
}
