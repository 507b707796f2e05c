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
// sweeper never starts (it is marked as running): the test calls expire
// itself, with its own times.
func newTestMatcher(t *testing.T, base int64) *matcher { return testMatcher(t, false, base) }

// newTestFIFOMatcher is newTestMatcher's FIFO matcher.
func newTestFIFOMatcher(t *testing.T, base int64) *matcher { return testMatcher(t, true, base) }

func testMatcher(t *testing.T, fifo bool, base int64) *matcher {
	t.Helper()
	m := newMatcher(fifo, time.Second)
	m.sweeper = true
	m.clock.Store(base)
	t.Cleanup(func() { m.close(nil) })
	return m
}

func registerTest(t *testing.T, m *matcher, cb *callback) (int, chan result) {
	t.Helper()
	key, ch, _, err := m.register(context.Background(), cb, nil)
	if err != nil {
		t.Fatal(err)
	}
	return key, ch
}

// TestExpireDueBookkeeping: with the sweeper's scans held back until the
// earliest deadline, every request still fails at its own deadline,
// including one registered after a tick that found nothing left (its due
// set afresh; the sweeper's restart is TestSweeperStopsWhenIdle's), and a
// timed-out asynchronous request's number returns at its quarantine's end.
func TestExpireDueBookkeeping(t *testing.T) {
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
	// The failed request is done, not pending (its waiter has not come
	// back): nothing is left to expire, so the sweeper would stop.
	if !idle || m.sweeper || m.due != math.MaxInt64 {
		t.Fatalf("with nothing left expire = %v, sweeper %v, due %d; want the sweeper stopped, nothing due", idle, m.sweeper, m.due)
	}
	m.sweeper = true // go on ticking by hand

	later := base + 3*wait
	m.clock.Store(later)
	var got []error
	key, _ := registerTest(t, m, &callback{msg: func(_ *Message, err error) { got = append(got, err) }})
	if m.due != later+wait {
		t.Fatalf("due = %d after a request on an idle matcher, want its deadline %d", m.due, later+wait)
	}
	m.expire(later + wait - 1)
	if len(got) != 0 {
		t.Fatal("an asynchronous request failed before its deadline")
	}
	m.clock.Store(later + wait)
	m.expire(later + wait)
	if len(got) != 1 || !errors.Is(got[0], ErrTimeout) {
		t.Fatalf("at its deadline the callback got %v, want one ErrTimeout", got)
	}
	end := later + 2*wait // the quarantine lasts a timeout, from the clock at expiry
	if m.slots[key].state != slotQuarantine || m.due != end {
		t.Fatalf("the timed-out number is in state %d, due %d; want quarantined until %d", m.slots[key].state, m.due, end)
	}
	m.expire(end - 1)
	if m.slots[key].state != slotQuarantine {
		t.Fatal("the quarantine ended early")
	}
	if idle := m.expire(end); !idle || m.slots[key].state != slotFree {
		t.Fatalf("after its quarantine the number is in state %d (expire = %v), want free and the sweeper stopped", m.slots[key].state, idle)
	}
}

// sweeperRunning reads m.sweeper under the lock.
func sweeperRunning(m *matcher) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sweeper
}

// TestSweeperStopsWhenIdle: a blocking request that times out has its
// number quarantined when its waiter comes back, so the sweeper runs on
// until the quarantine ends, frees the number and then ends by itself (an
// idle connection costs no wake-up a tick). A later request starts another
// sweeper, with a fresh clock, and still times out after its timeout.
func TestSweeperStopsWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		m := newMatcher(false, timeout)
		defer m.close(nil)
		for round := range 2 {
			start := time.Now()
			key, ch := registerTest(t, m, nil)
			r := <-ch
			if waited := time.Since(start); !errors.Is(r.err, ErrTimeout) || waited < timeout || waited > timeout+2*sweepEvery {
				t.Fatalf("round %d: %v after %v, want ErrTimeout after the %v timeout", round, r.err, waited, timeout)
			}
			m.finish(key, ch, r) // quarantines the number
			if !sweeperRunning(m) || m.stats().InFlight != 1 {
				t.Fatalf("round %d: after the timeout the sweeper runs: %v, in flight %d; want running, the number quarantined", round, sweeperRunning(m), m.stats().InFlight)
			}
			time.Sleep(timeout + 3*sweepEvery)
			synctest.Wait()
			if sweeperRunning(m) || m.stats().InFlight != 0 {
				t.Fatalf("round %d: after the quarantine the sweeper runs: %v, in flight %d; want stopped, the number free", round, sweeperRunning(m), m.stats().InFlight)
			}
			time.Sleep(10 * time.Second) // idle: nothing ticks in the bubble
		}
	})
}

// TestTimedOutNumbersComeBack: when every number times out in the same
// tick (a stalled peer), the quarantines end and a new request gets a
// number again; it must not wait for a sweeper that nothing starts.
func TestTimedOutNumbersComeBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		m := newMatcher(false, timeout)
		defer m.close(nil)
		keys := make([]int, 0, MaxInFlightSRMP)
		chans := make([]chan result, 0, MaxInFlightSRMP)
		for range MaxInFlightSRMP {
			key, ch := registerTest(t, m, nil)
			keys, chans = append(keys, key), append(chans, ch)
		}
		for i, ch := range chans {
			r := <-ch
			if !errors.Is(r.err, ErrTimeout) {
				t.Fatalf("request %d: %v, want ErrTimeout", i, r.err)
			}
			m.finish(keys[i], ch, r)
		}
		time.Sleep(timeout + 3*sweepEvery) // the quarantines end
		start := time.Now()
		if _, _, _, err := m.register(context.Background(), nil, nil); err != nil || time.Since(start) != 0 {
			t.Fatalf("a request once the quarantines ended: %v after waiting %v, want a number at once", err, time.Since(start))
		}
	})
}

// fillWithPending takes every number of m with a request that waits for
// its reply, and returns their keys.
func fillWithPending(t *testing.T, m *matcher) (keys []int) {
	for range MaxInFlightSRMP {
		key, _ := registerTest(t, m, &callback{msg: func(*Message, error) {}})
		keys = append(keys, key)
	}
	return keys
}

// A request that finds every number taken waits for one for at most the
// timeout (ErrTimeout, counted), and one that got a number after a wait
// has only the rest of its timeout left.
func TestWaitForANumberIsPartOfTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		m := newMatcher(false, timeout)
		defer m.close(nil)
		fillWithPending(t, m)
		start := time.Now()
		if _, _, _, err := m.register(context.Background(), nil, nil); !errors.Is(err, ErrTimeout) || time.Since(start) != timeout {
			t.Fatalf("waiting for a number: %v after %v, want ErrTimeout after %v", err, time.Since(start), timeout)
		}
		if n := m.stats().TimedOut; n != 1 {
			t.Errorf("TimedOut %d, want 1", n)
		}

		m = newMatcher(false, timeout)
		defer m.close(nil)
		keys := fillWithPending(t, m)
		go func() {
			time.Sleep(timeout / 4)
			m.deliver(keys[0], &Message{Kind: KindReply}) // a number comes free
		}()
		start = time.Now()
		_, ch := registerTest(t, m, nil)
		if r := <-ch; !errors.Is(r.err, ErrTimeout) || time.Since(start) > timeout+2*sweepEvery {
			t.Fatalf("a request that waited for its number: %v after %v, want ErrTimeout within its %v timeout", r.err, time.Since(start), timeout)
		}
	})
}

// TestSweeperStopsSoonAfterTheLastReply: once the last request has its
// reply and nothing is quarantined, nothing can expire, so the sweeper
// ends within a tick or two instead of ticking on until the answered
// request's deadline (a timeout later: 15 s by default, 20 wake-ups a
// second on every idle connection).
func TestSweeperStopsSoonAfterTheLastReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 10 * time.Second
		m := newMatcher(false, timeout)
		defer m.close(nil)
		for round := range 2 {
			key, ch := registerTest(t, m, nil)
			m.deliver(key, NewMessage(KindReply, 0, uint8(key), nil))
			r := <-ch
			if r.err != nil {
				t.Fatalf("round %d: %v, want the reply", round, r.err)
			}
			m.finish(key, ch, r)
			r.reply.(*Message).Release()
			time.Sleep(2 * sweepEvery)
			synctest.Wait()
			if sweeperRunning(m) || m.stats().InFlight != 0 {
				t.Fatalf("round %d: %v after the last reply the sweeper runs: %v, in flight %d; want stopped, nothing in flight", round, 2*sweepEvery, sweeperRunning(m), m.stats().InFlight)
			}
		}
	})
}
