package codec

import (
	"testing"
	"time"

	"github.com/lifenet/lifenet/packet"
)

// A reply on a request's number that comes before the request's send fails
// (its context ended waiting for room, ErrBacklogFull, ErrDatagramTooLarge)
// must not keep the slot: no waiter will take that reply.
func TestUnregisterAfterAReplyFreesTheSlot(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		m := newMatcher(fifo, time.Second)
		t.Cleanup(func() { m.close(nil) })
		key, _ := registerTest(t, m, nil)
		p := packet.Get(1)
		// a stray reply (its kept copy owns p), then the send fails
		m.deliver(key, &Message{Kind: KindReply, Seq: uint8(key), Payload: p, borrowed: true})
		if !m.unregister(key, false) {
			t.Errorf("fifo=%v: unregister of a blocking request reported its outcome as had", fifo)
		}
		if got := m.stats().InFlight; got != 0 {
			t.Errorf("fifo=%v: InFlight = %d after the request failed to send, want 0 (slot %d state %d)", fifo, got, key, m.slots[key].state)
		}
	}
}

// FIFO: the sweeper fails a request (done, still queued), its late reply
// comes before the waiter takes the timeout (popped from the queue), then
// the waiter comes back: the slot must be freed, since no reply is left to
// line up with it.
func TestFIFOReplyAfterTheSweepersTimeoutFreesTheSlot(t *testing.T) {
	base := int64(1_000_000_000_000)
	m := newTestFIFOMatcher(t, base)
	key, ch := registerTest(t, m, nil)
	m.expire(base + int64(2*time.Second)) // ErrTimeout into ch
	p := packet.Get(1)
	m.deliver(0, p) // its reply, just late
	p.Release()
	if _, err := m.finish(key, ch, <-ch); err != ErrTimeout {
		t.Fatalf("finish: %v, want ErrTimeout", err)
	}
	if got := m.stats().InFlight; got != 0 {
		t.Fatalf("InFlight = %d with nothing pending and the queue empty; slot %d state %d", got, key, m.slots[key].state)
	}
	// A timed-out request still queued stays abandoned, so the next reply lines up.
	m.sweeper = true // the expire above, finding nothing left, stopped it; the test keeps the clock
	key, ch = registerTest(t, m, nil)
	m.expire(base + int64(4*time.Second))
	m.finish(key, ch, <-ch)
	if m.slots[key].state != slotAbandoned || m.stats().InFlight != 1 {
		t.Fatalf("a queued timed-out request: state %d, InFlight %d; want abandoned, 1", m.slots[key].state, m.stats().InFlight)
	}
}

// FIFO: a request the sweeper timed out before its send failed leaves the
// queue too, or the next reply would be taken for it and the connection
// would answer every later request with the reply before its own.
func TestFIFOUnregisterAfterTheSweepersTimeoutLeavesTheQueue(t *testing.T) {
	base := int64(1_000_000_000_000)
	m := newTestFIFOMatcher(t, base)
	key, _ := registerTest(t, m, nil)
	m.expire(base + int64(2*time.Second)) // ErrTimeout into its channel, still queued
	m.unregister(key, false)              // its send then failed
	if got := m.stats().InFlight; got != 0 || m.queued.Load() != 0 {
		t.Fatalf("InFlight %d, queued %d after the request failed to send; want 0, 0", got, m.queued.Load())
	}
}

// An asynchronous request whose callback had its outcome before its send
// failed (a stray reply on its number; the sweeper's timeout) is not
// reported failed as well: unregister says so, and the slot and the FIFO
// queue are left clean.
func TestUnregisterAfterTheCallbackRanReportsItOnce(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		base := int64(1_000_000_000_000)
		m := testMatcher(t, fifo, base)
		calls := 0
		cb := &callback{pkt: func(_ *packet.Packet, err error) { calls++ }}
		key, _ := registerTest(t, m, cb)
		p := packet.Get(1)
		m.deliver(key, p) // a stray reply: the callback runs
		p.Release()
		if m.unregister(key, true) || calls != 1 || m.stats().InFlight != 0 {
			t.Errorf("fifo=%v, a stray reply first: unregister undid it, or %d callback calls, InFlight %d", fifo, calls, m.stats().InFlight)
		}
		items := 0
		stream := &callback{stream: func(*Message, error) StreamStep { items++; return StreamMore }}
		key, _ = registerTest(t, m, stream)
		m.deliver(key, &Message{Kind: KindReply, Seq: uint8(key), borrowed: true}) // a stray item: the stream goes on
		if m.unregister(key, true) || items != 1 {
			t.Errorf("fifo=%v, a stream's stray item first: unregister undid it, or %d items", fifo, items)
		}
		key, _ = registerTest(t, m, cb)
		m.expire(base + int64(2*time.Second)) // the callback gets ErrTimeout
		if m.unregister(key, true) || calls != 2 || m.queued.Load() != 0 {
			t.Errorf("fifo=%v, timed out first: unregister undid it, or %d callback calls, %d queued", fifo, calls, m.queued.Load())
		}
	}
}
