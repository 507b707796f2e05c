package otel_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
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
	modeCallMetrics       // WithCallMetrics: lifenet's own histograms, produced at collection
	modeCallMetricsTraces // WithCallMetrics and traces at 1 %, the SDK's sampler deciding
	modeCallMetricsHead   // WithCallMetrics and traces at 1 %, WithSampling deciding: lifenet serve --metrics --traces 0.01
)

func benchOpts(b *testing.B, m benchMode) []otel.Option {
	mp, _ := meters(b)
	switch m {
	case modeMetrics:
		return []otel.Option{otel.WithMeterProvider(mp), otel.WithoutTraces()}
	case modeCallMetrics:
		return []otel.Option{otel.WithMeterProvider(mp), otel.WithCallMetrics(otel.NewCallMetrics()), otel.WithoutTraces()}
	case modeMetricsTraces:
		return []otel.Option{otel.WithMeterProvider(mp), otel.WithTracerProvider(sampled(b))}
	case modeCallMetricsTraces:
		return []otel.Option{otel.WithMeterProvider(mp), otel.WithCallMetrics(otel.NewCallMetrics()), otel.WithTracerProvider(sampled(b))}
	case modeCallMetricsHead:
		tp := sdktrace.NewTracerProvider()
		b.Cleanup(func() { tp.Shutdown(context.Background()) })
		return []otel.Option{otel.WithMeterProvider(mp), otel.WithCallMetrics(otel.NewCallMetrics()), otel.WithTracerProvider(tp), otel.WithSampling(0.01)}
	}
	return nil
}

// sampled is a tracer provider sampling parent-based at 1 %, exporting nothing.
func sampled(b *testing.B) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.01))))
	b.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp
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
func BenchmarkCallHeadSampled(b *testing.B)   { benchCall(b, modeCallMetricsHead) }

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

// BenchmarkServe is the server's cost per call over loopback TCP under
// the plainest caller (one request frame written, its reply frame read):
// the shape of docs/perf/observability.md's timed table in one process,
// so that scripts/instrs.sh counts the server's user-space instructions
// (the caller's are the same in every mode). The modes are lifenet
// serve's: nothing, --metrics (CallMetrics), --metrics --traces 0.01
// (WithSampling), and the last with the SDK's sampler deciding instead.
func BenchmarkServe(b *testing.B) {
	for _, m := range []struct {
		name string
		mode benchMode
	}{{"plain", modePlain}, {"callmetrics", modeCallMetrics}, {"traces", modeCallMetricsHead}, {"traces-sdk", modeCallMetricsTraces}} {
		b.Run("mode="+m.name, func(b *testing.B) { benchServe(b, m.mode) })
	}
}

func benchServe(b *testing.B, m benchMode) {
	var cfg rpc.Config
	switch m {
	case modeCallMetrics: // as lifenet serve --metrics: the hook
		mp, _ := meters(b)
		cfg.OnCallDone = otel.ServerCallDone(otel.WithMeterProvider(mp), otel.WithCallMetrics(otel.NewCallMetrics()))
	case modeCallMetricsHead: // as lifenet serve --metrics --traces 0.01: the hook, and the interceptor for traces
		mp, _ := meters(b)
		cfg.OnCallDone = otel.ServerCallDone(otel.WithMeterProvider(mp), otel.WithCallMetrics(otel.NewCallMetrics()))
		cfg.Interceptors = []rpc.Interceptor{otel.ServerInterceptor(append(benchOpts(b, m), otel.WithoutMetrics())...)}
	case modeCallMetricsTraces: // the interceptor alone, the SDK's sampler deciding
		cfg.Interceptors = []rpc.Interceptor{otel.ServerInterceptor(benchOpts(b, m)...)}
	}
	_, addr := startServer(b, cfg, func(s *rpc.Server) {
		must(b, rpc.Handle(s, "Bench/NoArg", func(context.Context, struct{}) (int32, error) { return 42, nil }, rpc.WithInline()))
	})
	c, err := net.Dial("tcp", addr)
	must(b, err)
	defer c.Close()
	req := srmp(0x01, 1, rawBody("Bench/NoArg", ""))
	reply := make([]byte, 256)
	call := func() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply[:4]); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply[:binary.LittleEndian.Uint16(reply[2:4])]); err != nil {
			b.Fatal(err)
		}
	}
	call()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		call()
	}
}
