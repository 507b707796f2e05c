package conns_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// scale picks the full number in the normal build and a smaller one
// under the race detector, which makes every socket operation and goroutine
// switch several times slower and allows at most 8,128 live goroutines.
func scale(full, underRace int) int {
	if raceEnabled {
		return underRace
	}
	return full
}

// startCodec starts a codec server on a loopback port and closes it when the
// test ends.
func startCodec(t *testing.T, cfg transport.Config, opts codec.Options) (*codec.Server, string) {
	t.Helper()
	srv, err := codec.NewServer(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return srv, a.String()
}

// startEcho starts a plain transport server, for the items where the
// transport layer is the one under test: it echoes every read unless hooks
// set OnReceive.
func startEcho(t *testing.T, cfg transport.Config, hooks transport.Hooks) (*transport.Server, string) {
	t.Helper()
	if hooks.OnReceive == nil {
		hooks.OnReceive = func(s *transport.Session, p *packet.Packet) { s.Send(p.Share()) }
	}
	srv, err := transport.NewServer(cfg, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return srv, a.String()
}

// echoSRMP answers every SRMP request with its own payload (Reply copies or
// keeps the borrowed payload).
func echoSRMP(c *codec.Conn, msg any) {
	if m, ok := msg.(*codec.Message); ok && m.Kind == codec.KindRequest {
		c.Reply(m, m.Payload)
	}
}

// eventually polls cond until it holds, failing the test after wait: the
// generous bound of a condition that a loaded machine reaches late.
func eventually(t *testing.T, wait time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, wait, what, cond)
}

// ending is how and when the server ended one connection.
type ending struct {
	at     time.Time
	reason transport.Reason
	err    error // the *transport.CloseError, or the codec layer's error
}

// endings records the end of every server-side connection, keyed by the
// peer's address (the client's local address).
type endings struct {
	mu sync.Mutex
	m  map[string]ending
}

func newEndings() *endings { return &endings{m: make(map[string]ending)} }

func (e *endings) add(peer net.Addr, err error) {
	end := ending{at: time.Now(), err: err}
	var ce *transport.CloseError
	if errors.As(err, &ce) {
		end.reason = ce.Reason
	}
	e.mu.Lock()
	e.m[peer.String()] = end
	e.mu.Unlock()
}

// codecHook and transportHook feed the record from either layer's OnClose.
func (e *endings) codecHook(c *codec.Conn, err error) { e.add(c.Session().RemoteAddr(), err) }
func (e *endings) transportHook(s *transport.Session, err *transport.CloseError) {
	e.add(s.RemoteAddr(), err)
}

func (e *endings) get(peer net.Addr) (ending, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	end, ok := e.m[peer.String()]
	return end, ok
}

func (e *endings) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.m)
}

// closedCounts formats the non-zero close counters of a Stats snapshot.
func closedCounts(st transport.Stats) string {
	var parts []string
	for r, n := range st.Closed {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%v=%d", transport.Reason(r), n))
		}
	}
	return strings.Join(parts, " ")
}

// dialMany opens n connections with at most parallel dials at a time and
// returns them in order, with the first failure. A dial that fails after
// connecting returns its connection too, so that the caller closes it.
func dialMany(n, parallel int, dial func(i int) (net.Conn, error)) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := dial(i)
			conns[i] = c
			if err != nil {
				errs <- fmt.Errorf("dial %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	return conns, <-errs
}

// closeAll closes every non-nil connection.
func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// openFDs counts the process's open file descriptors (Linux only: ok is
// false elsewhere).
func openFDs() (n int, ok bool) {
	if runtime.GOOS != "linux" {
		return 0, false
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	return len(ents), true
}

// fdLimit returns the process's soft limit on open files from
// /proc/self/limits (Linux), or 0 when it cannot tell. (Go raises the soft
// limit to the hard one at start-up.)
func fdLimit() int {
	f, err := os.Open("/proc/self/limits")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Max open files"); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				if fields[0] == "unlimited" {
					return 1 << 30
				}
				n, _ := strconv.Atoi(fields[0])
				return n
			}
		}
	}
	return 0
}

// needFDs skips the test when the process may not open n descriptors.
func needFDs(t *testing.T, n int) {
	t.Helper()
	if lim := fdLimit(); lim > 0 && lim < n {
		t.Skipf("needs %d file descriptors, the limit is %d (raise ulimit -n)", n, lim)
	}
}

// liveHeap returns HeapAlloc after garbage collection. Two cycles empty the
// sync.Pools (their victim caches survive one), so buffers returned to
// lifenet's pools do not count as held.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// pooled sums the pooled buffers taken after mark and not yet released.
func pooled(mark uint64) (count, bytes int) {
	for _, b := range leakcheck.Outstanding(mark) {
		count++
		bytes += b.Size
	}
	return count, bytes
}

// percentile returns the p-th percentile (0 < p ≤ 100) of ds, sorting ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds))*p/100+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// mib formats a byte count in MiB.
func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// poisonSlack is the extra time allowed for mass closes in the race build
// with lifenet_debug: there every released buffer is poisoned byte by byte
// under the race detector (800 × 64 KiB took 0.74 s of CPU in isolation,
// 100 partial frames more), which held closes back by seconds on a loaded
// 2-core machine. Elsewhere it is zero.
func poisonSlack() time.Duration {
	if raceEnabled && debugBuild {
		return 3 * time.Second
	}
	return 0
}
