// Package tcpserver is a test's TCP server of its own making: a listener
// on a free loopback port whose connections a function serves, stopped
// when the test ends.
package tcpserver

import (
	"net"
	"sync"
	"testing"
)

// Start listens on 127.0.0.1 at a free port and serves each connection it
// accepts with serve, on a goroutine of its own, until the test ends: then
// it closes the listener and every connection and waits for the
// goroutines. It returns the address.
func Start(t testing.TB, serve func(c net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { serve(c) })
		}
	})
	return l.Addr().String()
}
