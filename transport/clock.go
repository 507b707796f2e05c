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
	now   atomic.Int64 // mono reading, updated every clockTick
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
	coarse.now.Store(mono.Now())
	stop, done := make(chan struct{}), make(chan struct{})
	coarse.stop, coarse.done = stop, done
	go func() {
		defer close(done)
		t := time.NewTicker(clockTick)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				coarse.now.Store(mono.Of(now))
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
// mono.Time, so they too are kept on the monotonic clock).
func now() int64 { return coarse.now.Load() }
