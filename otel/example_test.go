package otel_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// A server's call metrics from its OnCallDone hook into a CallMetrics,
// collected by a reader (a Prometheus exporter takes it the same way:
// prometheus.WithProducer), and its traces from the interceptor, head
// sampled at 1 %.
func Example_serverMetricsAndTraces() {
	calls := otel.NewCallMetrics()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(calls))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tp := sdktrace.NewTracerProvider() // its default sampler keeps what WithSampling hands it
	srv, err := rpc.NewServer(rpc.Config{
		OnCallDone:   otel.ServerCallDone(otel.WithMeterProvider(mp), otel.WithCallMetrics(calls)),
		Interceptors: []rpc.Interceptor{otel.ServerInterceptor(otel.WithoutMetrics(), otel.WithTracerProvider(tp), otel.WithSampling(0.01))},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rpc.Handle(srv, "Demo/Add", func(_ context.Context, a struct{ X, Y int }) (int, error) { return a.X + a.Y, nil })

	body, _ := rpc.AppendRequest(nil, "Demo/Add", map[string]int{"x": 1, "y": 2})
	srv.Process(context.Background(), body, nil)

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				fmt.Println(m.Name, h.DataPoints[0].Count)
			}
		}
	}
	// Output: rpc.server.call.duration 1
}
