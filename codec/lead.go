package codec

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/lifenet/lifenet/transport"
)

// lead lets the goroutines blocked in Request take turns reading the
// connection (leader/follower) on a client dialled in transport.ReceiveSync
// mode. There is no receive goroutine: the caller waiting for a reply reads
// the socket itself, so a serial request costs one wake-up, as a plain
// write-then-read loop does, instead of a hand-off from a receive goroutine.
//
// One waiter at a time holds the turn and reads; what it reads goes through
// the pipeline, which delivers every reply to its own waiter, so the others
// wait on their result channels and one of them takes the turn when the
// reader's reply has come. A request that times out is failed by the
// matcher's sweeper, which then wakes the reader (transport.Client.Wake) in
// case it was that request's own.
//
// StartReceiving ends the turns for good: a receive goroutine reads from
// then on, and the waiters wait for their replies as in event mode.
type lead struct {
	tc      *transport.Client
	held    atomic.Bool   // a goroutine holds the read turn
	waiting atomic.Int32  // goroutines parked in park: for the turn or their reply
	wake    chan struct{} // one token: the turn was given back while some waited

	// events: StartReceiving began; a turn holder reads no more, it gives
	// the turn back and waits for its reply from the receive goroutine.
	events  atomic.Bool
	promote sync.Mutex // one StartReceiving at a time

	// closing: Close was called. The transport client's Close gives the
	// read buffer back, which a turn holder may be running through the
	// pipeline (a borrowed view), so it is made by whoever holds the turn
	// next: Close itself when the turn is free, else the holder as it
	// gives the turn back (close).
	closing   atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// close closes the client without freeing the read buffer under a turn
// holder: the session ends at once (a blocked read returns, requests
// fail), and the transport client's Close runs once the turn is free. It
// never waits for the turn, so a Handler running on the holder may call
// it.
func (l *lead) close() error {
	l.closing.Store(true)
	l.tc.Session().Close()
	if !l.take() {
		return nil // the holder closes as it gives the turn back
	}
	err := l.closeTransport()
	l.give()
	return err
}

// closeTransport runs the transport client's Close, once.
func (l *lead) closeTransport() error {
	l.closeOnce.Do(func() { l.closeErr = l.tc.Close() })
	return l.closeErr
}

// take takes the read turn if nobody holds it: an atomic flag, so a lone
// caller pays no channel operation for it.
func (l *lead) take() bool { return l.held.CompareAndSwap(false, true) }

// give gives the turn back, waking a parked waiter if there is one. A
// waiter counts itself before it tries the turn and then parks, and give
// clears the flag before it looks at the count, so either the waiter's try
// sees the turn free or give sees the waiter (and leaves it a token).
func (l *lead) give() {
	l.held.Store(false)
	if l.closing.Load() && l.take() { // Close came while this goroutine held the turn: its view is done now
		l.closeTransport()
		l.held.Store(false)
	}
	if l.waiting.Load() > 0 {
		select {
		case l.wake <- struct{}{}:
		default: // a token is waiting already
		}
	}
}

// await waits for the reply on ch, reading the connection whenever it is
// this goroutine's turn; use, when not nil, gets the reply of its own read
// borrowed, with dst (see Conn.RequestBytesInto).
func (l *lead) await(ctx context.Context, c *Conn, key int, ch chan result, use ReplyUse, dst any) (any, error) {
	for {
		if len(ch) > 0 { // only this goroutine receives from ch
			return c.requests().finish(key, ch, <-ch)
		}
		if ctx.Err() != nil { // else a reader whose reads fail at once would loop
			return c.requests().abandon(ctx, key, ch)
		}
		if !l.take() {
			r, got, turn := l.park(ctx, ch)
			switch {
			case got:
				return c.requests().finish(key, ch, r)
			case !turn:
				return c.requests().abandon(ctx, key, ch)
			}
		}
		if l.events.Load() { // the receive goroutine reads, or is about to
			l.give()
			return c.requests().wait(ctx, key, ch)
		}
		c.requests().readFor(key, use, dst) // a reply of its own read reaches it without its channel
		l.readOnce(ctx, c, ch)
		r, got := c.requests().readDone()
		l.give()
		if got {
			return c.requests().finish(key, ch, r)
		}
	}
}

// park waits until this goroutine holds the turn (turn), its reply has
// come (got, with r), or ctx has ended (neither). A wake token is only a
// hint that the turn is free: it is tried for at once, so a token is never
// lost to a waiter that leaves without the turn, and when another took the
// turn first its give wakes the next.
func (l *lead) park(ctx context.Context, ch chan result) (r result, got, turn bool) {
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	for {
		if l.take() {
			return result{}, false, true
		}
		select {
		case r = <-ch:
			return r, true, false
		case <-ctx.Done():
			return result{}, false, false
		case <-l.wake:
		}
	}
}

// readOnce reads what the connection has and runs it through the
// pipeline, unless the reply came while this goroutine waited for the turn.
// A read that fails needs no handling here: ctx's end and a Wake are seen
// by await's loop, and a connection that ended has failed every pending
// request (OnClose closes the matcher).
func (l *lead) readOnce(ctx context.Context, c *Conn, ch chan result) {
	if len(ch) > 0 {
		return
	}
	p, err := l.tc.ReceiveBorrowed(ctx) // the pipeline copies what it keeps; the next read is after the turn
	if err != nil {
		return
	}
	c.read(p)
}

// drainReads bounds how many reads drain makes, so a peer that keeps
// sending cannot hold a request back.
const drainReads = 16

// drain runs what the connection has already received through the
// pipeline before a request is registered. Bytes that arrived before the
// request existed (a reply sent unasked at connect, a duplicated or late
// reply) then meet no pending request with their number and are dropped and
// counted as unknown, instead of waiting in the socket to be taken for the
// new request's reply. It reads only while the turn is free: a goroutine
// reading for others consumes such bytes as they come. A failed read needs
// no handling: the request then fails on its send.
func (l *lead) drain(c *Conn) {
	if !l.take() {
		return
	}
	defer l.give()
	for range drainReads {
		p, _ := l.tc.ReceiveBuffered()
		if p == nil {
			return
		}
		c.read(p)
		p.Release()
	}
}

// startReceiving hands the connection to a receive goroutine
// (transport.Client.StartReceiving) once it holds the turn, so that no
// waiter is reading or running a borrowed read through the pipeline
// meanwhile. events is set first: a holder woken out of its read then
// gives the turn back instead of reading again, and so does every waiter
// that takes it after; each waits on its channel, which the receive
// goroutine fills. The hand-off is never undone, and does not wait on a
// context: the turn comes back as soon as the woken reader has run its
// read through the pipeline.
func (l *lead) startReceiving() error {
	l.promote.Lock()
	defer l.promote.Unlock()
	if l.events.Load() {
		return nil
	}
	l.events.Store(true)
	l.waiting.Add(1) // before the first try: a give after it leaves a token
	for !l.take() {
		l.tc.Wake() // the holder's read returns now, not at its reply
		<-l.wake
	}
	l.waiting.Add(-1)
	err := l.tc.StartReceiving()
	l.give()
	return err
}
