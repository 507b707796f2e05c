package logattr_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/internal/logattr"
)

// summaries records what a Limiter's summary function got.
type summaries struct {
	mu  sync.Mutex
	got map[int][]uint64
}

func (s *summaries) add(kind int, n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.got == nil {
		s.got = make(map[int][]uint64)
	}
	s.got[kind] = append(s.got[kind], n)
}

func (s *summaries) of(kind int) []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.got[kind]...)
}

// A storm of one kind lets the burst through and reports the rest once,
// when the interval ends; another kind has its own budget; the next
// interval lets a burst through again.
func TestLimiterBurstThenSummary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s summaries
		l := logattr.NewLimiter(2, 3, time.Second, s.add)
		defer l.Stop()
		allowed := 0
		for range 100 {
			if l.Allow(0) {
				allowed++
			}
		}
		if allowed != 3 {
			t.Fatalf("allowed %d of 100, want the burst of 3", allowed)
		}
		if !l.Allow(1) {
			t.Fatal("kind 1 refused: it shares kind 0's budget")
		}
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if got := s.of(0); len(got) != 0 {
			t.Fatalf("summary %v before the interval ended", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := s.of(0); len(got) != 1 || got[0] != 97 {
			t.Fatalf("summaries %v, want one of 97", got)
		}
		if got := s.of(1); len(got) != 0 {
			t.Fatalf("kind 1 summaries %v: it held nothing back", got)
		}
		allowed = 0
		for range 5 {
			if l.Allow(0) {
				allowed++
			}
		}
		if allowed != 3 {
			t.Fatalf("next interval allowed %d of 5, want 3", allowed)
		}
	})
}

// Stop reports what was held back at once and cancels the timers; lines
// within the burst cost no summary.
func TestLimiterStopFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s summaries
		l := logattr.NewLimiter(3, 2, time.Minute, s.add)
		for range 7 {
			l.Allow(2)
		}
		l.Allow(1)
		l.Stop()
		if got := s.of(2); len(got) != 1 || got[0] != 5 {
			t.Fatalf("summaries at Stop %v, want one of 5", got)
		}
		if got := s.of(1); len(got) != 0 {
			t.Fatalf("kind 1 summaries %v", got)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if got := s.of(2); len(got) != 1 {
			t.Fatalf("summaries %v after Stop: a timer survived it", got)
		}
		l.Stop() // idempotent
	})
}

// Concurrent callers share one budget: across goroutines exactly the
// burst gets through, and the summary counts every other line.
func TestLimiterConcurrent(t *testing.T) {
	var s summaries
	l := logattr.NewLimiter(1, 10, time.Hour, s.add)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 8 {
		wg.Go(func() {
			for range 250 {
				if l.Allow(0) {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	l.Stop()
	if allowed != 10 {
		t.Errorf("allowed %d, want 10", allowed)
	}
	if got := s.of(0); len(got) != 1 || got[0] != 1990 {
		t.Errorf("summaries %v, want one of 1990", got)
	}
}

// A refused line allocates nothing once its interval's timer exists.
func TestLimiterAllowAllocs(t *testing.T) {
	l := logattr.NewLimiter(1, 1, time.Hour, func(int, uint64) {})
	defer l.Stop()
	l.Allow(0)
	l.Allow(0) // makes the timer
	if n := testing.AllocsPerRun(1000, func() { l.Allow(0) }); n != 0 {
		t.Errorf("Allow: %v allocations per refused line", n)
	}
}
