package main

import (
	"context"
	"net"
	"strconv"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// lifenetConfig is the transport configuration of the lifenet servers
// here: no connection limits (the client decides how many it holds),
// otherwise every default, parking and memory return included.
func lifenetConfig(cfg config) transport.Config {
	return transport.Config{MaxConns: transport.NoLimit, MaxConnsPerIP: transport.NoLimit, ReusePort: cfg.ReusePort}
}

// serveLifenet is lifenet's transport echo: each read is sent back as it
// came (OnReceive shares the read buffer into the send queue).
func serveLifenet(ctx context.Context, cfg config, ready func(addr string)) error {
	srv, err := transport.NewServer(lifenetConfig(cfg), transport.Hooks{
		OnReceive: func(s *transport.Session, p *packet.Packet) { s.Send(p.Share()) },
	})
	if err != nil {
		return err
	}
	return serveUntil(ctx, srv, cfg, ready)
}

// serveLifenetCodec is lifenet's codec echo over SRMP frames: each
// request is answered with its own payload (the shape of `lifenet load
// --server --codec srmp`).
func serveLifenetCodec(ctx context.Context, cfg config, ready func(addr string)) error {
	handler := func(c *codec.Conn, msg any) {
		if m, ok := msg.(*codec.Message); ok && m.Kind == codec.KindRequest {
			c.Reply(m, m.Payload)
		}
	}
	srv, err := codec.NewServer(lifenetConfig(cfg), codec.Options{
		Pipeline: codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{})), Handler: handler})
	if err != nil {
		return err
	}
	return serveUntil(ctx, srv.Transport(), cfg, ready)
}

// serveUntil listens with srv, reports the address, and closes srv when
// ctx ends.
func serveUntil(ctx context.Context, srv *transport.Server, cfg config, ready func(addr string)) error {
	defer srv.Close()
	a, err := srv.Listen(ctx, "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	ready(a.String())
	<-ctx.Done()
	return nil
}
