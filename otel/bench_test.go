package otel_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// The cost of the interceptors (issue 28 part 4 measures it across
// processes): a call to an inline action over loopback, one caller,
// without them, with metrics on both sides, and with metrics and traces
// (parent-based sampling at 1 %, the figure the issue sets). ReportAllocs
// counts both sides: the server's and the client's allocations per call.
// The Process benchmarks are the server alone (no sockets).

type benchMode int

const (
	modePlain benchMode = iota
	modeMetrics
	modeMetricsTraces
	modeCallMetrics // WithCallMetrics: lifenet's own histograms, produced at collection
)

func benchOpts(b *testing.B, m benchMode) []otel.Option {
	mp, _ := meters(b)
	switch m {
	case modeMetrics:
		return []otel.Option{otel.WithMeterProvider(mp), otel.WithoutTraces()}
	case modeCallMetrics:
		return []otel.Option{otel.WithMeterProvider(mp), otel.WithCallMetrics(otel.NewCallMetrics()), otel.WithoutTraces()}
	case modeMetricsTraces:
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))))
		b.Cleanup(func() { tp.Shutdown(context.Background()) })
		return []otel.Option{otel.WithMeterProvider(mp), otel.WithTracerProvider(tp)}
	}
	return nil
}

func benchCall(b *testing.B, m benchMode) {
	opts := benchOpts(b, m)
	var scfg rpc.Config
	var ccfg rpc.ClientConfig
	if m != modePlain {
		scfg.Interceptors = []rpc.Interceptor{otel.ServerInterceptor(opts...)}
		ccfg.Interceptors = []rpc.Interceptor{otel.ClientInterceptor(opts...)}
	}
	_, addr := startServer(b, scfg, func(s *rpc.Server) {
		must(b, rpc.Handle(s, "Bench/NoArg", func(context.Context, struct{}) (int32, error) { return 42, nil }, rpc.WithInline()))
	})
	cl := dial(b, addr, ccfg)
	ctx := context.Background()
	var r int32
	must(b, cl.Invoke(ctx, "Bench/NoArg", nil, &r))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := cl.Invoke(ctx, "Bench/NoArg", nil, &r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallPlain(b *testing.B)         { benchCall(b, modePlain) }
func BenchmarkCallMetrics(b *testing.B)       { benchCall(b, modeMetrics) }
func BenchmarkCallMetricsTraces(b *testing.B) { benchCall(b, modeMetricsTraces) }
func BenchmarkCallCallMetrics(b *testing.B)   { benchCall(b, modeCallMetrics) }

func benchProcess(b *testing.B, m benchMode) {
	opts := benchOpts(b, m)
	var cfg rpc.Config
	if m != modePlain {
		cfg.Interceptors = []rpc.Interceptor{otel.ServerInterceptor(opts...)}
	}
	cfg.Log = quietLog()
	srv, err := rpc.NewServer(cfg)
	must(b, err)
	defer srv.Close()
	must(b, rpc.Handle(srv, "Bench/NoArg", func(context.Context, struct{}) (int32, error) { return 42, nil }, rpc.WithInline()))
	req := rawBody("Bench/NoArg", "")
	dst := make([]byte, 0, 256)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := srv.Process(ctx, req, dst[:0]); !ok {
			b.Fatal("no reply")
		}
	}
}

func BenchmarkProcessPlain(b *testing.B)         { benchProcess(b, modePlain) }
func BenchmarkProcessMetrics(b *testing.B)       { benchProcess(b, modeMetrics) }
func BenchmarkProcessMetricsTraces(b *testing.B) { benchProcess(b, modeMetricsTraces) }
func BenchmarkProcessCallMetrics(b *testing.B)   { benchProcess(b, modeCallMetrics) }
