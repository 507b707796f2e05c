package otel_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// echoServer serves Echo/Say (a string back), Echo/Deny (a 403) and
// Echo/Fail (a plain error: a 500) with the given interceptors.
func echoServer(t *testing.T, ics ...rpc.Interceptor) (*rpc.Server, string) {
	return startServer(t, rpc.Config{Interceptors: ics}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Echo/Say", func(_ context.Context, in string) (string, error) { return in, nil }))
		must(t, rpc.Handle(s, "Echo/Deny", func(context.Context, struct{}) (int, error) {
			return 0, &rpc.APIError{Code: rpc.CodeForbidden, Message: "no"}
		}))
		must(t, rpc.Handle(s, "Echo/Fail", func(context.Context, struct{}) (int, error) { return 0, errors.New("boom") }))
	})
}

// histPoint returns the data point of histogram m whose attributes have
// every entry of want.
func histPoint[N int64 | float64](t *testing.T, m metricdata.Metrics, want map[string]string) metricdata.HistogramDataPoint[N] {
	t.Helper()
	h, ok := m.Data.(metricdata.Histogram[N])
	if !ok {
		t.Fatalf("%s: data %T, want a histogram", m.Name, m.Data)
	}
	for _, dp := range h.DataPoints {
		if matches(dp.Attributes, want) {
			return dp
		}
	}
	var have []map[string]string
	for _, dp := range h.DataPoints {
		have = append(have, attrs(dp.Attributes))
	}
	t.Fatalf("%s: no point with %v; have %v", m.Name, want, have)
	return metricdata.HistogramDataPoint[N]{}
}

func TestServerMetrics(t *testing.T) {
	mp, r := meters(t)
	_, addr := echoServer(t, otel.ServerInterceptor(otel.WithMeterProvider(mp), otel.WithoutTraces()))
	cl := dial(t, addr, rpc.ClientConfig{})
	ctx := testCtx(t)
	var out string
	for range 3 {
		must(t, cl.Invoke(ctx, "Echo/Say", "hello", &out))
	}
	if err := cl.Invoke(ctx, "Echo/Deny", nil, nil); rpc.CodeOf(err) != 403 {
		t.Fatalf("Echo/Deny: %v", err)
	}
	if err := cl.Invoke(ctx, "Echo/Fail", nil, nil); rpc.CodeOf(err) != 500 {
		t.Fatalf("Echo/Fail: %v", err)
	}
	if err := cl.Invoke(ctx, "No/Such", nil, nil); rpc.CodeOf(err) != 404 {
		t.Fatalf("No/Such: %v", err)
	}

	ms := collect(t, r)
	dur, ok := ms["rpc.server.call.duration"]
	if !ok || dur.Unit != "s" {
		t.Fatalf("rpc.server.call.duration: %+v (have %d instruments)", dur, len(ms))
	}
	ok3 := histPoint[float64](t, dur, map[string]string{
		"rpc.system.name": "newlife", "rpc.method": "Echo/Say", "rpc.response.status_code": "0",
		"network.transport": "tcp", "network.protocol.name": "srmp",
	})
	if ok3.Count != 3 || ok3.Sum <= 0 || attrs(ok3.Attributes)["error.type"] != "" {
		t.Errorf("Echo/Say: count %d sum %g attrs %v", ok3.Count, ok3.Sum, attrs(ok3.Attributes))
	}
	for _, c := range []struct{ method, code string }{{"Echo/Deny", "403"}, {"Echo/Fail", "500"}, {otel.OtherMethod, "404"}} {
		dp := histPoint[float64](t, dur, map[string]string{"rpc.method": c.method, "rpc.response.status_code": c.code, "error.type": c.code})
		if dp.Count != 1 {
			t.Errorf("%s: count %d, want 1", c.method, dp.Count)
		}
	}
	req := histPoint[int64](t, ms["rpc.server.request.size"], map[string]string{"rpc.method": "Echo/Say"})
	resp := histPoint[int64](t, ms["rpc.server.response.size"], map[string]string{"rpc.method": "Echo/Say"})
	if req.Count != 3 || req.Sum != 3*int64(len("hello")) || resp.Count != 3 || resp.Sum != 3*int64(len("hello")) {
		t.Errorf("sizes: request count %d sum %d, response count %d sum %d; want 3 and 15 each", req.Count, req.Sum, resp.Count, resp.Sum)
	}
	if ms["rpc.server.request.size"].Unit != "By" {
		t.Errorf("request size unit %q", ms["rpc.server.request.size"].Unit)
	}
}

func TestClientMetrics(t *testing.T) {
	mp, r := meters(t)
	_, addr := echoServer(t)
	cl := dial(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{
		otel.ClientInterceptor(otel.WithMeterProvider(mp), otel.WithoutTraces(), otel.WithServerAddress(addr), otel.WithClientRequestSize()),
	}})
	ctx := testCtx(t)
	var out string
	for range 2 {
		must(t, cl.Invoke(ctx, "Echo/Say", "hi", &out))
	}
	if err := cl.Invoke(ctx, "Echo/Deny", nil, nil); rpc.CodeOf(err) != 403 {
		t.Fatalf("Echo/Deny: %v", err)
	}
	ms := collect(t, r)
	dur := ms["rpc.client.call.duration"]
	dp := histPoint[float64](t, dur, map[string]string{"rpc.system.name": "newlife", "rpc.method": "Echo/Say", "rpc.response.status_code": "0", "server.address": "127.0.0.1"})
	if dp.Count != 2 || attrs(dp.Attributes)["server.port"] == "" {
		t.Errorf("Echo/Say: count %d attrs %v", dp.Count, attrs(dp.Attributes))
	}
	if dp := histPoint[float64](t, dur, map[string]string{"rpc.method": "Echo/Deny", "error.type": "403"}); dp.Count != 1 {
		t.Errorf("Echo/Deny: count %d", dp.Count)
	}
	if dp := histPoint[int64](t, ms["rpc.client.response.size"], map[string]string{"rpc.method": "Echo/Say"}); dp.Count != 2 || dp.Sum != 4 {
		t.Errorf("response size: count %d sum %d, want 2 and 4", dp.Count, dp.Sum)
	}
	if dp := histPoint[int64](t, ms["rpc.client.request.size"], map[string]string{"rpc.method": "Echo/Say"}); dp.Count != 2 || dp.Sum != 4 {
		t.Errorf("request size: count %d sum %d, want 2 and 4", dp.Count, dp.Sum)
	}
}

// Without WithClientRequestSize a client records no request size (it
// would encode the arguments twice).
func TestClientRequestSizeOptIn(t *testing.T) {
	mp, r := meters(t)
	_, addr := echoServer(t)
	cl := dial(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{otel.ClientInterceptor(otel.WithMeterProvider(mp), otel.WithoutTraces())}})
	var out string
	must(t, cl.Invoke(testCtx(t), "Echo/Say", "hi", &out))
	ms := collect(t, r)
	if h, ok := ms["rpc.client.request.size"].Data.(metricdata.Histogram[int64]); ok && len(h.DataPoints) > 0 {
		t.Errorf("request size recorded without the option: %+v", h.DataPoints)
	}
}

// Past maxMethods attribute sets, new actions are recorded as _OTHER.
func TestMethodCardinalityBounded(t *testing.T) {
	mp, r := meters(t)
	ic := otel.ServerInterceptor(otel.WithMeterProvider(mp), otel.WithoutTraces())
	srv, err := rpc.NewServer(rpc.Config{Interceptors: []rpc.Interceptor{ic}, Log: quietLog()})
	must(t, err)
	defer srv.Close()
	must(t, rpc.Handle(srv, "*", func(context.Context, struct{}) (int, error) { return 1, nil }))
	for i := range 1100 {
		if _, _, ok := srv.Process(context.Background(), rawBody("A/"+itoa(i), ""), nil); !ok {
			t.Fatal("Process: no reply")
		}
	}
	h := collect(t, r)["rpc.server.call.duration"].Data.(metricdata.Histogram[float64])
	var other uint64
	for _, dp := range h.DataPoints {
		if attrs(dp.Attributes)["rpc.method"] == otel.OtherMethod {
			other += dp.Count
		}
	}
	if len(h.DataPoints) > 1025 || other < 1100-1024 {
		t.Errorf("%d points, %d calls as _OTHER", len(h.DataPoints), other)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
