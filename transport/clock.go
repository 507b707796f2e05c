package transport

import (
	"sync"
	"sync/atomic"
	"time"
)

// clockTick is the resolution of the coarse clock that drives idle and write
// deadlines, so that hot paths never call time.Now.
const clockTick = 250 * time.Millisecond

// coarse is a process-wide clock that ticks while at least one server or
// client holds it, and stops (with its goroutine) when the last one lets go.
var coarse struct {
	now   atomic.Int64 // unix nanoseconds, updated every clockTick
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
	coarse.now.Store(time.Now().UnixNano())
	stop, done := make(chan struct{}), make(chan struct{})
	coarse.stop, coarse.done = stop, done
	go func() {
		defer close(done)
		t := time.NewTicker(clockTick)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				coarse.now.Store(now.UnixNano())
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

// now returns the coarse time in unix nanoseconds.
func now() int64 { return coarse.now.Load() }
