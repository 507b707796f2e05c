package otel_test

import (
	"context"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
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

// The transport's state now: UDP peers, the receive buffers held, and the
// send queue of a peer that does not read.
func TestObserveServerQueuesAndPeers(t *testing.T) {
	mp, r := meters(t)
	srv, addr := startServer(t, rpc.Config{Transport: transport.Config{
		SocketSendBuffer: 64 << 10, SendStallTimeout: -1, WriteTimeout: -1, UDPReadBatch: 1,
	}}, nil)
	udp, err := srv.Listen(context.Background(), "udp", "127.0.0.1:0")
	must(t, err)
	reg, err := otel.ObserveServer(srv, mp)
	must(t, err)
	defer reg.Unregister()

	c, err := net.Dial("tcp", addr) // never reads
	must(t, err)
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	u, err := net.Dial("udp", udp.String())
	must(t, err)
	defer u.Close()
	u.Write(srmp(0x01, 1, rawBody("", ""))) // dropped, but its peer has a session
	deadline := time.Now().Add(testTimeout)
	for srv.Transport().Stats().Active != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the connection and the UDP peer did not open")
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.Transport().Range(func(s *transport.Session) bool {
		if !s.Datagram() {
			for range 4 {
				must(t, s.EnqueueBytes(make([]byte, 1<<20)))
			}
		}
		return true
	})
	var ms map[string]metricdata.Metrics
	for {
		ms = collect(t, r)
		if sumPoints(t, ms["lifenet.server.send_queue.usage"], nil) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := sumPoints(t, ms["lifenet.server.send_queue.usage"], nil); n <= 0 || n > 4<<20 {
		t.Errorf("send_queue.usage %d, want some of the 4 MiB a peer that does not read left unwritten", n)
	}
	if n := sumPoints(t, ms["lifenet.server.send_queue.messages"], nil); n < 0 || n > 4 {
		t.Errorf("send_queue.messages %d, want 0 to 4", n)
	}
	if n := sumPoints(t, ms["lifenet.server.send_queue.waiting"], nil); n != 0 {
		t.Errorf("send_queue.waiting %d: Enqueue never waits", n)
	}
	if n := sumPoints(t, ms["lifenet.server.udp.peers"], nil); n != 1 {
		t.Errorf("udp.peers %d, want 1", n)
	}
	// The UDP socket's 64 KiB slot, and the TCP connection's read buffer
	// unless its session has parked (a parked session holds none).
	if n, want := sumPoints(t, ms["lifenet.server.read_buffer.usage"], nil), srv.Transport().Stats().ReadBufferBytes; n != want || n < 64<<10 {
		t.Errorf("read_buffer.usage %d, want the transport's %d: the UDP slot and, unless it parked, a connection's buffer", n, want)
	}
}

// The server's calls in flight and the bytes of its partial frames, now.
func TestObserveServerInFlightAndPartialFrames(t *testing.T) {
	mp, r := meters(t)
	entered, block := make(chan struct{}), make(chan struct{})
	srv, addr := startServer(t, rpc.Config{NoHTTP: true, NoWebSocket: true}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Slow/Wait", func(context.Context, struct{}) (int, error) { close(entered); <-block; return 1, nil }))
	})
	reg, err := otel.ObserveServer(srv, mp)
	must(t, err)
	defer reg.Unregister()
	cl := dial(t, addr, rpc.ClientConfig{})
	done := make(chan error, 1)
	go func() { done <- cl.Invoke(testCtx(t), "Slow/Wait", nil, nil) }()
	<-entered
	raw, err := net.Dial("tcp", addr)
	must(t, err)
	defer raw.Close()
	raw.Write(append([]byte{0x01, 1, 0xE8, 0x03}, make([]byte, 100)...)) // 100 of a frame's 1,000 bytes
	deadline := time.Now().Add(testTimeout)
	for {
		ms := collect(t, r)
		flight := sumPoints(t, ms["lifenet.server.calls.in_flight"], nil)
		partial := sumPoints(t, ms["lifenet.server.frames.partial.usage"], nil)
		if flight == 1 && partial >= 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls in flight %d, partial bytes %d: want 1 and ≥ 100", flight, partial)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(block)
	must(t, <-done)
	raw.Close()
	for {
		ms := collect(t, r)
		flight := sumPoints(t, ms["lifenet.server.calls.in_flight"], nil)
		partial := sumPoints(t, ms["lifenet.server.frames.partial.usage"], nil)
		if flight == 0 && partial == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the call and the connection: in flight %d, partial bytes %d", flight, partial)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
