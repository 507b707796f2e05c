package conns_test

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// Issue 44, item 6: fairness near MaxConns. 12 greedy source addresses
// (127.0.0.2 … 127.0.0.13) each try 20 connections against MaxConns 120,
// far below MaxConnsPerIP, dialed one at a time in turn (the server
// accepts them in that order). Once 108 are live (the last tenth
// reached), an address holding the other addresses' mean is refused, so
// the dozen stop at 9 each and a fresh address (127.0.0.14) still gets in,
// and a second one (127.0.0.15) after it; a greedy address is still
// refused. Without the fair share the dozen filled all 120 slots and
// locked the fresh address out.
func TestFairShareNearMaxConns(t *testing.T) {
	leakcheck.Check(t)
	const greedy, tries, limit = 12, 20, 120
	const tenth = limit / 10
	needFDs(t, 2*greedy*tries+200)
	srv, addr := startEcho(t, transport.Config{MaxConns: limit, ReadBufferSize: 4 << 10, Log: slog.New(slog.DiscardHandler)}, transport.Hooks{})

	from := func(host byte) *net.Dialer {
		return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, host)}, Timeout: 20 * time.Second}
	}
	// Dialing from 127.0.0.2 tells whether loopback takes other sources.
	c, err := from(2).Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from 127.0.0.2 (loopback is only 127.0.0.1 here): %v", err)
	}
	c.Close()
	eventually(t, 10*time.Second, "the check connection to end", func() bool { return srv.Stats().Active == 0 })
	base := srv.Stats()

	// One dial at a time, the addresses in turn: the server admits them in
	// this order, so the result below is exact.
	conns, err := dialMany(greedy*tries, 1, func(i int) (net.Conn, error) { return from(byte(2+i%greedy)).Dial("tcp", addr) })
	defer closeAll(conns)
	if err != nil {
		t.Fatal(err)
	}
	served := probeAll(t, conns, 16)
	perSource := make([]int, greedy)
	total := 0
	for i, ok := range served {
		if ok {
			perSource[i%greedy]++
			total++
		}
	}
	refused := uint64(greedy*tries - total)
	eventually(t, 20*time.Second, "the greedy addresses' refusals to be counted", func() bool {
		return srv.Stats().Closed[transport.ReasonLimit]-base.Closed[transport.ReasonLimit] >= refused
	})

	fresh := func(host byte) bool {
		t.Helper()
		c, err := from(host).Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c) // closed with the rest
		ok, err := probe(c)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	fresh14 := fresh(14)
	fresh15 := fresh(15)
	again := fresh(2)
	st := srv.Stats()
	t.Logf("fair share: %d addresses × %d tries against MaxConns %d: served %d %v; then 127.0.0.14 served=%v, 127.0.0.15 served=%v, 127.0.0.2 again served=%v; server: active %d, closed %s",
		greedy, tries, limit, total, perSource, fresh14, fresh15, again, st.Active, closedCounts(st))
	for s, n := range perSource {
		if n != (limit-tenth)/greedy {
			t.Errorf("127.0.0.%d: %d served, want %d (the others' mean, reached at %d live)", s+2, n, (limit-tenth)/greedy, limit-tenth)
		}
	}
	if total >= limit {
		t.Errorf("the greedy addresses hold %d connections: all of MaxConns %d", total, limit)
	}
	if !fresh14 || !fresh15 {
		t.Errorf("fresh addresses near MaxConns: 127.0.0.14 served=%v, 127.0.0.15 served=%v; want both served", fresh14, fresh15)
	}
	if again {
		t.Error("a greedy address was served once more near MaxConns")
	}
	closeAll(conns)
	eventually(t, 20*time.Second, "every session to end", func() bool { return srv.Stats().Active == 0 })
}
