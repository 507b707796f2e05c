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

// A session keeps the time of its last receive in 32 bits (Session.lastRx):
// a stamp, the coarse clock in units of 2²⁴ ns (16.8 ms), which wrap every
// 2.2 years. An age is a difference of stamps modulo that, right for any
// age under it, and taken one unit short: never more than the true age, so
// that nothing is idle too soon.
const stampShift = 24

// stampOf returns the stamp of mono reading t.
func stampOf(t int64) uint32 { return uint32(t >> stampShift) }

// ageAt returns how long before mono reading t the stamp was taken, at
// most (never more than the true age, up to two units less).
func ageAt(stamp uint32, t int64) time.Duration {
	d := stampOf(t) - stamp
	if d == 0 || d > 1<<31 { // the same unit, or a stamp taken after t was read (a receive meanwhile)
		return 0
	}
	return time.Duration(d-1) << stampShift
}

// rxAge returns how long before mono reading t the session last received
// (ageAt's rules).
func (s *Session) rxAge(t int64) time.Duration { return ageAt(s.lastRx.Load(), t) }

// lastRxAt returns the coarse time of the last receive, as a mono reading
// (never earlier than the true one: rxAge).
func (s *Session) lastRxAt() int64 {
	t := now()
	return t - int64(s.rxAge(t))
}
