package conns_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/transport"
)

// Battery item 7: 20,000 × (dial, one request, close) within 60 s, after
// which the process holds the descriptors, goroutines and pooled buffers it
// held before. Both ends are lifenet (an SRMP codec server, a ReceiveSync
// codec client per round), so a leak on either side shows. The full count
// runs under the race detector too (about 7 s on 2 cores); only the race
// build with lifenet_debug, where every pooled buffer records its stack
// and is poisoned byte by byte on release (a round costs 5–10× more),
// runs 5,000.
func TestChurn(t *testing.T) {
	leakcheck.Check(t)
	rounds := 20000
	if raceEnabled && debugBuild {
		rounds = 5000
	}
	const workers = 8
	pipe := codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{}))
	srv, addr := startCodec(t, transport.Config{}, codec.Options{Pipeline: pipe, Handler: echoSRMP})

	round := func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := codec.Dial(ctx, "tcp", addr, transport.ClientConfig{Mode: transport.ReceiveSync}, codec.Options{Pipeline: pipe})
		if err != nil {
			return err
		}
		defer c.Close()
		payload := fmt.Appendf(nil, "churn round %d", i)
		r, err := c.RequestBytes(ctx, codec.FlagBinary, payload)
		if err != nil {
			return err
		}
		defer r.Release()
		if !bytes.Equal(r.PayloadBytes(), payload) {
			return fmt.Errorf("round %d: reply %q", i, r.PayloadBytes())
		}
		return nil
	}

	// One round first, so that what the process creates once (the
	// poller's descriptors, the coarse clock) is in the baseline.
	if err := round(-1); err != nil {
		t.Fatal(err)
	}
	ts := srv.Transport()
	eventually(t, 10*time.Second, "the warm-up connection to end", func() bool { return ts.Stats().Active == 0 })
	fd0, haveFDs := openFDs()
	g0 := runtime.NumGoroutine()
	mark := leakcheck.Mark()

	var (
		next   atomic.Int64
		failed atomic.Int64
		first  error
		once   sync.Once
		wg     sync.WaitGroup
		maxFDs atomic.Int64
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= rounds || time.Since(start) > 2*time.Minute {
					return
				}
				if err := round(i); err != nil {
					failed.Add(1)
					once.Do(func() { first = err })
				}
				if i%500 == 0 {
					if n, ok := openFDs(); ok && int64(n) > maxFDs.Load() {
						maxFDs.Store(int64(n))
					}
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	done := min(int(next.Load()), rounds)

	eventually(t, 10*time.Second, "every churned connection to end", func() bool { return ts.Stats().Active == 0 })
	st := ts.Stats()
	t.Logf("churn: %d rounds (%d workers) in %v (%.0f/s), %d failed; server: accepted %d, max active %d, closed %s",
		done, workers, elapsed.Round(time.Millisecond), float64(done)/elapsed.Seconds(), failed.Load(),
		st.Accepted, st.MaxActive, closedCounts(st))
	if failed.Load() > 0 {
		t.Errorf("%d of %d rounds failed, first: %v", failed.Load(), done, first)
	}
	if done < rounds || elapsed > time.Minute {
		t.Errorf("%d of %d rounds in %v, want all within 60 s", done, rounds, elapsed)
	}
	if want := uint64(done + 1); st.Accepted != want || st.Closed[transport.ReasonPeerClosed] != want {
		t.Errorf("accepted %d, closed by peer %d, want %d each (every client closed first): %s",
			st.Accepted, st.Closed[transport.ReasonPeerClosed], want, closedCounts(st))
	}

	// Back to baseline with the server still running: nothing a finished
	// connection held may stay behind it.
	var fds, gs, bufs, bufBytes int
	settled := func() bool {
		fds, _ = openFDs()
		gs = runtime.NumGoroutine()
		bufs, bufBytes = pooled(mark)
		return (!haveFDs || fds <= fd0) && gs <= g0 && bufs == 0
	}
	deadline := time.Now().Add(10 * time.Second)
	for !settled() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("churn: baseline fds %d (peak seen %d), after %d; goroutines %d → %d; pooled buffers outstanding after: %d (%d bytes)",
		fd0, maxFDs.Load(), fds, g0, gs, bufs, bufBytes)
	if !settled() {
		t.Errorf("not back to baseline: fds %d (was %d, linux=%v), goroutines %d (was %d), pooled buffers %d",
			fds, fd0, haveFDs, gs, g0, bufs)
	}
	if !haveFDs {
		t.Log("churn: descriptor count not checked (no /proc/self/fd)")
	}
}
