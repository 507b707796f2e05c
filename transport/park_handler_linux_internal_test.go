//go:build linux

package transport

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/packet"
)

// parkCounter echoes, and counts its session's parks; it fails the test
// if Parked runs while Receive does.
type parkCounter struct {
	t         *testing.T
	parks     atomic.Int32
	receiving atomic.Bool
}

func (h *parkCounter) Receive(s *Session, p *packet.Packet) {
	h.receiving.Store(true)
	defer h.receiving.Store(false)
	s.SendBytes(p.Bytes())
}

func (h *parkCounter) Closed(*Session, *CloseError) {}

func (h *parkCounter) Parked(*Session) {
	if h.receiving.Load() {
		h.t.Error("Parked ran during Receive")
	}
	h.parks.Add(1)
}

// A ParkHandler is told each time its session parks: after its first
// bytes and after each later message, on the goroutine that receives.
func TestParkHandlerIsToldOfEachPark(t *testing.T) {
	leakcheck.Check(t)
	h := &parkCounter{t: t}
	srv, c := dialNewServer(t, Config{ParkAfter: 20 * time.Millisecond}, Hooks{NewHandler: func(*Session) SessionHandler { return h }})
	for i := range int32(3) {
		echoOver(t, c, "ping")
		testwait.For(t, 10*time.Second, "the session to park", func() bool {
			return srv.Stats().Parked == 1 && h.parks.Load() > i
		})
	}
}
