package transport_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// receiveBorrowed is one ReceiveBorrowed with a deadline.
func receiveBorrowed(t *testing.T, c *transport.Client) *packet.Packet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := c.ReceiveBorrowed(ctx)
	if err != nil {
		t.Fatalf("ReceiveBorrowed: %v", err)
	}
	return p
}

// ReceiveBorrowed lends a view of the read buffer: the bytes read, counted,
// borrowed (Release does nothing), and over TCP a stream whose pieces
// arrive in order.
func TestClientReceiveBorrowed(t *testing.T) {
	leakcheck.Check(t)
	for _, network := range []string{"tcp", "udp"} {
		t.Run(network, func(t *testing.T) {
			_, a := startServer(t, transport.Config{}, echoHooks(), network, "127.0.0.1:0")
			c := dialClient(t, network, a, transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})
			total := 0
			for i := range 50 {
				msg := []byte{byte(i), 'x', 'y'}
				c.SendBytes(msg)
				var got []byte
				for len(got) < len(msg) {
					p := receiveBorrowed(t, c)
					if !p.Borrowed() {
						t.Fatal("ReceiveBorrowed returned a packet of the caller's own")
					}
					got = append(got, p.Bytes()...)
					p.Release() // does nothing to a borrowed view
				}
				if !bytes.Equal(got, msg) {
					t.Fatalf("round trip %d: % x", i, got)
				}
				total += len(msg)
			}
			if st := c.Stats(); st.BytesIn != uint64(total) {
				t.Fatalf("BytesIn %d, want %d", st.BytesIn, total)
			}
		})
	}
}

// A share kept of a borrowed view keeps its bytes: the next read goes to a
// new buffer instead of overwriting them. (Datagrams, so that each read is
// one whole message; 3000 bytes, past the size below which Keep copies.)
func TestClientReceiveBorrowedShareKept(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "udp", "127.0.0.1:0")
	c := dialClient(t, "udp", a, transport.ClientConfig{Mode: transport.ReceiveSync}, transport.Hooks{})
	first, second := bytes.Repeat([]byte{'A'}, 3000), bytes.Repeat([]byte{'B'}, 3000)
	c.SendBytes(first)
	kept := receiveBorrowed(t, c).Keep()
	defer kept.Release()
	if kept.RefCount() < 2 {
		t.Fatalf("Keep of a %d-byte view copied it (refs %d); the test needs a share", kept.Len(), kept.RefCount())
	}
	c.SendBytes(second)
	if p := receiveBorrowed(t, c); !bytes.Equal(p.Bytes(), second) {
		t.Fatalf("the second datagram: %d bytes, % x...", p.Len(), p.Bytes()[:8])
	}
	if !bytes.Equal(kept.Bytes(), first) {
		t.Fatal("the next read overwrote the bytes of a share kept of the previous view")
	}
	c.SendBytes(first) // and the buffer the share pinned is not read into either
	receiveBorrowed(t, c)
	if !bytes.Equal(kept.Bytes(), first) {
		t.Fatal("a later read overwrote the kept share")
	}
}

// Outside ReceiveSync there is no read buffer to lend: ReceiveBorrowed
// fails at once.
func TestClientReceiveBorrowedNeedsSync(t *testing.T) {
	leakcheck.Check(t)
	_, a := startServer(t, transport.Config{}, echoHooks(), "tcp", "127.0.0.1:0")
	for _, mode := range []transport.ReceiveMode{transport.ReceiveEvent, transport.ReceivePull} {
		c := dialClient(t, "tcp", a, transport.ClientConfig{Mode: mode}, transport.Hooks{})
		if p, err := c.ReceiveBorrowed(context.Background()); err == nil || p != nil {
			t.Errorf("mode %d: ReceiveBorrowed gave %v, %v; want an error", mode, p, err)
		}
	}
}
