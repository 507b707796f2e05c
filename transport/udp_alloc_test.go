package transport_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/leakcheck"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// A UDP server allocates nothing per datagram once its peers' sessions
// are open, with one peer and with 10,000, on both receive paths: the
// peer is found by its netip.AddrPort, the datagram lands in a reused
// pooled buffer, and the counters are per session. Nor does answering
// each datagram (BatchSends, as the codec layer does): on Linux the
// replies of a receive batch leave together in one sendmmsg from reused
// scratch; the peers read every reply. Each reply takes a pooled buffer,
// which the leak tracking of leakcheck (on for the rest of a process once
// a test asks for it) pays an allocation or two for: the reply path is
// measured in a child process of this test binary that does not track.
func TestUDPServerAllocsPerDatagram(t *testing.T) {
	child := os.Getenv(allocsChild) == "1"
	if !child {
		leakcheck.Check(t)
	}
	for _, m := range readModes {
		for _, peers := range []int{1, 10000} {
			t.Run(fmt.Sprintf("%s/reply=%v/peers=%d", m.name, child, peers), func(t *testing.T) {
				if peers > 1 && testing.Short() {
					t.Skip("10,000 sockets: not in -short")
				}
				perDatagram := udpAllocs(t, m.batch, peers, 5000, child)
				t.Logf("%.4f allocations per datagram", perDatagram)
				if raceEnabled || child && debugBuild {
					return // -race and the debug build's tracking change allocation counts; the count is for the log
				}
				if perDatagram > 0.01 { // a stray allocation elsewhere in the process, at most
					t.Errorf("%.4f allocations per datagram in steady state, want 0", perDatagram)
				}
			})
		}
	}
	if !child {
		t.Run("reply", allocsInChild)
	}
}

// allocsChild, set to 1, makes TestUDPServerAllocsPerDatagram measure the
// reply path, without leak tracking.
const allocsChild = "LIFENET_TEST_UDP_ALLOCS_CHILD"

// allocsInChild runs TestUDPServerAllocsPerDatagram with replies in a
// child process and reports its subtests' outcome and counts.
func allocsInChild(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-test.run=^TestUDPServerAllocsPerDatagram$", "-test.v", "-test.count=1"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), allocsChild+"=1")
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if l := strings.TrimSpace(line); strings.Contains(l, "allocations per datagram") || strings.HasPrefix(l, "=== RUN") && strings.Contains(l, "/") {
			t.Log(strings.TrimSpace(line))
		}
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "reply=true/peers=1 ") {
		t.Fatalf("the child measured no reply path:\n%s", out)
	}
}

// udpAllocs opens peers connected sockets to a counting server, sends one
// datagram from each (their sessions open), then sends total more round
// robin in bursts and returns the process's allocations per datagram.
// With reply the server echoes each datagram and each burst's replies are
// read back before the next.
func udpAllocs(t *testing.T, batch, peers, total int, reply bool) float64 {
	var n atomic.Uint64
	hooks := transport.Hooks{OnReceive: func(*transport.Session, *packet.Packet) { n.Add(1) }}
	if reply {
		hooks = transport.Hooks{BatchSends: true, OnReceive: func(s *transport.Session, p *packet.Packet) {
			n.Add(1)
			s.SendBytes(p.Bytes())
		}}
	}
	srv, a := startServer(t, transport.Config{UDPReadBatch: batch, SocketReceiveBuffer: 1 << 20}, hooks, "udp4", "127.0.0.1:0")
	to := a.(*net.UDPAddr)
	conns := make([]*net.UDPConn, peers)
	for i := range conns {
		conns[i] = udpPeer(t, "udp4", to)
	}
	msg, buf := make([]byte, 32), make([]byte, 64)
	for _, c := range conns { // set once: moving a deadline may allocate
		c.SetReadDeadline(time.Now().Add(time.Minute))
	}
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
		if reply {
			for i := range k {
				if _, err := conns[(sent+i)%peers].Read(buf); err != nil {
					t.Fatalf("reply %d of %d: %v", sent+i, sent+k, err)
				}
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
	if reply {
		// A session's send queue settles after two writes: it swaps
		// between two slices, each made on first use.
		for sent < 2*peers+burst {
			deliver(min(burst, 2*peers+burst-sent))
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for left := total; left > 0; left -= burst {
		deliver(min(burst, left))
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(total)
}
