package codec

import (
	"testing"
	"time"
)

// Sequence numbers are given out least recently freed first: serial
// requests get 1…255, 0, 1… as NewLife's client gives them, and a number
// whose reply came goes behind every number freed before it, however early
// it came free (issue 26 F6). MatchStats.Reused counts the requests given a
// number that had rested fewer replies than requests were in flight, its
// previous request sent under a second before.
func TestSequenceNumbersLeastRecentlyFreedFirst(t *testing.T) {
	m := newTestMatcher(t, 1_000_000_000_000)
	async := &callback{msg: func(*Message, error) {}}
	reply := func(key int) { m.deliver(key, NewMessage(KindReply, 0, uint8(key), nil)) }

	for i := range 600 { // serial: one in flight
		key, _ := registerTest(t, m, async)
		if want := (i + 1) % 256; key != want {
			t.Fatalf("serial request %d got number %d, want %d", i, key, want)
		}
		reply(key)
	}
	if st := m.stats(); st.Reused != 0 || st.InFlight != 0 {
		t.Fatalf("after serial requests: %+v, want nothing reused or in flight", st)
	}

	// Ten in flight; the fifth is answered first, then the rest, in order.
	// The fifth's number is the first of the ten to come free, yet every
	// number free before it (the 246 others) is used first; then the ten
	// come back in the order their replies came.
	var keys []int
	for range 10 {
		k, _ := registerTest(t, m, async)
		keys = append(keys, k)
	}
	order := append([]int{keys[4]}, append(append([]int{}, keys[:4]...), keys[5:]...)...)
	for _, k := range order {
		reply(k)
	}
	seen := map[int]bool{}
	for i := range 246 {
		k, _ := registerTest(t, m, async)
		if seen[k] || slicesContains(keys, k) {
			t.Fatalf("request %d after the ten got %d, a number freed later than others still free", i, k)
		}
		seen[k] = true
		reply(k)
	}
	for i, want := range order {
		if k, _ := registerTest(t, m, async); k != want {
			t.Fatalf("request %d after the others got %d, want %d (the order the replies came in)", i, k, want)
		}
	}

	// 255 in flight, in a burst: no reply comes while they are sent, so the
	// numbers freed last rest fewer replies than are in flight (the last
	// 127 of the 245); one more after a reply takes the one number free,
	// then the next the number that reply freed, both just freed.
	for range 255 - 10 {
		registerTest(t, m, async)
	}
	if st := m.stats(); st.InFlight != 255 || st.Reused != 127 {
		t.Fatalf("255 in flight: %+v, want InFlight 255 and 127 numbers reused in their hold", st)
	}
	reply(order[0])
	registerTest(t, m, async) // the one number that was free
	reply(order[1])
	if k, _ := registerTest(t, m, async); k != order[0] {
		t.Fatalf("at 255 in flight the next request got %d, want %d (freed longest ago)", k, order[0])
	}
	if st := m.stats(); st.Reused != 129 {
		t.Fatalf("Reused = %d, want 129", st.Reused)
	}
	// A second on, a number whose request was sent before is not counted,
	// however few replies came since; one whose request was sent since is.
	m.clock.Add(int64(time.Second + sweepEvery))
	reply(order[2])
	if k, _ := registerTest(t, m, async); k != order[1] { // sent before
		t.Fatalf("got %d, want %d", k, order[1])
	}
	reply(order[1])
	registerTest(t, m, async) // order[2], sent before
	reply(order[3])
	if k, _ := registerTest(t, m, async); k != order[1] { // sent since
		t.Fatalf("got %d, want %d", k, order[1])
	}
	if st := m.stats(); st.Reused != 130 {
		t.Fatalf("Reused = %d, want 130: only the number whose request was sent under a second before counts", st.Reused)
	}
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
