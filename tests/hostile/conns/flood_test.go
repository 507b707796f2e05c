package conns_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// probe writes one byte and reads its echo: true if the server serves the
// connection, false if it refused it (end of stream or reset, the way a
// connection closed at the limit looks to its peer).
func probe(c net.Conn) (served bool, err error) {
	c.SetDeadline(time.Now().Add(20 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte{'x'}); err != nil {
		return false, nil // already reset by the server
	}
	var b [1]byte
	_, err = io.ReadFull(c, b[:])
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isReset(err):
		return false, nil
	}
	return false, err // a timeout: neither served nor refused
}

// isReset reports a failed read or write other than a timeout: on a
// connection the server closed, a reset or broken pipe (without naming
// platform error numbers).
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// probeAll probes every connection, parallel at a time, and returns which
// were served.
func probeAll(t *testing.T, conns []net.Conn, parallel int) []bool {
	t.Helper()
	served := make([]bool, len(conns))
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		fails atomic.Int64
		first atomic.Value
	)
	for range parallel {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(conns) {
					return
				}
				ok, err := probe(conns[i])
				if err != nil {
					fails.Add(1)
					first.CompareAndSwap(nil, err)
				}
				served[i] = ok
			}
		})
	}
	wg.Wait()
	if n := fails.Load(); n > 0 {
		t.Fatalf("%d connections neither served nor refused, first: %v", n, first.Load())
	}
	return served
}

// Battery item 6, first half: 5,000 connections against MaxConns 4,000.
// Exactly 4,000 are served; the other 1,000 are closed at once and counted
// under ReasonLimit; the accept loop keeps going, so a slot freed after the
// flood serves a new connection. (Receive buffers are 4 KiB here: the item
// is about admission, and 4,000 default 64 KiB buffers would only add
// 250 MiB of memory to the run.)
func TestConnectionFlood(t *testing.T) {
	leakcheck.Check(t)
	const total, limit = 5000, 4000
	needFDs(t, total+limit+200)
	cfg := transport.Config{MaxConns: limit, MaxConnsPerIP: total, ReadBufferSize: 4 << 10}
	srv, addr := startEcho(t, cfg, transport.Hooks{})

	start := time.Now()
	conns, err := dialMany(total, 64, func(int) (net.Conn, error) { return net.DialTimeout("tcp", addr, 20*time.Second) })
	defer closeAll(conns)
	if err != nil {
		t.Fatal(err)
	}
	dialed := time.Since(start)
	served := probeAll(t, conns, 64)
	n := 0
	var keep []net.Conn
	for i, ok := range served {
		if ok {
			n++
			keep = append(keep, conns[i])
		} else {
			conns[i].Close()
		}
	}
	eventually(t, 20*time.Second, "1,000 limit closes to be counted", func() bool {
		return srv.Stats().Closed[transport.ReasonLimit] >= total-limit
	})
	st := srv.Stats()
	t.Logf("flood: %d connections dialed in %v, probed in %v; served %d, refused %d; server: accepted %d, active %d, max active %d, closed %s",
		total, dialed.Round(time.Millisecond), (time.Since(start) - dialed).Round(time.Millisecond),
		n, total-n, st.Accepted, st.Active, st.MaxActive, closedCounts(st))
	if n != limit || st.Accepted != limit || st.MaxActive != limit || st.Closed[transport.ReasonLimit] != total-limit {
		t.Fatalf("served %d, accepted %d, max active %d, refused at the limit %d; want %d, %d, %d, %d",
			n, st.Accepted, st.MaxActive, st.Closed[transport.ReasonLimit], limit, limit, limit, total-limit)
	}

	// At the cap a newcomer is refused; one slot freed and it is served.
	late, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	if ok, err := probe(late); ok || err != nil {
		t.Fatalf("a connection at the cap: served=%v, %v; want refused", ok, err)
	}
	keep[0].Close()
	eventually(t, 10*time.Second, "a slot to free", func() bool { return srv.Stats().Active == limit-1 })
	fresh, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if ok, err := probe(fresh); !ok {
		t.Fatalf("a connection after the flood, with a slot free, was not served: %v", err)
	}
	for _, c := range keep[1:] {
		if ok, err := probe(c); !ok {
			t.Fatalf("a connection served during the flood stopped being served: %v", err)
		}
	}
	// The refusal is counted just after the socket is closed, so the peer
	// may see the end first.
	eventually(t, 10*time.Second, "the newcomer's refusal to be counted", func() bool {
		return srv.Stats().Closed[transport.ReasonLimit] >= total-limit+1
	})
	if st = srv.Stats(); st.Closed[transport.ReasonLimit] != total-limit+1 || st.Accepted != limit+1 {
		t.Fatalf("after the flood: accepted %d, refused %d; want %d, %d", st.Accepted, st.Closed[transport.ReasonLimit], limit+1, total-limit+1)
	}
	closeAll(conns)
	fresh.Close()
	eventually(t, 20*time.Second, "every session to end", func() bool { return srv.Stats().Active == 0 })
}

// Battery item 6, second half: 64 source addresses (127.0.0.1 … 127.0.0.64)
// × 40 connections against MaxConnsPerIP 32: each address gets exactly 32
// served and 8 refused at the limit, whatever order the dials land in.
func TestPerSourceCap(t *testing.T) {
	leakcheck.Check(t)
	const sources, each, perIP = 64, 40, 32
	needFDs(t, sources*each+sources*perIP+200)
	srv, addr := startEcho(t, transport.Config{MaxConnsPerIP: perIP, ReadBufferSize: 4 << 10}, transport.Hooks{})

	src := func(i int) *net.TCPAddr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+i/each))} }
	// A served round trip from 127.0.0.2 first: the check must have been
	// admitted, and have ended, before the count starts.
	c, err := (&net.Dialer{LocalAddr: src(each)}).Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from 127.0.0.2 (loopback is only 127.0.0.1 here): %v", err)
	}
	if ok, err := probe(c); !ok {
		c.Close()
		t.Fatalf("the check connection from 127.0.0.2 was not served: %v", err)
	}
	c.Close()
	eventually(t, 10*time.Second, "the check connection to end", func() bool { return srv.Stats().Active == 0 })
	base := srv.Stats()

	conns, err := dialMany(sources*each, 64, func(i int) (net.Conn, error) {
		d := net.Dialer{LocalAddr: src(i), Timeout: 20 * time.Second}
		return d.Dial("tcp", addr)
	})
	defer closeAll(conns)
	if err != nil {
		t.Fatal(err)
	}
	served := probeAll(t, conns, 64)
	perSource := make([]int, sources)
	for i, ok := range served {
		if ok {
			perSource[i/each]++
		}
	}
	refused := uint64(sources * (each - perIP))
	eventually(t, 20*time.Second, "the limit closes to be counted", func() bool {
		return srv.Stats().Closed[transport.ReasonLimit]-base.Closed[transport.ReasonLimit] >= refused
	})
	st := srv.Stats()
	lo, hi := each, 0
	for _, n := range perSource {
		lo, hi = min(lo, n), max(hi, n)
	}
	t.Logf("per-source cap: %d addresses × %d connections, MaxConnsPerIP %d: served per address min %d max %d; server: accepted %d, active %d, closed %s",
		sources, each, perIP, lo, hi, st.Accepted-base.Accepted, st.Active, closedCounts(st))
	for s, n := range perSource {
		if n != perIP {
			t.Errorf("127.0.0.%d: %d served, want %d", s+1, n, perIP)
		}
	}
	if got := st.Closed[transport.ReasonLimit] - base.Closed[transport.ReasonLimit]; got != refused || st.Active != sources*perIP {
		t.Errorf("refused at the limit %d, active %d; want %d, %d", got, st.Active, refused, sources*perIP)
	}
	closeAll(conns)
	eventually(t, 20*time.Second, "every session to end", func() bool { return srv.Stats().Active == 0 })
}
