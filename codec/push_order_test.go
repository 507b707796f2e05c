package codec_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// A server's sends never wait for a peer that does not read (nats-server's
// slow-consumer rule): a reply queues behind the pushes the write in
// progress holds up, nothing waits for room, and once the queue would hold
// more than twice SendQueueBytes the session closes as a slow consumer and
// the send fails at once.
func TestServerSendsNeverWaitForAPeer(t *testing.T) {
	cfg := transport.Config{SendQueueBytes: 64 << 10, SendStallTimeout: time.Hour}
	opened := make(chan *codec.Conn, 1)
	peer := memPeer(t, cfg, codec.Options{ // the peer never reads
		Pipeline: srmpPipeline(),
		OnOpen:   func(c *codec.Conn) { opened <- c },
		Handler:  echoSRMP,
	})
	c := <-opened
	push := func(n int) (time.Duration, error) {
		start := time.Now()
		err := c.Enqueue(codec.NewMessage(codec.KindOneWay, codec.FlagPacket, 0, packet.Wrap(make([]byte, n))))
		return time.Since(start), err
	}
	push(60 << 10) // taken by the write in progress, which blocks: the peer does not read
	waitUntil(t, "the first push taken by a write", func() bool { return c.Session().SendQueue().Messages == 0 })
	push(65530)                                                                // queued: the queue's room all but a few bytes
	if _, err := peer.Write([]byte{0x01, 0x02, 0x01, 0x00, 'x'}); err != nil { // a request: its reply queues
		t.Fatal(err)
	}
	waitUntil(t, "the reply queued", func() bool { return c.Session().SendQueue().Messages == 2 })
	if w := c.Session().SendQueue().Waiting; w != 0 {
		t.Fatalf("%d senders wait for room", w)
	}
	d, err := push(16 << 10) // past twice the room, with what is being written
	if d > time.Second || !errors.Is(err, transport.ErrSlowConsumer) {
		t.Fatalf("a push past twice the room: %v after %v, want ErrSlowConsumer at once", err, d)
	}
	if r := c.Session().Reason(); r != transport.ReasonSlowConsumer {
		t.Fatalf("session %v, want closed as a slow consumer", r)
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
