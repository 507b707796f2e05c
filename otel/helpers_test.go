package otel_test

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lifenet/lifenet/rpc"
)

const testTimeout = 5 * time.Second

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startServer makes a server with cfg, lets setup register actions,
// listens on 127.0.0.1:0 and closes the server when the test ends.
func startServer(t testing.TB, cfg rpc.Config, setup func(*rpc.Server)) (*rpc.Server, string) {
	t.Helper()
	if cfg.Log == nil {
		cfg.Log = quietLog()
	}
	srv, err := rpc.NewServer(cfg)
	must(t, err)
	if setup != nil {
		setup(srv)
	}
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv, a.String()
}

func dial(t testing.TB, addr string, cfg rpc.ClientConfig) *rpc.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cl, err := rpc.Dial(ctx, addr, cfg)
	must(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// meters returns a meter provider and its manual reader.
func meters(t testing.TB) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return mp, r
}

// tracer returns a tracer provider recording every span in memory.
func tracer(t testing.TB) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp, rec
}

func collect(t testing.TB, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	must(t, r.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// attrs renders an attribute set as a map.
func attrs(s attribute.Set) map[string]string {
	m := map[string]string{}
	for _, kv := range s.ToSlice() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// matches reports whether s has every entry of want.
func matches(s attribute.Set, want map[string]string) bool {
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// rawBody is a request body with data as it is, as a NewLife client
// writes it.
func rawBody(action, data string) []byte {
	b := append([]byte{byte(len(action))}, action...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}

// srmp frames payload as an SRMP message with flag byte b0 and seq.
func srmp(b0, seq byte, payload []byte) []byte {
	f := []byte{b0, seq, 0, 0}
	binary.LittleEndian.PutUint16(f[2:], uint16(len(payload)))
	return append(f, payload...)
}

// rawCall sends one hand-built SRMP request over a new TCP connection
// and returns the reply's flag byte and payload.
func rawCall(t *testing.T, addr string, body []byte) (byte, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	must(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	_, err = c.Write(srmp(0x01, 1, body))
	must(t, err)
	var h [4]byte
	_, err = io.ReadFull(c, h[:])
	must(t, err)
	p := make([]byte, binary.LittleEndian.Uint16(h[2:]))
	_, err = io.ReadFull(c, p)
	must(t, err)
	return h[0], p
}
