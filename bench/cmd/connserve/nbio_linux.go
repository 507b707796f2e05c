package main

import (
	"context"
	"net"
	"os"
	"strconv"

	"github.com/lesismal/nbio"
	"github.com/lesismal/nbio/logging"
)

// serveNbio runs nbio's echo example (its defaults: pollers per CPU, a
// 6 MiB cap on a connection's pending writes, as the example sets) until
// ctx ends, then stops the engine. nbio's log goes to stderr so that
// stdout carries only the READY line.
func serveNbio(ctx context.Context, cfg config, ready func(addr string)) error {
	lc, err := listenConfig(cfg.ReusePort)
	if err != nil {
		return err
	}
	logging.Output = os.Stderr
	engine := nbio.NewEngine(nbio.Config{
		Network:            "tcp",
		Addrs:              []string{net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))},
		MaxWriteBufferSize: 6 * 1024 * 1024,
		Listen: func(network, addr string) (net.Listener, error) {
			return lc.Listen(ctx, network, addr)
		},
	})
	engine.OnData(func(c *nbio.Conn, data []byte) {
		_, _ = c.Write(append([]byte{}, data...))
	})
	if err := engine.Start(); err != nil {
		return err
	}
	ready(engine.Addrs[0])
	<-ctx.Done()
	engine.Stop()
	return nil
}
