package transport_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// served reports whether the server echoes a byte on c (false: it closed
// c at once, refused).
func served(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte{'x'}); err != nil {
		return false
	}
	_, err := io.ReadFull(c, make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("neither served nor refused in 10 s")
	}
	return err == nil
}

// The fair share of MaxConns's last tenth rations IPs against each other:
// the only IP holding connections fills MaxConns (there is no one to be
// fair to; MaxConnsPerIP bounds it). The hostile battery's
// TestFairShareNearMaxConns holds the rule among many IPs.
func TestFairShareLetsTheOnlyIPFillMaxConns(t *testing.T) {
	leakcheck.Check(t)
	const limit = 20
	srv, a := startServer(t, transport.Config{MaxConns: limit}, echoHooks(), "tcp", "127.0.0.1:0")
	for i := range limit {
		if !served(t, dial(t, "tcp", a)) {
			t.Fatalf("connection %d of %d from the only IP was refused", i+1, limit)
		}
	}
	if served(t, dial(t, "tcp", a)) {
		t.Fatal("a connection past MaxConns was served")
	}
	waitUntil(t, "the refusal to be counted", func() bool { return srv.Stats().Closed[transport.ReasonLimit] == 1 })
}

// NoLimit lifts MaxConns and MaxConnsPerIP: the config is valid and the
// server serves.
func TestNoLimitIsValid(t *testing.T) {
	leakcheck.Check(t)
	cfg := transport.Config{MaxConns: transport.NoLimit, MaxConnsPerIP: transport.NoLimit}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	_, a := startServer(t, cfg, echoHooks(), "tcp", "127.0.0.1:0")
	for range 3 {
		if !served(t, dial(t, "tcp", a)) {
			t.Fatal("a connection with no limits was refused")
		}
	}
}
