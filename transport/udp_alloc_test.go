package transport_test

import (
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// A UDP server allocates nothing per datagram once its peers' sessions
// are open, with one peer and with 10,000, on both receive paths: the
// peer is found by its netip.AddrPort, the datagram lands in a reused
// pooled buffer, and the counters are per session.
func TestUDPServerAllocsPerDatagram(t *testing.T) {
	leakcheck.Check(t)
	for _, m := range readModes {
		for _, peers := range []int{1, 10000} {
			t.Run(fmt.Sprintf("%s/peers=%d", m.name, peers), func(t *testing.T) {
				if peers > 1 && testing.Short() {
					t.Skip("10,000 sockets: not in -short")
				}
				perDatagram := udpAllocs(t, m.batch, peers, 5000)
				t.Logf("%.4f allocations per datagram", perDatagram)
				if raceEnabled {
					return // -race changes allocation counts; the count is for the log
				}
				if perDatagram > 0.01 { // a stray allocation elsewhere in the process, at most
					t.Errorf("%.4f allocations per datagram in steady state, want 0", perDatagram)
				}
			})
		}
	}
}

// udpAllocs opens peers connected sockets to a counting server, sends one
// datagram from each (their sessions open), then sends total more round
// robin in bursts and returns the process's allocations per datagram.
func udpAllocs(t *testing.T, batch, peers, total int) float64 {
	var n atomic.Uint64
	hooks := transport.Hooks{OnReceive: func(*transport.Session, *packet.Packet) { n.Add(1) }}
	srv, a := startServer(t, transport.Config{UDPReadBatch: batch, SocketReceiveBuffer: 1 << 20}, hooks, "udp4", "127.0.0.1:0")
	to := a.(*net.UDPAddr)
	conns := make([]*net.UDPConn, peers)
	for i := range conns {
		conns[i] = udpPeer(t, "udp4", to)
	}
	msg := make([]byte, 32)
	sent := 0
	// burst datagrams, then wait until the server has them all; a burst
	// fits the socket's receive buffer, so none is lost on loopback.
	const burst = 64
	deliver := func(k int) {
		for i := range k {
			if _, err := conns[(sent+i)%peers].Write(msg); err != nil {
				t.Fatal(err)
			}
		}
		sent += k
		deadline := time.Now().Add(20 * time.Second)
		for n.Load() < uint64(sent) {
			if time.Now().After(deadline) {
				t.Fatalf("server received %d of %d datagrams", n.Load(), sent)
			}
			runtime.Gosched()
		}
	}
	for sent < peers { // every peer's session opens
		deliver(min(burst, peers-sent))
	}
	if got := srv.SessionCount(); got != peers {
		t.Fatalf("%d sessions for %d peers", got, peers)
	}
	deliver(burst) // warm: pools, maps and the reader settled
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for left := total; left > 0; left -= burst {
		deliver(min(burst, left))
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(total)
}
