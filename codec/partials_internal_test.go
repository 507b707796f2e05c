package codec

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/transport"
)

// The expiry sweep looks only at the connections holding part of a frame:
// a connection is in the server's set from its partial frame's first byte
// to the frame's end, an idle one never is, and the sweep stops when the
// set empties. Range still sees every connection.
func TestExpirySweepSeesOnlyPartialFrames(t *testing.T) {
	leakcheck.Check(t)
	srv, err := NewServer(transport.Config{}, Options{
		Pipeline: NewPipeline(SRMPFraming(FramerConfig{})),
		Handler: func(c *Conn, msg any) {
			if m := msg.(*Message); m.Kind == KindRequest {
				c.ReplyBytes(m, m.PayloadBytes())
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, srmpHeaderLen, srmpHeaderLen+6)
	putSRMPHeader(frame, KindRequest, FlagString, 1, 6)
	frame = append(frame, "hello!"...)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", a.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	whole, half := dial(), dial()
	mustWrite(t, whole, frame)
	echo := make([]byte, len(frame))
	if _, err := whole.Read(echo); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, half, frame[:7])

	held := func() (n int, sweeping bool) {
		srv.partials.mu.Lock()
		defer srv.partials.mu.Unlock()
		return len(srv.partials.conns), srv.partials.sweeping
	}
	testwait.For(t, 30*time.Second, "the half frame's connection in the set", func() bool {
		n, sweeping := held()
		return n == 1 && sweeping
	})
	conns := 0
	srv.Range(func(*Conn) bool { conns++; return true })
	if conns != 2 {
		t.Fatalf("Range saw %d connections, want 2", conns)
	}
	mustWrite(t, half, frame[7:])
	if _, err := half.Read(echo); err != nil {
		t.Fatal(err)
	}
	if n, _ := held(); n != 0 {
		t.Fatalf("%d connections in the set after the frame completed", n)
	}
	testwait.For(t, 30*time.Second, "the sweep to stop", func() bool {
		_, sweeping := held()
		return !sweeping
	})
}

func mustWrite(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}
