package codec_test

import (
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// A push (Conn.Enqueue) never waits for the peer, even while the reader
// hands a read's replies to a session queue that is full and waits for the
// peer to take its bytes: the push waits behind the replies in the later
// queue instead of for the hand-over.
func TestPushDoesNotWaitBehindAHandOverToAFullQueue(t *testing.T) {
	cfg := transport.Config{SendQueueBytes: 64 << 10, SendStallTimeout: 3 * time.Second}
	opened := make(chan *codec.Conn, 1)
	peer := memPeer(t, cfg, codec.Options{ // the peer never reads
		Pipeline: srmpPipeline(),
		OnOpen:   func(c *codec.Conn) { opened <- c },
		Handler:  echoSRMP, // c.Reply(m, m.Payload): a reply to the lent request, buffered for the read's hand-over
	})
	c := <-opened
	push := func(n int) time.Duration {
		start := time.Now()
		if err := c.Enqueue(codec.NewMessage(codec.KindOneWay, codec.FlagPacket, 0, packet.Wrap(make([]byte, n)))); err != nil {
			t.Fatalf("push of %d bytes: %v", n, err)
		}
		return time.Since(start)
	}
	push(60 << 10) // taken by the write in progress, which blocks: the peer does not read
	waitUntil(t, "the first push taken by a write", func() bool { return c.Session().SendQueue().Messages == 0 })
	push(65530) // queued: the queue's room all but a few bytes
	// A request: its reply is buffered, then handed over, and waits for room.
	if _, err := peer.Write([]byte{0x01, 0x02, 0x01, 0x00, 'x'}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the reply waiting for room", func() bool { return c.Session().SendQueue().Waiting > 0 })
	if d := push(100); d > time.Second {
		t.Fatalf("a push took %v behind the hand-over (session %v), want no wait", d, c.Session().Reason())
	}
	if r := c.Session().Reason(); r != transport.ReasonNone {
		t.Fatalf("session ended (%v) before the stall timeout", r)
	}
}

// waitUntil polls cond for up to 5 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
