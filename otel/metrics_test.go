package otel_test

import (
	"context"
	"errors"
	"maps"
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

// Past maxMethods attribute sets, a new set's calls count in one overflow
// set (rpc.method _OTHER, otel.metric.overflow true), however the sets
// grow: here by the codes a handler answers, which a client's metrics of
// a hostile server would see too. Both the MeterProvider's histograms and
// CallMetrics keep the bound.
func TestAttributeSetsBounded(t *testing.T) {
	for _, mode := range []string{"instruments", "callmetrics"} {
		t.Run(mode, func(t *testing.T) {
			mp, r := meters(t)
			opts := []otel.Option{otel.WithMeterProvider(mp), otel.WithoutTraces()}
			if mode == "callmetrics" {
				var cm *otel.CallMetrics
				cm, r = callMetrics(t)
				opts = append(opts, otel.WithCallMetrics(cm))
			}
			srv, err := rpc.NewServer(rpc.Config{Interceptors: []rpc.Interceptor{otel.ServerInterceptor(opts...)}, Log: quietLog()})
			must(t, err)
			defer srv.Close()
			n := 0
			must(t, rpc.Handle(srv, "*", func(context.Context, struct{}) (int, error) {
				n++ // Process runs the calls one at a time
				return 0, rpc.NewError(1000+n, "made up")
			}))
			for range 1100 {
				if _, _, ok := srv.Process(context.Background(), rawBody("A/b", ""), nil); !ok {
					t.Fatal("Process: no reply")
				}
			}
			h := collect(t, r)["rpc.server.call.duration"].Data.(metricdata.Histogram[float64])
			var over, total uint64
			for _, dp := range h.DataPoints {
				total += dp.Count
				if a := attrs(dp.Attributes); a["otel.metric.overflow"] == "true" {
					over += dp.Count
					if a["rpc.method"] != otel.OtherMethod || a["rpc.response.status_code"] != "" {
						t.Errorf("the overflow set's attributes: %v", a)
					}
				}
			}
			if len(h.DataPoints) != 1025 || over != 1100-1024 || total != 1100 {
				t.Errorf("%d points, %d of %d calls in the overflow set; want 1025 points, 76 calls", len(h.DataPoints), over, total)
			}
		})
	}
}

// A server's rpc.method is the action's registered name, however the
// caller spelled it, and _OTHER for an unknown action even when an
// interceptor after this one refuses it before its 404: the names a
// caller makes up never become series.
func TestServerMethodIsTheRegisteredName(t *testing.T) {
	cm, r := callMetrics(t)
	limit := func(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
		if c.Registered() == "" {
			return rpc.NewError(rpc.CodeTooManyRequests, "slow down")
		}
		return next(ctx, c)
	}
	_, addr := echoServer(t, otel.ServerInterceptor(otel.WithCallMetrics(cm), otel.WithoutTraces()), limit)
	cl := dial(t, addr, rpc.ClientConfig{})
	ctx := testCtx(t)
	var out string
	for _, name := range []string{"Echo/Say", "echo/say", "ECHO/SAY"} {
		must(t, cl.Invoke(ctx, name, "x", &out))
	}
	for i := range 3 {
		if err := cl.Invoke(ctx, "Made/Up"+itoa(i), nil, nil); rpc.CodeOf(err) != rpc.CodeTooManyRequests {
			t.Fatalf("Made/Up%d: %v, want the limiter's 429", i, err)
		}
	}
	got := map[string]uint64{}
	for _, dp := range collect(t, r)["rpc.server.call.duration"].Data.(metricdata.Histogram[float64]).DataPoints {
		a := attrs(dp.Attributes)
		got[a["rpc.method"]+" "+a["rpc.response.status_code"]] += dp.Count
	}
	if want := map[string]uint64{"Echo/Say 0": 3, otel.OtherMethod + " 429": 3}; !maps.Equal(got, want) {
		t.Errorf("series %v, want %v", got, want)
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
