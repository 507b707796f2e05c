package rpc_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// The client's Stats show a call in flight while it waits and none after;
// the server's Transport counts a connection it closed for a broken frame.
func TestClientInFlightAndServerCloseReasons(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	srv, err := rpc.NewServer(rpc.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	if err := rpc.Handle(srv, "Test/Hold", func(context.Context, int) (int, error) {
		close(entered)
		<-release
		return 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	addr, err := srv.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := rpc.Dial(ctx, "tcp://"+addr.String(), rpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	done := make(chan error, 1)
	go func() { _, err := rpc.Call[int](ctx, cl, "Test/Hold", 0); done <- err }()
	<-entered
	if got := cl.Stats().InFlight; got != 1 {
		t.Fatalf("in flight while the call waits: %d", got)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := cl.Stats(); got.InFlight != 0 || got.Unknown != 0 || got.TimedOut != 0 {
		t.Fatalf("after the call: %+v", got)
	}

	raw, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.Write([]byte{0x01, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}) // an SRMP request declaring 2³¹−1 bytes
	testwait.For(t, 10*time.Second, "one protocol close", func() bool {
		return srv.Transport().Stats().Closed[transport.ReasonProtocol] == 1
	})
}

// Stats.InFlight counts the calls running now: on goroutines of their
// own and on the reading goroutine (an Inline action); none once they end.
func TestServerStatsInFlight(t *testing.T) {
	spawned, inline := newGate(t, 1), newGate(t, 1)
	srv, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Test/Spawned", func(ctx context.Context, _ struct{}) (int, error) { return 1, spawned.wait(ctx) }))
		must(t, rpc.Handle(s, "Test/Inline", func(ctx context.Context, _ struct{}) (int, error) { return 2, inline.wait(ctx) }, rpc.WithInline()))
	})
	if n := srv.Stats().InFlight; n != 0 {
		t.Fatalf("InFlight %d before any call", n)
	}
	cl := dialClient(t, addr, rpc.ClientConfig{Log: quietLog()})
	cl2 := dialClient(t, addr, rpc.ClientConfig{Log: quietLog()}) // the inline call holds its connection's reading goroutine
	done := make(chan error, 2)
	go func() { _, err := rpc.Call[int](testCtx(t), cl, "Test/Spawned", nil); done <- err }()
	recv(t, spawned.entered, "the spawned call")
	if n := srv.Stats().InFlight; n != 1 {
		t.Errorf("InFlight %d with a spawned call running, want 1", n)
	}
	go func() { _, err := rpc.Call[int](testCtx(t), cl2, "Test/Inline", nil); done <- err }()
	recv(t, inline.entered, "the inline call")
	if n := srv.Stats().InFlight; n != 2 {
		t.Errorf("InFlight %d with an inline call running too, want 2", n)
	}
	spawned.open()
	inline.open()
	for range 2 {
		must(t, recv(t, done, "a call's end"))
	}
	waitFor(t, "no calls in flight", func() bool { return srv.Stats().InFlight == 0 })
}

// Stats.PartialBytes shows the bytes of a frame begun and not finished,
// until its connection ends.
func TestServerStatsPartialBytes(t *testing.T) {
	srv, addr := startServer(t, rpc.Config{NoHTTP: true, NoWebSocket: true}, nil)
	rc := dialRaw(t, addr)
	rc.write(append([]byte{b0Request, 1, 0xE8, 0x03}, make([]byte, 100)...)) // 100 of a frame's 1,000 bytes
	waitFor(t, "the partial frame counted", func() bool { return srv.Stats().PartialBytes >= 100 })
	rc.c.Close()
	waitFor(t, "the partial frame given back", func() bool { return srv.Stats().PartialBytes == 0 })
}

// Stats.ByProtocol counts the open sessions by what they speak: an SRMP
// client's, an HTTP client's kept-alive connection, and a connection that
// has sent nothing yet (index 0).
func TestServerStatsByProtocol(t *testing.T) {
	srv, addr := startServer(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Test/One", func(context.Context, struct{}) (int, error) { return 1, nil }))
	})
	cl := dialClient(t, addr, rpc.ClientConfig{Log: quietLog()})
	if _, err := rpc.Call[int](testCtx(t), cl, "Test/One", struct{}{}); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://" + addr + "/Test/One")
	must(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	silent, err := net.Dial("tcp", addr)
	must(t, err)
	defer silent.Close()
	want := [rpc.ProtoUDP + 1]int{0: 1, rpc.ProtoSRMP: 1, rpc.ProtoHTTP: 1}
	testwait.For(t, 10*time.Second, "sessions by protocol", func() bool { return srv.Stats().ByProtocol == want })
}
