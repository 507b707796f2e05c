package loadtest

import (
	"context"
	"io"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// STEADY's rate is the traffic's, however a short window falls on the
// server's ticks: a steady 500 k messages/s for 2 s (matrix --quick's
// window), starting anywhere in a second, reads within 2 % of it. The
// rate from whole-second samples read 0.50–0.95× here.
func TestSteadyRateOfAShortWindow(t *testing.T) {
	const size = 1024
	const rate = 500_000 // messages/s
	for _, offset := range []time.Duration{50 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, 720 * time.Millisecond, 950 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			prime := uint64(64 * size) // the client's warm-up messages, just before its window
			bytes := func() uint64 {
				el := min(max(time.Since(t0)-offset, 0), 2*time.Second)
				if time.Since(t0) < offset-10*time.Millisecond {
					return 0
				}
				return prime + uint64(el.Seconds()*rate*size)
			}
			cfg := &Config{Size: size, IdleExit: time.Second, FirstClient: 10 * time.Second, Impl: "raw"}
			st := measureServer(context.Background(), cfg, &echoServer{bytes: bytes}, io.Discard)
			if d := math.Abs(st.PktPerSec/rate - 1); d > 0.02 || st.Samples < 2 {
				t.Errorf("offset %v: STEADY %.0f msg/s of %d (%.3f×), %d samples", offset, st.PktPerSec, rate, st.PktPerSec/rate, st.Samples)
			}
		})
	}
}

// A long span leaves its first seconds out (a slow start there does not
// count), and a span of one tick is taken whole.
func TestByteTraceRate(t *testing.T) {
	tr := newByteTrace(0, 0)
	var b uint64
	for i := 1; i <= 120; i++ { // 12 s: 2 s at 100 B/tick, then 1000 B/tick
		switch {
		case i <= 20:
			b += 100
		default:
			b += 1000
		}
		tr.add(time.Duration(i)*traceTick, b)
	}
	if got := tr.rate(); math.Abs(got-10_000) > 1 {
		t.Errorf("long span: %.1f B/s, want 10000 (its first 2 s left out)", got)
	}
	one := newByteTrace(0, 0)
	one.add(traceTick, 500)
	one.add(2*traceTick, 500)
	if got := one.rate(); math.Abs(got-5000) > 1 {
		t.Errorf("one tick of traffic: %.1f B/s, want 5000", got)
	}
	if got := newByteTrace(0, 0).rate(); got != 0 {
		t.Errorf("no traffic: %v", got)
	}
	// Traffic in the first and last ticks only, none in the one between
	// (a burst, then a stall): the whole ticks inside carry nothing, so
	// the whole span is taken, not a rate of 0.
	gap := newByteTrace(0, 0)
	for i, b := range []uint64{100, 100, 700, 700} {
		gap.add(time.Duration(i+1)*traceTick, b)
	}
	if got := gap.rate(); math.Abs(got-700.0/0.3) > 1 {
		t.Errorf("a burst with a quiet tick inside: %.1f B/s, want %.1f (700 B over its 3 ticks)", got, 700.0/0.3)
	}
}
