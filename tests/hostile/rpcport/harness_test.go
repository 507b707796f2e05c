package rpcport_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/rpc"
)

// run is one attack on a port: the server, the bystanders beside the
// attack, the memory sampled meanwhile and the attack's connections.
type run struct {
	t    *testing.T
	srv  *rpc.Server
	addr string
	by   *bystanders
	mem  *memSampler

	start            time.Time
	goBase           int
	liveBase, rssBas uint64

	mu    sync.Mutex
	conns []*raw
	ended bool
}

// liveSlack is how far the live heap may stay above its baseline once an
// attack is over and its connections are closed: pools and the runtime's
// own caches, not an attack's buffers (one frame of MaxFrame is 10 MiB).
const liveSlack = 8 << 20

// attack checks the test for leaks, starts a port (startPort with cfg and
// setup), takes the baselines (goroutines, live heap, RSS), starts
// sampling memory and starts the bystanders, once they have each been
// served once.
func attack(t *testing.T, cfg rpc.Config, setup func(*rpc.Server)) *run {
	t.Helper()
	leakcheck.Check(t)
	srv, addr := startPort(t, cfg, setup)
	r := &run{t: t, srv: srv, addr: addr}
	r.goBase = runtime.NumGoroutine()
	r.liveBase = liveHeap()
	r.rssBas = rss()
	r.mem = sampleMemory()
	r.by = startBystanders(t, addr)
	t.Cleanup(r.abandon) // a test that fails before end leaves nothing behind
	waitFor(t, "the bystanders' first calls", func() bool {
		r.by.mu.Lock()
		defer r.by.mu.Unlock()
		return r.by.served["srmp"] > 0 && r.by.served["http"] > 0
	})
	r.start = time.Now()
	return r
}

// dial opens an attack connection, closed by end.
func (r *run) dial() *raw {
	r.t.Helper()
	rc, err := tryDialRaw(r.addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.conns = append(r.conns, rc)
	r.mu.Unlock()
	return rc
}

// dialMany opens n attack connections, parallel at a time.
func (r *run) dialMany(n, parallel int) []*raw {
	r.t.Helper()
	out := make([]*raw, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			rc, err := tryDialRaw(r.addr)
			if err != nil {
				errs <- err
				return
			}
			out[i] = rc
		})
	}
	wg.Wait()
	close(errs)
	r.mu.Lock()
	for _, rc := range out {
		if rc != nil {
			r.conns = append(r.conns, rc)
		}
	}
	r.mu.Unlock()
	if err := <-errs; err != nil {
		r.t.Fatalf("dial: %v", err)
	}
	return out
}

// abandon stops what attack started, for a test that ends (fails) before
// end.
func (r *run) abandon() {
	r.closeConns()
	if r.ended {
		return
	}
	r.by.halt()
	r.mem.stop()
}

func (r *run) closeConns() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rc := range r.conns {
		rc.Close()
	}
	r.conns = nil
}

// figures are what one attack measured.
type figures struct {
	Took               time.Duration // from the bystanders' first calls to end
	HeapBase, HeapPeak uint64        // heap objects (live and not yet swept)
	RSSBase, RSSPeak   uint64        // the process's resident set (server, attackers and bystanders)
	LiveAfter          uint64        // the live heap after the attack
	By                 bystanderFigures
}

// growth is the heap's peak over its baseline.
func (f figures) growth() uint64 { return f.HeapPeak - min(f.HeapPeak, f.HeapBase) }

func (f figures) String() string {
	return fmt.Sprintf("%.1f s; heap peak +%s (base %s); RSS peak %s (base %s); live heap after %s; %v",
		f.Took.Seconds(), mib(f.growth()), mib(f.HeapBase), mib(f.RSSPeak), mib(f.RSSBase), mib(f.LiveAfter), f.By)
}

// end ends the attack: it stops the bystanders (failing the test if any
// call of theirs failed), closes the attack's connections, and fails the
// test unless the server's goroutines and the live heap come back to their
// baselines. It logs the figures under name with detail (fmt-style).
func (r *run) end(name, detail string, args ...any) figures {
	r.t.Helper()
	r.ended = true
	f := figures{Took: time.Since(r.start), By: r.by.finish(r.t)}
	r.closeConns()
	f.HeapBase, f.HeapPeak, f.RSSPeak = r.mem.stop()
	f.RSSBase = r.rssBas
	waitFor(r.t, "the goroutines back to their baseline "+strconv.Itoa(r.goBase), func() bool {
		return runtime.NumGoroutine() <= r.goBase
	})
	var live uint64
	waitFor(r.t, "the live heap back to its baseline "+mib(r.liveBase), func() bool {
		live = liveHeap()
		return live <= r.liveBase+liveSlack
	})
	f.LiveAfter = live
	r.t.Logf("FIGURES %s: %s | %v", name, fmt.Sprintf(detail, args...), f)
	return f
}

// heapBound fails the test when the heap grew past bound during the
// attack.
func (r *run) heapBound(f figures, bound uint64) {
	r.t.Helper()
	if f.growth() > bound {
		r.t.Errorf("heap peak grew %s during the attack, past its bound %s", mib(f.growth()), mib(bound))
	}
}

// memSampler records the peak heap and RSS while an attack runs, every few
// milliseconds, without forcing a collection (that would stop the world
// and slow the attack and the bystanders).
type memSampler struct {
	done                chan struct{}
	wg                  sync.WaitGroup
	base, peak, peakRSS uint64
}

func sampleMemory() *memSampler {
	m := &memSampler{done: make(chan struct{}), base: heapObjects()}
	m.peak, m.peakRSS = m.base, rss()
	m.wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			m.peak = max(m.peak, heapObjects())
			m.peakRSS = max(m.peakRSS, rss())
			select {
			case <-m.done:
				return
			case <-t.C:
			}
		}
	})
	return m
}

// stop ends the sampling and returns the heap's baseline and peak and the
// RSS's peak.
func (m *memSampler) stop() (base, peak, peakRSS uint64) {
	close(m.done)
	m.wg.Wait()
	return m.base, m.peak, m.peakRSS
}

var heapObjectsSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// heapObjects is the heap held by objects, live and dead ones not yet
// swept: what the process holds of its heap now, read without a
// collection.
func heapObjects() uint64 {
	s := []metrics.Sample{heapObjectsSample[0]}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// liveHeap is HeapAlloc after two collections: sync.Pools hold what they
// had through the first (their victim caches) and free it in the second.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// rss is the process's resident set from /proc/self/statm (Linux; 0
// elsewhere).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(bytes.TrimSpace(b)))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}
