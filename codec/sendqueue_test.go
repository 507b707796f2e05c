package codec_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
	"github.com/lifenet/lifenet/internal/testutil/memnet"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// How the codec layer meets a full send queue (issue 26 F2, F3): a push
// (Conn.Enqueue) never waits for the peer, and a request waits for room
// no longer than its context. In a synctest bubble over in-memory
// connections, whose peer here never reads: net.Pipe has no socket
// buffer, so the first write blocks at once.

// deafPeer serves SRMP with cfg on an in-memory listener, connects a peer
// that never reads, and returns the server's side of that connection and
// a channel with the error it ends with.
func deafPeer(t *testing.T, cfg transport.Config) (*codec.Conn, chan error) {
	t.Helper()
	opened := make(chan *codec.Conn, 1)
	ended := make(chan error, 1)
	srv, err := codec.NewServer(cfg, codec.Options{
		Pipeline: srmpPipeline(),
		OnOpen:   func(c *codec.Conn) { opened <- c },
		OnClose:  func(_ *codec.Conn, err error) { ended <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	l := memnet.Listen("codec")
	if err := srv.Serve(l); err != nil {
		t.Fatal(err)
	}
	peer, err := l.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	peer.Write([]byte{0x01, 0x01, 0x00, 0x00}) // an empty request: the connection is open and speaking
	return <-opened, ended
}

// Enqueue hands a push to the session and returns, however little the
// peer reads: 100 pushes of 1 KiB take none of the bubble's clock, and the
// peer, its queue past SendQueueBytes with nothing written, is closed as a
// slow consumer SendStallTimeout later. (Write would have blocked on the
// first one until WriteTimeout.)
func TestEnqueueDoesNotWaitForThePeer(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		cfg := transport.Config{SendQueueBytes: 64 << 10, SendStallTimeout: time.Second}
		c, ended := deafPeer(t, cfg)
		start := time.Now()
		for i := range 100 {
			msg := codec.NewMessage(codec.KindOneWay, codec.FlagPacket, uint8(i), packet.Wrap(make([]byte, 1024)))
			if err := c.Enqueue(msg); err != nil {
				t.Fatalf("push %d: %v", i, err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("100 pushes took %v of the bubble's clock, want none", d)
		}
		err := <-ended
		if d := time.Since(start); !errors.Is(err, transport.ErrSlowConsumer) || d > cfg.SendStallTimeout*5/4 {
			t.Fatalf("ended with %v after %v, want a slow consumer within SendStallTimeout (%v) and a quarter", err, d, cfg.SendStallTimeout)
		}
	})
}

// A request that finds the send queue full waits for room as long as its
// context lets it, then fails with the context's error: the connection is
// not failed for it, and the request never left (ErrNotWritten).
func TestRequestWaitsForRoomNoLongerThanItsContext(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		const room = 4 << 10
		cfg := transport.Config{SendQueueBytes: room, SendStallTimeout: time.Second}
		c, ended := deafPeer(t, cfg)
		bg := context.Background()
		go c.RequestBytes(bg, codec.FlagPacket, make([]byte, 8<<10)) // blocks in the write
		synctest.Wait()
		go c.RequestBytes(bg, codec.FlagPacket, make([]byte, room-8)) // fills the room behind it
		synctest.Wait()
		for _, size := range []int{100, 4 << 10} { // copied into the send buffer; framed in place
			ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
			start := time.Now()
			_, err := c.RequestBytes(ctx, codec.FlagPacket, make([]byte, size))
			cancel()
			if d := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, transport.ErrNotWritten) || d != 100*time.Millisecond {
				t.Fatalf("a request of %d bytes behind a full queue: %v after %v, want the context's deadline after 100ms", size, err, d)
			}
			if r := c.Session().Reason(); r != transport.ReasonNone {
				t.Fatalf("the connection closed (%v) under a request that waited", r)
			}
		}
		if err := <-ended; !errors.Is(err, transport.ErrSlowConsumer) {
			t.Fatalf("the peer that never reads ended with %v, want a slow consumer", err)
		}
	})
}
