package rpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// udpServer serves the standard actions and Slow/Wait (held by g) over
// UDP with cfg.
func udpServer(t *testing.T, cfg rpc.Config, g *gate) string {
	t.Helper()
	cfg.Log = quietLog()
	srv, err := rpc.NewServer(cfg)
	must(t, err)
	stdActions(t, srv)
	must(t, rpc.Handle(srv, "Slow/Wait", func(ctx context.Context, _ struct{}) (int, error) {
		return 1, g.wait(ctx)
	}))
	addr, err := srv.Listen(context.Background(), "udp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { srv.Close() })
	t.Cleanup(g.open) // runs first
	return addr.String()
}

// udpPeer is one UDP client of a server.
func udpPeer(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("udp", addr)
	must(t, err)
	c.SetDeadline(time.Now().Add(testTimeout))
	t.Cleanup(func() { c.Close() })
	return c
}

// udpRead reads one datagram holding one SRMP frame.
func udpRead(t *testing.T, c net.Conn) frame {
	t.Helper()
	buf := make([]byte, 64<<10)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no datagram: %v", err)
	}
	f, err := readSRMP(bytes.NewReader(buf[:n]))
	must(t, err)
	return f
}

// A UDP peer's call never runs on its listener's one reading goroutine,
// which reads for every peer: past MaxInFlight it gets a 503 naming
// ErrBusy, and a Serial server spawns UDP calls as usual (datagrams carry
// no order). Such a call used to run on that goroutine, and one peer's
// slow calls stopped every other peer.
func TestUDPSlowCallsNeverBlockOtherPeers(t *testing.T) {
	for _, serial := range []bool{false, true} {
		name := map[bool]string{false: "past MaxInFlight", true: "Serial"}[serial]
		t.Run(name, func(t *testing.T) {
			g := newGate(t, 4)
			addr := udpServer(t, rpc.Config{MaxInFlight: 1, Serial: serial, UDPReplyFactor: -1}, g) // a trusted network: the texts whole
			a, b := udpPeer(t, addr), udpPeer(t, addr)

			a.Write(srmp(b0Request, 1, body(t, "Slow/Wait", nil))) // peer A's one slot
			recv(t, g.entered, "the first slow call")
			a.Write(srmp(b0Request, 2, body(t, "Slow/Wait", nil))) // past A's cap
			f := udpRead(t, a)
			if f.b0 != b0Error || f.seq != 2 {
				t.Fatalf("peer A's second call: %02X seq %d %q; want an error reply", f.b0, f.seq, f.payload)
			}
			p := f.payload[1+int(f.payload[0]):]
			if code := binary.LittleEndian.Uint32(p); code != 503 || string(p[8:]) != rpc.ErrBusy.Error() {
				t.Errorf("code %d %q; want 503 naming ErrBusy", code, p[8:])
			}

			b.Write(srmp(b0Request, 1, body(t, "Bench/NoArg", nil))) // another peer, a fast action
			if f := udpRead(t, b); f.b0 != b0Reply || !bytes.Equal(f.payload, body(t, "Bench/NoArg", "42")) {
				t.Fatalf("peer B: %02X %q", f.b0, f.payload)
			}
			g.open()
			if f := udpRead(t, a); f.b0 != b0Reply || f.seq != 1 {
				t.Fatalf("peer A's first call: %02X seq %d", f.b0, f.seq)
			}
		})
	}
}
