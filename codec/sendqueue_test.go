package codec_test

import (
	"context"
	"errors"
	"net"
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
	peer := memPeer(t, cfg, codec.Options{
		Pipeline: srmpPipeline(),
		OnOpen:   func(c *codec.Conn) { opened <- c },
		OnClose:  func(_ *codec.Conn, err error) { ended <- err },
	})
	peer.Write([]byte{0x01, 0x01, 0x00, 0x00}) // an empty request: the connection is open and speaking
	return <-opened, ended
}

// memPeer serves opts with cfg on an in-memory listener (inside the bubble
// that calls it, if any) and returns a peer connected to it; the test's
// cleanup closes both.
func memPeer(t *testing.T, cfg transport.Config, opts codec.Options) net.Conn {
	t.Helper()
	srv, err := codec.NewServer(cfg, opts)
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
	return peer
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

// A push keeps its kind through every stage of a pipeline: through two
// stages that pass it on to the framing stage, pushes from four goroutines
// at once (the first of them make the stages' contexts for such writes)
// take none of the bubble's clock either, and the peer that reads none is
// closed as a slow consumer.
func TestEnqueueThroughStagesDoesNotWaitForThePeer(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		cfg := transport.Config{SendQueueBytes: 64 << 10, SendStallTimeout: time.Second}
		pass := func() codec.Handler { return passThrough{} }
		opened := make(chan *codec.Conn, 1)
		ended := make(chan error, 1)
		peer := memPeer(t, cfg, codec.Options{
			Pipeline: codec.NewPipeline(codec.SRMPFraming(codec.FramerConfig{}), pass, pass),
			OnOpen:   func(c *codec.Conn) { opened <- c },
			OnClose:  func(_ *codec.Conn, err error) { ended <- err },
		})
		peer.Write([]byte{0x01, 0x01, 0x00, 0x00})
		c := <-opened
		start := time.Now()
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				for i := range 25 {
					msg := codec.NewMessage(codec.KindOneWay, codec.FlagPacket, uint8(i), packet.Wrap(make([]byte, 1024)))
					if err := c.Enqueue(msg); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatalf("push: %v", err)
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
// not failed for it, and the request never left (ErrNotWritten). Over TCP
// with small socket buffers to a peer that never reads (requests keep
// their reply channels in a pool no synctest bubble may touch), with
// SendStallTimeout far beyond the contexts: a request that waited for room
// unbounded by its context would end only with the stall.
func TestRequestWaitsForRoomNoLongerThanItsContext(t *testing.T) {
	leakcheck.Check(t)
	const room, wait = 4 << 10, 200 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.(*net.TCPConn).SetReadBuffer(4 << 10)
			accepted <- c // never read
		}
	}()
	cfg := transport.ClientConfig{}
	cfg.SendQueueBytes, cfg.SendStallTimeout, cfg.SocketSendBuffer = room, 10*time.Second, 4<<10
	c, err := codec.Dial(context.Background(), "tcp", ln.Addr().String(), cfg, codec.Options{Pipeline: srmpPipeline()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer (<-accepted).Close()
	bg, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	go c.RequestBytes(bg, codec.FlagPacket, make([]byte, 8<<20)) // blocks in the write: more than the sockets hold
	// Fill the room behind it (a 4-byte header and the payload). A filler
	// that finds no write in progress yet (the big one not started) is
	// written at once into the socket buffers; the next one tries again.
	q := func() int { return c.Conn().Session().QueuedBytes() }
	for deadline := time.Now().Add(10 * time.Second); q() < room; {
		if time.Now().After(deadline) {
			t.Fatalf("queued %d bytes, want %d", q(), room)
		}
		go c.RequestBytes(bg, codec.FlagPacket, make([]byte, room-4))
		for wait := time.Now().Add(200 * time.Millisecond); q() < room && time.Now().Before(wait); {
			time.Sleep(time.Millisecond)
		}
	}
	for _, size := range []int{100, 4 << 10} { // copied into the send buffer; framed in place
		start := time.Now() // before the context: its deadline is wait after it was made
		ctx, cancel := context.WithTimeout(bg, wait)
		full := q() >= room // a loaded machine may drain some of the queue into the socket first: the request is then written and waits for its reply instead
		_, err := c.RequestBytes(ctx, codec.FlagPacket, make([]byte, size))
		cancel()
		full = full && q() >= room // full throughout: the request cannot have been written
		if d := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || (full && !errors.Is(err, transport.ErrNotWritten)) || d < wait || d > wait+2*time.Second {
			t.Fatalf("a request of %d bytes behind a full queue: %v after %v, want the context's deadline after %v", size, err, d, wait)
		}
		if r := c.Conn().Session().Reason(); r != transport.ReasonNone {
			t.Fatalf("the connection closed (%v) under a request that waited", r)
		}
	}
}
