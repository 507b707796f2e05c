package transport_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/transport"
)

// A peer that opens a TLS connection and never completes its handshake is
// closed after HandshakeTimeout (ReasonFirstByte), not after the far
// longer FirstByteTimeout.
func TestStalledTLSHandshakeClosedAfterHandshakeTimeout(t *testing.T) {
	leakcheck.Check(t)
	server, _ := testTLS(t)
	srv, err := transport.NewServer(transport.Config{TLS: server, HandshakeTimeout: 300 * time.Millisecond, FirstByteTimeout: time.Hour}, transport.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	addr, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{0x16, 0x03, 0x01}) // the start of a ClientHello, never finished
	testwait.For(t, 30*time.Second, "the stalled handshake closed", func() bool {
		return srv.Stats().Closed[transport.ReasonFirstByte] == 1
	})
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection is still open")
	}
}
