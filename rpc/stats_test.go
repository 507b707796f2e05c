package rpc_test

import (
	"context"
	"net"
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
