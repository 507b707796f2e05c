package transport

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/internal/mono"
)

// clockTick is the resolution of the coarse clock that drives idle and write
// deadlines, so that hot paths never call time.Now.
const clockTick = 250 * time.Millisecond

// coarse is a process-wide clock that ticks while at least one server or
// client holds it, and stops (with its goroutine) when the last one lets go.
var coarse struct {
	now   atomic.Int64         // mono reading, updated every clockTick
	tick  atomic.Pointer[tick] // the same instant as a time.Time (timeOf)
	mu    sync.Mutex
	users int
	stop  chan struct{}
	done  chan struct{}
}

// acquireClock starts the clock if this is its first user.
func acquireClock() {
	coarse.mu.Lock()
	defer coarse.mu.Unlock()
	coarse.users++
	if coarse.users > 1 {
		return
	}
	storeTick(time.Now())
	stop, done := make(chan struct{}), make(chan struct{})
	coarse.stop, coarse.done = stop, done
	go func() {
		defer close(done)
		t := time.NewTicker(clockTick)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				storeTick(now)
			case <-stop:
				return
			}
		}
	}()
}

// releaseClock stops the clock after its last user, waiting for its
// goroutine to end.
func releaseClock() {
	coarse.mu.Lock()
	defer coarse.mu.Unlock()
	coarse.users--
	if coarse.users == 0 {
		close(coarse.stop)
		<-coarse.done
	}
}

// now returns the coarse time, a mono reading (deadlines from it go through
// timeOf, so they too are kept on the monotonic clock).
func now() int64 { return coarse.now.Load() }

// tick is one instant of the coarse clock, as a mono reading and a
// time.Time that carries a monotonic reading.
type tick struct {
	reading int64
	at      time.Time
}

// storeTick moves the coarse clock to t (its tick first: a reader of now
// finds timeOf's base no older than the reading).
func storeTick(t time.Time) {
	r := mono.Of(t)
	coarse.tick.Store(&tick{reading: r, at: t})
	coarse.now.Store(r)
}

// timeOf returns the instant of a mono reading as a time.Time without
// reading the clock (mono.Time does, and a deadline set from its result
// reads it once more: a system call on some virtual machines). Deadlines
// are set from it.
func timeOf(reading int64) time.Time {
	tk := coarse.tick.Load()
	return tk.at.Add(time.Duration(reading - tk.reading))
}
