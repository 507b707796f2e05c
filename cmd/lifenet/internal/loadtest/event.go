package loadtest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// eventSource is a connection in event mode. Its bytes go to a handler on
// the connection's receive goroutine, so the load runs there, as
// NetLoadTest's event mode does: counting in the handler (pipeline) and
// chaining each round trip's next request from it (roundtrip).
type eventSource interface {
	clientConn
	onBytes(h func(n int))
	ended() error // why the connection closed, nil while open
}

// eventCheck is how often an event-mode run looks at its connections from
// outside (closed connections, a UDP echo overdue).
const eventCheck = 100 * time.Millisecond

// primeEvents sends the warm-up messages and waits up to 3 s for their
// echoes (NetLoadTest's event prime).
func (r *run) primeEvents(ctx context.Context, src eventSource, count int) error {
	var got atomic.Uint64
	src.onBytes(func(n int) { got.Add(uint64(n)) })
	for range count {
		if err := src.send(r.payload); err != nil {
			return err
		}
	}
	want := uint64(count * r.cfg.Size)
	for deadline := time.Now().Add(3 * time.Second); got.Load() < want && time.Now().Before(deadline) && ctx.Err() == nil; {
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// countEvents makes a pipeline receiver of an event-mode connection: the
// handler counts what arrives.
func (r *run) countEvents(c *connRun, src eventSource) {
	src.onBytes(func(n int) {
		c.received.Add(uint64(n))
		r.received.Add(uint64(n))
	})
}

// eventRoundTrips runs one connection's round trips from its handler until
// ctx ends: each full echo records a sample and sends the next request. A
// UDP request whose echo is a second overdue is sent again and the lost
// one skipped (NetLoadTest's watchdog). It returns the samples.
func (r *run) eventRoundTrips(ctx context.Context, c *connRun, src eventSource) *hdrhistogram.Histogram {
	var (
		mu      sync.Mutex // the handler's state, against the watchdog and the final read
		h       = hdrhistogram.New(1, 60_000_000, 3)
		got     int
		t0      time.Time
		waiting bool // a request is out
	)
	request := func() bool { // with mu held
		t0, waiting = time.Now(), true
		if err := c.send(r.payload); err != nil {
			r.fail(c, "send", err)
			waiting = false
			return false
		}
		r.sent.Add(uint64(r.cfg.Size))
		return true
	}
	src.onBytes(func(n int) {
		mu.Lock()
		defer mu.Unlock()
		if !waiting {
			got = 0 // the late echo of a datagram sent again
			return
		}
		if got += n; got < r.cfg.Size {
			return // part of an echo
		}
		got, waiting = 0, false
		if ctx.Err() != nil {
			return
		}
		h.RecordValue(max(time.Since(t0).Microseconds(), 1))
		request()
	})
	mu.Lock()
	ok := request()
	mu.Unlock()
	r.watchEvents(ctx, c, src, ok, func() { // every eventCheck
		mu.Lock()
		defer mu.Unlock()
		if waiting && r.cfg.UDP && time.Since(t0) >= r.cfg.echoTimeout() {
			got = 0
			request()
		}
	})
	src.onBytes(nil)
	mu.Lock() // a handler still running finishes before h is read
	defer mu.Unlock()
	return h
}

// watchEvents waits for ctx to end, running check every eventCheck and
// failing the connection if it closes meanwhile.
func (r *run) watchEvents(ctx context.Context, c *connRun, src eventSource, alive bool, check func()) {
	t := time.NewTicker(eventCheck)
	defer t.Stop()
	for alive {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := src.ended(); err != nil {
			r.fail(c, "receive", err)
			return
		}
		check()
	}
	<-ctx.Done()
}
