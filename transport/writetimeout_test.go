package transport_test

import (
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/transport"
)

// WriteTimeout bounds each write call, and a large batch goes out in calls
// of 256 KiB: a peer that keeps reading (640 KiB/s, each piece taken in
// 0.4 s) is never cut, however long the whole batch takes.
func TestWriteTimeoutSparesASteadyReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const big = 4 << 20 // 6.4 s at the reader's pace
		cfg := transport.Config{WriteTimeout: time.Second, SendStallTimeout: 10 * time.Second}
		dial, opened := memServer(t, cfg, transport.Hooks{})
		c := dial()
		s := <-opened
		errc := make(chan error, 1)
		go func() { errc <- s.SendBytes(make([]byte, big)) }()
		buf := make([]byte, 64<<10)
		for got := 0; got < big; {
			time.Sleep(100 * time.Millisecond)
			n, err := io.ReadFull(c, buf)
			got += n
			if err != nil {
				t.Fatalf("after %d of %d bytes: %v; session %v", got, big, err, s.Reason())
			}
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	})
}

// A peer that resets its connection while the server writes to it closed
// it: the session's reason is the peer's, whichever side notices first.
func TestResetDuringWriteIsPeerClosed(t *testing.T) {
	reasons := make(chan transport.Reason, 64)
	_, a := startServer(t, transport.Config{}, transport.Hooks{
		OnOpen: func(s *transport.Session) {
			go func() {
				b := make([]byte, 1<<20)
				for s.SendBytes(b) == nil {
				}
			}()
		},
		OnClose: func(_ *transport.Session, e *transport.CloseError) { reasons <- e.Reason },
	}, "tcp", "127.0.0.1:0")
	counts := map[transport.Reason]int{}
	for range 20 {
		c := dial(t, "tcp", a)
		buf := make([]byte, 4096)
		if _, err := io.ReadFull(c, buf); err != nil { // the server writes
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetLinger(0) // close with a reset
		c.Close()
		counts[<-reasons]++
	}
	if counts[transport.ReasonPeerClosed] != 20 {
		t.Fatalf("reasons of 20 resets during writes: %v, want all %v", counts, transport.ReasonPeerClosed)
	}
}
