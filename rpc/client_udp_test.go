package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// Over udp://, a call whose request does not fit a datagram fails alone
// with ErrDatagramTooLarge; the other calls in flight on the connection
// carry on.
func TestUDPOversizeRequestFailsAlone(t *testing.T) {
	g := newGate(t, 1)
	_, addr := startServerUDP(t, rpc.Config{}, func(s *rpc.Server) {
		must(t, rpc.Handle(s, "Slow/Wait", func(ctx context.Context, _ struct{}) (int, error) {
			return 7, g.wait(ctx)
		}))
		must(t, rpc.Handle(s, "Bench/EchoPacket", func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
	})
	cl := dialClient(t, "udp://"+addr, rpc.ClientConfig{})
	ctx := context.Background()
	slow := make(chan error, 1)
	go func() {
		n, err := rpc.Call[int](ctx, cl, "Slow/Wait", nil)
		if err == nil && n != 7 {
			err = errors.New("wrong result")
		}
		slow <- err
	}()
	recv(t, g.entered, "the slow call in its handler")
	_, err := rpc.Call[[]byte](ctx, cl, "Bench/EchoPacket", bytes.Repeat([]byte{1}, 100<<10))
	if !errors.Is(err, transport.ErrDatagramTooLarge) {
		t.Errorf("a 100 KiB request over UDP: %v, want ErrDatagramTooLarge", err)
	}
	g.open()
	if err := recv(t, slow, "the slow call's end"); err != nil {
		t.Errorf("a call in flight beside the oversize one: %v", err)
	}
	if b, err := rpc.Call[[]byte](ctx, cl, "Bench/EchoPacket", []byte("small")); err != nil || string(b) != "small" {
		t.Errorf("a call after the oversize one: %q, %v", b, err)
	}
}
