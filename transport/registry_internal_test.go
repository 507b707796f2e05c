package transport

import (
	"math/rand/v2"
	"testing"
)

// A sessionSet finds every session it holds by ID, none it does not, and
// keeps its list in ID order through removals, squeezes and IDs that come
// out of order; removing a session it does not hold (another with a held
// one's ID) does nothing; its holes stay under a quarter of the list, or
// compactAbove.
func TestSessionSetFindsByIDThroughRemovals(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	set := newSessionSet(true)
	live, used := map[uint64]*Session{}, map[uint64]bool{}
	var next uint64
	check := func(step int) {
		t.Helper()
		if set.len() != len(live) {
			t.Fatalf("step %d: len %d, want %d", step, set.len(), len(live))
		}
		for id, s := range live {
			if got, ok := set.lookup(id); !ok || got != s {
				t.Fatalf("step %d: lookup(%d) = %p, %v; want %p", step, id, got, ok, s)
			}
			set.remove(&Session{id: id}) // not the one held
			if got, ok := set.lookup(id); !ok || got != s {
				t.Fatalf("step %d: removing a stranger with ID %d took %p out", step, id, s)
			}
		}
		for i := 1; i < len(set.list); i++ {
			if set.list[i-1].id >= set.list[i].id {
				t.Fatalf("step %d: entry %d has ID %d after %d", step, i, set.list[i].id, set.list[i-1].id)
			}
		}
		if n := len(set.list); set.holes > max(n/4+1, compactAbove) {
			t.Fatalf("step %d: %d holes in %d entries", step, set.holes, n)
		}
	}
	for step := range 20000 {
		switch r := rng.IntN(10); {
		case r < 5 || len(live) == 0: // add, now and then an ID older than the newest
			next += 2 // in order: even IDs
			id := next
			if odd := next - 1 - 2*uint64(rng.IntN(50)); r == 0 && odd < next && !used[odd] {
				id = odd // out of order: an odd ID below the newest, never used
			}
			used[id] = true
			s := &Session{id: id}
			set.add(s)
			live[id] = s
		default: // remove one at random
			for id, s := range live {
				set.remove(s)
				set.remove(s) // a second remove does nothing
				delete(live, id)
				if _, ok := set.lookup(id); ok {
					t.Fatalf("step %d: %d found after its removal", step, id)
				}
				break
			}
		}
		if step%97 == 0 {
			check(step)
		}
	}
	check(-1)
	seen := 0
	var last uint64
	set.all(func(s *Session) {
		if s.id <= last {
			t.Fatalf("all: %d after %d, want ascending IDs", s.id, last)
		}
		last = s.id
		seen++
	})
	if seen != len(live) || len(set.copyList()) != len(live) {
		t.Fatalf("all walked %d, copyList %d; want %d", seen, len(set.copyList()), len(live))
	}
	off := newSessionSet(false)
	off.add(&Session{id: 1})
	if _, ok := off.lookup(1); ok {
		t.Fatal("a set without the registry found a session")
	}
}
