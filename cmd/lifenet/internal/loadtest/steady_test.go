package loadtest

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
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

// A one-way client primes, pauses 200 ms and then starts its window: the
// priming is warm-up, counted apart and left out of STEADY's rate, which
// is the window's alone, however the pause falls on the server's ticks
// (with the pause inside, the rate read about 0.9× on a 2 s window).
func TestSteadyLeavesTheWarmUpOut(t *testing.T) {
	const size = 1024
	const rate = 500_000 // messages/s
	for _, offset := range []time.Duration{30 * time.Millisecond, 150 * time.Millisecond, 420 * time.Millisecond, 990 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			prime := uint64(primeCount(&Config{Size: size}) * size)
			window := offset + 200*time.Millisecond // the client's pause after priming
			bytes := func() uint64 {
				el := time.Since(t0)
				switch {
				case el < offset:
					return 0
				case el < window:
					return prime
				}
				return prime + uint64(min(el-window, 2*time.Second).Seconds()*rate*size)
			}
			cfg := &Config{Size: size, IdleExit: time.Second, FirstClient: 10 * time.Second, Impl: "raw"}
			var out strings.Builder
			st := measureServer(context.Background(), cfg, &echoServer{bytes: bytes}, &out)
			if d := math.Abs(st.PktPerSec/rate - 1); d > 0.02 || st.WarmupBytes != prime || st.Received != prime+2*rate*size {
				t.Errorf("offset %v: STEADY %.0f msg/s of %d (%.3f×), warm-up %d bytes (want %d), received %d", offset, st.PktPerSec, rate,
					st.PktPerSec/rate, st.WarmupBytes, prime, st.Received)
			}
			if !strings.Contains(out.String(), fmt.Sprintf("[server] warm-up: %d bytes of priming before the window, left out of STEADY", prime)) {
				t.Errorf("offset %v: no warm-up line in\n%s", offset, out.String())
			}
		})
	}
}

// Only a small first burst is warm-up: traffic that stalls for a tick
// after more than the priming of 16 clients is the window's own, and the
// stall stays in the rate; a later gap never makes a warm-up.
func TestByteTraceWarmUp(t *testing.T) {
	trace := func(limit uint64, ticks ...uint64) *byteTrace {
		tr := newByteTrace(0, 0)
		tr.warmLimit = limit
		var b uint64
		for i, d := range ticks {
			b += d
			tr.add(time.Duration(i+1)*traceTick, b)
		}
		return tr
	}
	warm := trace(500, 0, 400, 0, 0, 1000, 1000, 1000, 1000)
	if warm.warm != 400 || math.Abs(warm.rate()-10_000) > 1 {
		t.Errorf("priming then a window: warm-up %d, rate %.1f; want 400 and 10000 B/s", warm.warm, warm.rate())
	}
	big := trace(500, 0, 1000, 0, 1000, 1000, 1000, 1000)
	if big.warm != 0 || big.rate() >= 10_000 {
		t.Errorf("a window that stalls: warm-up %d, rate %.1f; want none, the stall in the rate", big.warm, big.rate())
	}
	late := trace(500, 400, 0, 100, 0, 1000, 1000)
	if late.warm != 400 {
		t.Errorf("a second small burst and gap: warm-up %d, want the first burst's 400 alone", late.warm)
	}
}
