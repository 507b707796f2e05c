package otel_test

import (
	"context"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

func sumPoints(t *testing.T, m metricdata.Metrics, want map[string]string) int64 {
	t.Helper()
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s: data %T, want a sum", m.Name, m.Data)
	}
	var n int64
	for _, dp := range s.DataPoints {
		if matches(dp.Attributes, want) {
			n += dp.Value
		}
	}
	return n
}

func TestObserveServer(t *testing.T) {
	mp, r := meters(t)
	srv, addr := echoServer(t)
	reg, err := otel.ObserveServer(srv, mp)
	must(t, err)
	defer reg.Unregister()
	cl := dial(t, addr, rpc.ClientConfig{})
	var out string
	must(t, cl.Invoke(testCtx(t), "Echo/Say", "hello", &out))
	// A raw connection that sends a frame with an empty action (dropped),
	// then closes: the server counts it closed by the peer.
	c, err := net.Dial("tcp", addr)
	must(t, err)
	c.Write(srmp(0x01, 1, rawBody("", "")))
	time.Sleep(50 * time.Millisecond)
	c.Close()

	var ms map[string]metricdata.Metrics
	deadline := time.Now().Add(testTimeout)
	for {
		ms = collect(t, r)
		if sumPoints(t, ms["lifenet.server.sessions.closed"], map[string]string{"lifenet.close.reason": "peer closed"}) >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range []struct {
		name string
		attr map[string]string
		min  int64
	}{
		{"lifenet.server.sessions", nil, 1},
		{"lifenet.server.sessions.max", nil, 2},
		{"lifenet.server.sessions.accepted", nil, 2},
		{"lifenet.server.sessions.closed", map[string]string{"lifenet.close.reason": "peer closed"}, 1},
		{"lifenet.server.io", map[string]string{"network.io.direction": "receive"}, 10},
		{"lifenet.server.io", map[string]string{"network.io.direction": "transmit"}, 10},
		{"lifenet.server.messages", map[string]string{"network.io.direction": "receive"}, 2},
		{"lifenet.server.requests.dropped", nil, 1},
		{"lifenet.server.panics", nil, 0},
		{"lifenet.server.datagrams.dropped", nil, 0},
		{"lifenet.server.send_queue.overflows", nil, 0},
	} {
		m, ok := ms[c.name]
		if !ok {
			t.Errorf("%s: not collected", c.name)
			continue
		}
		if n := sumPoints(t, m, c.attr); n < c.min {
			t.Errorf("%s %v = %d, want ≥ %d", c.name, c.attr, n, c.min)
		}
	}
}

func TestObserveClient(t *testing.T) {
	mp, r := meters(t)
	block := make(chan struct{})
	_, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Slow/Wait", func(context.Context, struct{}) (int, error) { <-block; return 1, nil }))
	})
	cl := dial(t, addr, rpc.ClientConfig{})
	reg, err := otel.ObserveClient(cl, mp)
	must(t, err)
	defer reg.Unregister()
	done := make(chan error, 1)
	go func() { done <- cl.Invoke(testCtx(t), "Slow/Wait", nil, nil) }()
	deadline := time.Now().Add(testTimeout)
	for sumPoints(t, collect(t, r)["lifenet.client.calls.in_flight"], nil) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("in-flight call not observed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(block)
	must(t, <-done)
	ms := collect(t, r)
	if n := sumPoints(t, ms["lifenet.client.calls.in_flight"], nil); n != 0 {
		t.Errorf("in flight after the call: %d", n)
	}
	for _, name := range []string{"lifenet.client.calls.timed_out", "lifenet.client.replies.unmatched"} {
		if _, ok := ms[name]; !ok {
			t.Errorf("%s: not collected", name)
		}
	}
}
