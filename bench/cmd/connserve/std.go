package main

import (
	"context"
	"net"
	"strconv"
	"sync"
)

// stdBuffer is the std server's read buffer per connection.
const stdBuffer = 64 << 10

// serveStd is the goroutine-per-connection echo: each connection reads
// into a 64 KiB buffer of its own and writes every read back. When ctx
// ends it closes the listener and every connection and waits for their
// goroutines.
func serveStd(ctx context.Context, cfg config, ready func(addr string)) error {
	lc, err := listenConfig(cfg.ReusePort)
	if err != nil {
		return err
	}
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return err
	}
	ready(ln.Addr().String())
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		done  bool
		wg    sync.WaitGroup
	)
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		done = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			ln.Close()
			return err
		}
		mu.Lock()
		if done {
			mu.Unlock()
			c.Close()
			continue
		}
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Go(func() {
			defer func() {
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
				c.Close()
			}()
			buf := make([]byte, stdBuffer)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	}
}
