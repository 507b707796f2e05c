package logattr

import (
	"sync"
	"time"
)

// Limiter rate-limits log lines by kind (a small integer the caller
// defines: a close reason, say): [Limiter.Allow] lets through the first
// burst lines of a kind in an interval and counts the rest, and when the
// interval ends the summary function gets that count, once. A storm of
// hostile connections so costs at most burst+1 lines per kind per
// interval, and says how many it held back. All methods are safe for
// concurrent use.
//
// The summary runs on a timer's goroutine, or on [Limiter.Stop]'s caller;
// it must not call the Limiter.
type Limiter struct {
	burst    int
	interval time.Duration
	summary  func(kind int, suppressed uint64)

	mu      sync.Mutex
	windows []window
	stopped bool
	timers  sync.WaitGroup // summaries scheduled or running
}

// window is one kind's current interval.
type window struct {
	start      time.Time
	lines      int         // let through since start
	suppressed uint64      // held back since start
	timer      *time.Timer // reports suppressed when the interval ends; nil while none are
}

// NewLimiter returns a limiter of kinds 0 to kinds-1 letting burst lines
// of each through per interval; summary reports the lines held back.
func NewLimiter(kinds, burst int, interval time.Duration, summary func(kind int, suppressed uint64)) *Limiter {
	return &Limiter{burst: burst, interval: interval, summary: summary, windows: make([]window, kinds)}
}

// Allow reports whether a line of kind may be written now; a line it
// refuses is counted for the interval's summary. It allocates nothing but
// the interval's timer, the first time it refuses a line in an interval.
func (l *Limiter) Allow(kind int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := &l.windows[kind]
	now := time.Now()
	if w.timer == nil && now.Sub(w.start) >= l.interval {
		w.start, w.lines = now, 0
	}
	if w.lines < l.burst {
		w.lines++
		return true
	}
	w.suppressed++
	if w.timer == nil && !l.stopped {
		l.timers.Add(1)
		w.timer = time.AfterFunc(l.interval-now.Sub(w.start), func() {
			defer l.timers.Done()
			l.flush(kind)
		})
	}
	return false
}

// flush ends kind's interval, reporting the lines it held back.
func (l *Limiter) flush(kind int) {
	l.mu.Lock()
	w := &l.windows[kind]
	n := w.suppressed
	w.suppressed, w.timer = 0, nil
	l.mu.Unlock()
	if n > 0 {
		l.summary(kind, n)
	}
}

// Stop reports at once the lines held back so far, as their intervals'
// ends would have, and waits for the summaries running. Lines refused
// after it are not reported. It is idempotent.
func (l *Limiter) Stop() {
	l.mu.Lock()
	l.stopped = true
	var due []int
	for k := range l.windows {
		w := &l.windows[k]
		if w.timer != nil && w.timer.Stop() {
			l.timers.Done()
			w.timer = nil
			due = append(due, k)
		}
	}
	l.mu.Unlock()
	for _, k := range due {
		l.flush(k)
	}
	l.timers.Wait()
}
