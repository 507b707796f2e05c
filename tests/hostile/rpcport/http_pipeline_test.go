package rpcport_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// 10,000 HTTP requests pipelined on one connection, written while their
// answers are read, to an inline action (answered on the reading
// goroutine) and to one that runs on a goroutine of its own (the next
// requests are held meanwhile): every request is answered, in order, and
// the connection stays open.
func TestHTTPPipelining(t *testing.T) {
	n := size(10000, 2000, 10000)
	conns := size(1, 1, 4)
	r := attack(t, rpc.Config{}, func(srv *rpc.Server) {
		handle(t, srv, "Pipe/Echo", func(_ context.Context, s string) (string, error) { return s, nil }) // not inline: a goroutine per call
	})
	var mu sync.Mutex
	took := map[string]time.Duration{}
	var wg sync.WaitGroup
	for _, action := range []string{"Bench/EchoString", "Pipe/Echo"} {
		for range conns {
			rc := r.dial()
			wg.Go(func() {
				start := time.Now()
				go func() {
					var b []byte
					for i := range n {
						b = fmt.Appendf(b, "GET /%s?s=%d HTTP/1.1\r\nHost: rpcport\r\n\r\n", action, i)
						if len(b) > 32<<10 || i == n-1 {
							if rc.write(b) != nil {
								return
							}
							b = b[:0]
						}
					}
				}()
				for i := range n {
					resp, body, err := rc.readHTTP()
					if want := envelope(action, strconv.Quote(strconv.Itoa(i))); err != nil || resp.StatusCode != 200 || body != want || resp.Close {
						t.Errorf("%s, answer %d of %d: %v %q, %v; want %q", action, i, n, resp, body, err, want)
						return
					}
				}
				d := time.Since(start)
				if err := rc.httpServes(); err != nil {
					t.Errorf("%s after %d pipelined requests: %v", action, n, err)
				}
				mu.Lock()
				took[action] = max(took[action], d)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	r.end("HTTP pipelining", "%d requests × %d connections: all answered in order, inline in %v, on their own goroutines in %v",
		n, conns, took["Bench/EchoString"].Round(time.Millisecond), took["Pipe/Echo"].Round(time.Millisecond))
}
