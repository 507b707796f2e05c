package otel_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// callMetrics returns a CallMetrics and a manual reader that collects it.
func callMetrics(t testing.TB) (*otel.CallMetrics, *sdkmetric.ManualReader) {
	cm := otel.NewCallMetrics()
	r := sdkmetric.NewManualReader(sdkmetric.WithProducer(cm))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return cm, r
}

// histShape is what two histograms of the same calls share whatever the
// clock said: per attribute set, the count, and for sizes the buckets and
// sum too.
func histShape(m metricdata.Metrics) []string {
	var out []string
	add := func(a map[string]string, count uint64, rest string) {
		keys := make([]string, 0, len(a))
		for k := range a {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		s := ""
		for _, k := range keys {
			s += k + "=" + a[k] + " "
		}
		out = append(out, fmt.Sprintf("%s%s %s count=%d %s", s, m.Name, m.Unit, count, rest))
	}
	switch h := m.Data.(type) {
	case metricdata.Histogram[float64]:
		for _, dp := range h.DataPoints {
			add(attrs(dp.Attributes), dp.Count, fmt.Sprint(len(dp.Bounds), h.Temporality))
		}
	case metricdata.Histogram[int64]:
		for _, dp := range h.DataPoints {
			add(attrs(dp.Attributes), dp.Count, fmt.Sprint(dp.Bounds, dp.BucketCounts, dp.Sum, h.Temporality))
		}
	}
	sort.Strings(out)
	return out
}

// TestCallMetricsMatchTheInstruments: the same calls, measured once by the
// MeterProvider's histograms and once WithCallMetrics, give the same
// metrics: names, units, attribute sets, counts, size buckets and sums, on
// the server and on the client.
func TestCallMetricsMatchTheInstruments(t *testing.T) {
	mp, sdkReader := meters(t)
	cm, cmReader := callMetrics(t)
	run := func(opts ...otel.Option) {
		opts = append(opts, otel.WithoutTraces())
		_, addr := echoServer(t, otel.ServerInterceptor(opts...))
		cl := dial(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{
			otel.ClientInterceptor(append(opts, otel.WithClientRequestSize())...),
		}})
		ctx := testCtx(t)
		var out string
		for i := range 5 {
			must(t, cl.Invoke(ctx, "Echo/Say", fmt.Sprint("hello", i*100), &out))
		}
		cl.Invoke(ctx, "Echo/Deny", nil, nil)
		cl.Invoke(ctx, "Echo/Fail", nil, nil)
		cl.Invoke(ctx, "No/Such", nil, nil)
	}
	run(otel.WithMeterProvider(mp))
	run(otel.WithMeterProvider(mp), otel.WithCallMetrics(cm))

	want, got := collect(t, sdkReader), collect(t, cmReader)
	names := []string{"rpc.server.call.duration", "rpc.server.request.size", "rpc.server.response.size",
		"rpc.client.call.duration", "rpc.client.request.size", "rpc.client.response.size"}
	for _, name := range names {
		w, g := histShape(want[name]), histShape(got[name])
		if len(w) == 0 || fmt.Sprint(w) != fmt.Sprint(g) {
			t.Errorf("%s:\n MeterProvider %q\n CallMetrics   %q", name, w, g)
		}
		if got[name].Description != want[name].Description {
			t.Errorf("%s: description %q, want %q", name, got[name].Description, want[name].Description)
		}
	}
	if len(got) != len(names) {
		t.Errorf("CallMetrics produced %d metrics, want %d", len(got), len(names))
	}
	dur := histPoint[float64](t, got["rpc.server.call.duration"], map[string]string{"rpc.method": "Echo/Say"})
	if dur.Sum <= 0 || dur.StartTime.IsZero() || !dur.Time.After(dur.StartTime) {
		t.Errorf("Echo/Say duration: sum %g, start %v, time %v", dur.Sum, dur.StartTime, dur.Time)
	}
}

// TestCallMetricsCollectWhileCalling: collections racing calls on several
// connections (run with -race) see counts that only grow and end at the
// number of calls made.
func TestCallMetricsCollectWhileCalling(t *testing.T) {
	cm, r := callMetrics(t)
	_, addr := echoServer(t, otel.ServerInterceptor(otel.WithCallMetrics(cm), otel.WithoutTraces()))
	const conns, calls = 4, 50
	var wg sync.WaitGroup
	for range conns {
		cl := dial(t, addr, rpc.ClientConfig{})
		wg.Go(func() {
			var out string
			for range calls {
				if err := cl.Invoke(testCtx(t), "Echo/Say", "x", &out); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	count := func() uint64 {
		ms := collect(t, r)
		h, _ := ms["rpc.server.call.duration"].Data.(metricdata.Histogram[float64])
		var n uint64
		for _, dp := range h.DataPoints {
			var b uint64
			for _, c := range dp.BucketCounts {
				b += c
			}
			if b != dp.Count {
				t.Fatalf("a point's buckets hold %d calls, its count %d", b, dp.Count)
			}
			n += dp.Count
		}
		return n
	}
	var last uint64
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		n := count()
		if n < last {
			t.Fatalf("the count went from %d to %d", last, n)
		}
		last = n
	}
	if n := count(); n != conns*calls {
		t.Errorf("%d calls counted, want %d", n, conns*calls)
	}
}

// TestCallMetricsKeepOneSeriesPerAttributeSet: calls of one action that
// differ only in what the attributes do not say (a unary call and a
// one-way call) count in one series, on the server and on the client, as
// the MeterProvider's histograms count them; two points with the same
// attributes would be one Prometheus series scraped twice, the second
// sample dropped.
func TestCallMetricsKeepOneSeriesPerAttributeSet(t *testing.T) {
	cm, r := callMetrics(t)
	_, addr := startServer(t, rpc.Config{Interceptors: []rpc.Interceptor{otel.ServerInterceptor(otel.WithoutTraces(), otel.WithCallMetrics(cm))}}, func(s *rpc.Server) {
		// Inline: the session's calls run one after another, so the one-way
		// call has been counted when the next call's reply comes.
		must(t, rpc.Handle(s, "Echo/Note", func(_ context.Context, in string) (string, error) { return in, nil }, rpc.WithInline()))
	})
	cl := dial(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{otel.ClientInterceptor(otel.WithoutTraces(), otel.WithCallMetrics(cm))}})
	ctx := testCtx(t)
	var out string
	must(t, cl.Invoke(ctx, "Echo/Note", "a", &out))
	must(t, cl.InvokeOneWay(ctx, "Echo/Note", "b"))
	must(t, cl.Invoke(ctx, "Echo/Note", "c", &out))

	got := collect(t, r)
	for _, name := range []string{"rpc.server.call.duration", "rpc.client.call.duration"} {
		h, ok := got[name].Data.(metricdata.Histogram[float64])
		if !ok {
			t.Fatalf("no %s histogram", name)
		}
		var points []string
		var count uint64
		for _, dp := range h.DataPoints {
			points = append(points, dp.Attributes.Encoded(attribute.DefaultEncoder()))
			count += dp.Count
		}
		if len(points) != 1 || count != 3 {
			t.Errorf("%s: %d calls in %d points, want 3 in one: %q", name, count, len(points), points)
		}
	}
}

// Hooks and interceptors sharing one CallMetrics share its series: two
// servers' hooks, and two clients of one service, count calls of the same
// attributes in one data point (two would fail a Prometheus scrape: the
// same series collected twice), and a client that does not measure
// request sizes adds none to the one that does.
func TestCallMetricsSharedKeepOneSeriesPerAttributeSet(t *testing.T) {
	cm, r := callMetrics(t)
	ev := rpc.CallEvent{Action: "A/B", Kind: rpc.KindUnary, Duration: time.Millisecond, Request: 3, Response: 3}
	for range 2 {
		otel.ServerCallDone(otel.WithCallMetrics(cm))(ev)
	}
	_, addr := echoServer(t)
	ctx := testCtx(t)
	for _, opts := range [][]otel.Option{{otel.WithClientRequestSize()}, nil} {
		opts = append(opts, otel.WithCallMetrics(cm), otel.WithoutTraces(), otel.WithServerAddress("echo:1"))
		cl := dial(t, addr, rpc.ClientConfig{Interceptors: []rpc.Interceptor{otel.ClientInterceptor(opts...)}})
		var out string
		must(t, cl.Invoke(ctx, "Echo/Say", "x", &out))
	}
	got := collect(t, r)
	for name, want := range map[string]uint64{"rpc.server.call.duration": 2, "rpc.client.call.duration": 2, "rpc.client.request.size": 1} {
		var counts []uint64
		switch h := got[name].Data.(type) {
		case metricdata.Histogram[float64]:
			for _, dp := range h.DataPoints {
				counts = append(counts, dp.Count)
			}
		case metricdata.Histogram[int64]:
			for _, dp := range h.DataPoints {
				counts = append(counts, dp.Count)
			}
		}
		if len(counts) != 1 || counts[0] != want {
			t.Errorf("%s: points of %v calls, want one of %d", name, counts, want)
		}
	}
}
