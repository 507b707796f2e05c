package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// TestLifenetCodecEcho: the codec server answers each SRMP request with
// its payload, on many connections at once.
func TestLifenetCodecEcho(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(context.Background())
	addrc, errc := make(chan string, 1), make(chan error, 1)
	go func() {
		errc <- serveLifenetCodec(ctx, config{Impl: "lifenet-codec", Host: "127.0.0.1"}, func(a string) { addrc <- a })
	}()
	addr := <-addrc
	pipe := codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{}))
	for i := range 20 {
		cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := codec.Dial(cctx, "tcp", addr, transport.ClientConfig{}, codec.Options{Pipeline: pipe})
		if err != nil {
			ccancel()
			t.Fatal(err)
		}
		body := bytes.Repeat([]byte{byte(i)}, 100+i)
		reply, err := c.Conn().Request(cctx, codec.NewMessage(codec.KindRequest, codec.FlagPacket, 0, packet.Wrap(body)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(reply.Payload.Bytes(), body) {
			t.Fatalf("conn %d: reply %q", i, reply.Payload.Bytes())
		}
		reply.Release()
		c.Close()
		ccancel()
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
