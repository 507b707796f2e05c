//go:build linux

package transport_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/testwait"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// parkCounter echoes, and counts its session's parks; it fails the test
// if Parked runs while Receive does.
type parkCounter struct {
	t         *testing.T
	parks     atomic.Int32
	receiving atomic.Bool
}

func (h *parkCounter) Receive(s *transport.Session, p *packet.Packet) {
	h.receiving.Store(true)
	defer h.receiving.Store(false)
	s.SendBytes(p.Bytes())
}

func (h *parkCounter) Closed(*transport.Session, *transport.CloseError) {}

func (h *parkCounter) Parked(*transport.Session) {
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
	srv, err := transport.NewServer(parkConfig(), transport.Hooks{NewHandler: func(*transport.Session) transport.SessionHandler { return h }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	a, err := srv.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", a.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	for i := range int32(3) {
		roundTrip(t, c, "ping")
		testwait.For(t, 10*time.Second, "the session to park", func() bool {
			return srv.Stats().Parked == 1 && h.parks.Load() > i
		})
	}
}
