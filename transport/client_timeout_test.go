package transport_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// receiveModes are the modes in which Receive is available.
var receiveModes = []transport.ReceiveMode{transport.ReceivePull, transport.ReceiveSync}

// ReceiveTimeout ends a Receive that gets nothing with ErrReceiveTimeout,
// not before the timeout, and leaves the connection open for the next call.
func TestClientReceiveTimeout(t *testing.T) {
	leakcheck.Check(t)
	const timeout = 80 * time.Millisecond
	for _, network := range []string{"tcp", "udp"} {
		for _, mode := range receiveModes {
			t.Run(fmt.Sprintf("%s/mode=%d", network, mode), func(t *testing.T) {
				_, a := startServer(t, transport.Config{}, echoHooks(), network, "127.0.0.1:0")
				c := dialClient(t, network, a, transport.ClientConfig{Mode: mode, ReceiveTimeout: timeout}, transport.Hooks{})
				for range 2 { // the second call starts its own timeout
					start := time.Now()
					p, err := c.Receive(context.Background())
					if !errors.Is(err, transport.ErrReceiveTimeout) {
						t.Fatalf("Receive with nothing to read: %v, %v", p, err)
					}
					if d := time.Since(start); d < timeout {
						t.Fatalf("timed out after %v, before %v", d, timeout)
					}
				}
				c.SendBytes([]byte("still open"))
				if got := receiveString(t, c, 10); got != "still open" {
					t.Fatalf("after the timeouts: %q", got)
				}
				if r := c.Session().Reason(); r != transport.ReasonNone {
					t.Fatalf("a timeout closed the session: %v", r)
				}
			})
		}
	}
}

// A context that ends before the receive timeout decides the error, and a
// cancellation during the wait is not held back until the timeout.
func TestClientReceiveTimeoutWithContext(t *testing.T) {
	leakcheck.Check(t)
	for _, mode := range receiveModes {
		t.Run(fmt.Sprintf("mode=%d", mode), func(t *testing.T) {
			_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
			c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: mode, ReceiveTimeout: 10 * time.Second}, transport.Hooks{})
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if _, err := c.Receive(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Receive past ctx's deadline: %v", err)
			}
			ctx, cancel = context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			start := time.Now()
			if _, err := c.Receive(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled Receive: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("cancellation took %v", d)
			}
		})
	}
}

// ErrReceiveTimeout says it is a timeout, as a net.Error.
func TestReceiveTimeoutIsANetTimeout(t *testing.T) {
	var ne net.Error
	if !errors.As(fmt.Errorf("receive: %w", transport.ErrReceiveTimeout), &ne) || !ne.Timeout() {
		t.Fatal("ErrReceiveTimeout is not a net.Error whose Timeout is true")
	}
}

// In sync mode the receive timeout's deadline moves only when the one set
// is nearer than the timeout, not on every call: a call that comes a while
// after the one that set it still waits its whole timeout from its start.
func TestSyncReceiveTimeoutCountsFromEachCall(t *testing.T) {
	leakcheck.Check(t)
	const timeout = 300 * time.Millisecond
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: transport.ReceiveSync, ReceiveTimeout: timeout}, transport.Hooks{})
	for i := range 3 {
		c.SendBytes([]byte("ping"))
		if got := receiveString(t, c, 4); got != "ping" {
			t.Fatalf("echo %d: %q", i, got)
		}
	}
	time.Sleep(timeout * 2 / 3) // the deadline the echoes' receives set is now nearer than a timeout
	start := time.Now()
	if _, err := c.Receive(context.Background()); !errors.Is(err, transport.ErrReceiveTimeout) {
		t.Fatalf("Receive with nothing to read: %v", err)
	}
	if d := time.Since(start); d < timeout {
		t.Fatalf("timed out after %v, before its own %v", d, timeout)
	}
}
