package loadtest

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// A one-way client against a peer that stops reading during the window
// (it reads the prime's connection, the second it accepts, and never the
// measured one) ends within sendGrace of its window, its blocked send cut
// and reported, with either implementation: before, the raw client's
// Write had no deadline and blocked for good (the lifenet one for its
// 30 s WriteTimeout).
func TestOneWayClientEndsAgainstAPeerThatStopsReading(t *testing.T) {
	for _, impl := range []string{"raw", "lifenet"} {
		t.Run(impl, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var held []net.Conn
			t.Cleanup(func() {
				l.Close()
				mu.Lock()
				defer mu.Unlock()
				for _, c := range held {
					c.Close()
				}
			})
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					mu.Lock()
					held = append(held, c)
					if len(held) == 2 { // the prime's
						go io.Copy(io.Discard, c)
					}
					mu.Unlock()
				}
			}()
			cfg, err := Parse([]string{"--oneway", "--impl", impl, "--clients", "1", "--size", "65536", "--seconds", "0.3", "--warmup", "0", "--json"})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			s, _ := RunClient(context.Background(), cfg, l.Addr().String(), io.Discard)
			if took := time.Since(start); took > 0.3e9+sendGrace+3*time.Second {
				t.Errorf("the client took %v after a 0.3 s window", took)
			}
			if s.ConnErrors != 1 {
				t.Errorf("%d connection errors, want the blocked send reported", s.ConnErrors)
			}
		})
	}
}
