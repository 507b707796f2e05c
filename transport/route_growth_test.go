package transport_test

import (
	"bytes"
	"io"
	"sync/atomic"
	"testing"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// Route may ask for more first bytes than a read loop's first buffer
// (FirstReadSize) holds: the bytes move to a buffer of ReadBufferSize and
// Route sees them all, with full set only when that one is full.
func TestRouteSeesMoreThanTheFirstBuffer(t *testing.T) {
	leakcheck.Check(t)
	const want = 3 * transport.FirstReadSize
	var sawFull atomic.Bool
	hooks := echoHooks()
	hooks.Route = func(first []byte, full bool) transport.Route {
		if full {
			sawFull.Store(true)
		}
		if len(first) < want {
			return transport.RouteMore
		}
		return transport.RouteServe
	}
	hooks.HandOff = func(c *transport.HandedConn) { c.Close() }
	_, a := startServer(t, transport.Config{}, hooks, "tcp", "127.0.0.1:0")
	c := dial(t, "tcp", a)
	msg := bytes.Repeat([]byte("0123456789abcdef"), want/16)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo of the routed bytes: %v", err)
	}
	if sawFull.Load() {
		t.Fatal("Route was told the buffer was full before ReadBufferSize")
	}
}
