package transport_test

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// tagServer starts a server that answers every read, TCP or UDP, with its
// tag byte.
func tagServer(t *testing.T, cfg transport.Config, tag byte) *transport.Server {
	t.Helper()
	srv, err := transport.NewServer(cfg, transport.Hooks{OnReceive: func(s *transport.Session, p *packet.Packet) {
		s.SendBytes([]byte{tag})
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// With ReusePort two servers listen on one TCP and UDP port, and Linux
// spreads connections and datagrams over both: each is served by either
// one, and within 200 tries each server has served some. A third server
// without ReusePort cannot bind the port.
func TestReusePortSharesOnePortBetweenServers(t *testing.T) {
	leakcheck.Check(t)
	ctx := context.Background()
	cfg := transport.Config{ReusePort: true}
	a, b := tagServer(t, cfg, 'A'), tagServer(t, cfg, 'B')
	var addr string
	for try := 0; ; try++ { // a port free for TCP may have its UDP side taken by another process
		ta, err := a.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if _, err = a.Listen(ctx, "udp", ta.String()); err == nil {
			addr = ta.String()
			break
		}
		if try == 20 {
			t.Fatalf("no port free for both TCP and UDP in 20 tries: %v", err)
		}
		a.Close()
		a = tagServer(t, cfg, 'A')
	}
	for _, network := range []string{"tcp", "udp"} {
		if _, err := b.Listen(ctx, network, addr); err != nil {
			t.Fatalf("the second server with ReusePort on %s %s: %v", network, addr, err)
		}
	}
	plain := tagServer(t, transport.Config{}, 'C')
	for _, network := range []string{"tcp", "udp"} {
		if _, err := plain.Listen(ctx, network, addr); !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("a server without ReusePort on %s %s: %v, want EADDRINUSE", network, addr, err)
		}
	}

	for _, network := range []string{"tcp", "udp"} {
		seen := map[byte]int{}
		tries := 0
		for ; tries < 200 && (seen['A'] == 0 || seen['B'] == 0); tries++ {
			seen[askTag(t, network, addr)]++
		}
		t.Logf("%s: %d tries, served by A %d, by B %d", network, tries, seen['A'], seen['B'])
		if seen['A'] == 0 || seen['B'] == 0 || len(seen) != 2 {
			t.Errorf("%s: served by %v in %d tries, want both A and B", network, seen, tries)
		}
	}
	if sa, sb := a.Stats(), b.Stats(); sa.Accepted == 0 || sb.Accepted == 0 {
		t.Errorf("accepted: A %d, B %d; want both some", sa.Accepted, sb.Accepted)
	}
}

// askTag sends a byte from a new socket (a new source port) and returns
// the answering server's tag.
func askTag(t *testing.T, network, addr string) byte {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte{'?'}); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatalf("%s %s: %v", network, addr, err)
	}
	return b[0]
}
