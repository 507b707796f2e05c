// Package oneport gives a test server one port for several networks (TCP
// and UDP on the same number, as lifenet's servers share one).
package oneport

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// draws bounds the ports Listen tries.
const draws = 50

// Listen calls start with 127.0.0.1:P, P drawn below the kernel's
// ephemeral range (Linux hands out 32768 and up, Windows and macOS 49152
// and up), until start returns nil, and returns that address. start
// listens on every network the test needs at the address and, when one
// fails, closes what it opened. A kernel-chosen port (":0") for the first
// network may already be taken on the second, by another test's socket
// (an outgoing TCP connection holds an ephemeral port too): a CI run lost
// ten draws in a row that way. Below the ephemeral range only listeners
// that chose the same number collide, and a collision is drawn again.
func Listen(t testing.TB, start func(addr string) error) string {
	t.Helper()
	var err error
	for range draws {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		if err = start(addr); err == nil {
			return addr
		}
	}
	t.Fatalf("no port in 20000-31999 took every listener after %d draws: %v", draws, err)
	return ""
}

// Server is a server Serve can listen with (lifenet's transport, codec and
// rpc servers).
type Server interface {
	Listen(ctx context.Context, network, address string) (net.Addr, error)
	Close() error
}

// Serve listens on every network on one port drawn as Listen does, with a
// server made by newServer for each draw (the one that could not listen
// on every network is closed), and returns the server and the address.
// The test's end closes the server.
func Serve[S Server](t testing.TB, newServer func() S, networks ...string) (S, string) {
	t.Helper()
	var srv S
	addr := Listen(t, func(addr string) error {
		srv = newServer()
		for _, n := range networks {
			if _, err := srv.Listen(context.Background(), n, addr); err != nil {
				srv.Close()
				return fmt.Errorf("listen %s %s: %w", n, addr, err)
			}
		}
		return nil
	})
	t.Cleanup(func() { srv.Close() })
	return srv, addr
}
