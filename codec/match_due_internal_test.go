package codec

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// newTestMatcher is an SRMP matcher whose clock stands at base and whose
// sweeper never starts: the test calls expire itself, with its own times.
func newTestMatcher(t *testing.T, base int64) *matcher {
	t.Helper()
	m := newMatcher(false, time.Second)
	m.sweeper = true
	m.clock.Store(base)
	t.Cleanup(m.close)
	return m
}

func registerTest(t *testing.T, m *matcher, cb *callback) (int, chan result) {
	t.Helper()
	if err := m.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	key, ch, err := m.register(cb, nil)
	if err != nil {
		t.Fatal(err)
	}
	return key, ch
}

// TestExpireSkipsUntilDue: the sweeper's tick scans nothing before the
// earliest deadline, yet every request still fails at its own deadline,
// including one registered after a tick that found nothing pending, and a
// timed-out asynchronous request's number returns at its quarantine's end.
func TestExpireSkipsUntilDue(t *testing.T) {
	const base = int64(1_000_000_000_000)
	wait := int64(time.Second + sweepEvery) // a request's deadline is this far past the clock
	m := newTestMatcher(t, base)

	_, ch := registerTest(t, m, nil)
	if m.due != base+wait {
		t.Fatalf("due = %d after a request, want its deadline %d", m.due, base+wait)
	}
	m.expire(base + wait - 1)
	if len(ch) != 0 {
		t.Fatal("a request failed before its deadline")
	}
	idle := m.expire(base + wait)
	if r := <-ch; !errors.Is(r.err, ErrTimeout) {
		t.Fatalf("at its deadline the request got %v, want ErrTimeout", r.err)
	}

	// Nothing is left to expire: the tick set no deadline and stopped the
	// sweeper; the next request brings its own deadline (and would start
	// another sweeper: marked as running, the test goes on ticking by hand).
	if !idle || m.sweeper || m.due != math.MaxInt64 {
		t.Fatalf("with nothing left expire = %v, sweeper %v, due %d; want the sweeper stopped, nothing due", idle, m.sweeper, m.due)
	}
	m.expire(base + 2*wait)
	m.sweeper = true
	later := base + 3*wait
	m.clock.Store(later)
	var got []error
	key, _ := registerTest(t, m, &callback{msg: func(_ *Message, err error) { got = append(got, err) }})
	m.expire(later + wait - 1)
	if len(got) != 0 {
		t.Fatal("an asynchronous request failed before its deadline")
	}
	m.clock.Store(later + wait)
	m.expire(later + wait)
	if len(got) != 1 || !errors.Is(got[0], ErrTimeout) {
		t.Fatalf("at its deadline the callback got %v, want one ErrTimeout", got)
	}
	if m.slots[key].state != slotQuarantine {
		t.Fatalf("the timed-out number is in state %d, want quarantined", m.slots[key].state)
	}
	end := later + 2*wait // its quarantine is a timeout long, from the clock at expiry
	m.expire(end - 1)
	if m.slots[key].state != slotQuarantine {
		t.Fatal("the quarantine ended early")
	}
	if idle := m.expire(end); !idle || m.slots[key].state != slotFree {
		t.Fatalf("after its quarantine the number is in state %d (expire = %v), want free and the sweeper stopped", m.slots[key].state, idle)
	}
}

// TestSweeperStopsWhenIdle: once nothing is left to expire, a connection's
// sweeper goroutine ends by itself (an idle pooled connection costs no
// wake-up a tick); a later request starts another, with a fresh clock, and
// still times out after its timeout, not sooner.
func TestSweeperStopsWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMatcher(false, time.Second)
		defer m.close()
		for round := range 2 {
			start := time.Now()
			_, ch := registerTest(t, m, nil)
			r := <-ch
			key := -1
			for k := range m.slots {
				if m.slots[k].ch == ch {
					key = k
				}
			}
			m.finish(key, ch, r)
			if waited := time.Since(start); !errors.Is(r.err, ErrTimeout) || waited < time.Second || waited > time.Second+2*sweepEvery {
				t.Fatalf("round %d: %v after %v, want ErrTimeout after the 1 s timeout", round, r.err, waited)
			}
			synctest.Wait() // the sweeper's tick that failed the request found nothing else: it returns
			m.mu.Lock()
			running := m.sweeper
			m.mu.Unlock()
			if running {
				t.Fatalf("round %d: the sweeper still runs with nothing to expire", round)
			}
			time.Sleep(10 * time.Second) // idle: no ticks in the bubble
		}
	})
}
