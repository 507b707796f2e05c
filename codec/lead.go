package codec

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/lifenet/lifenet/packet"
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

	x exchanged // the turn holder's request in an exchange (startSync)
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
// this goroutine's turn; use, when it takes the reply (see replyUse), gets
// the reply of its own read borrowed.
func (l *lead) await(ctx context.Context, c *Conn, key int, ch chan result, use replyUse) (any, error) {
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
		c.requests().readFor(key, use) // a reply of its own read reaches it without its channel
		l.readOnce(ctx, c, ch)
		r, got := c.requests().readDone()
		l.give()
		if got { // its slot freed by deliver
			return r.reply, r.err
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

// callSync is Conn.call on a ReceiveSync client's connection: startSync,
// then await, unless the exchange brought the reply already.
func (c *Conn) callSync(ctx context.Context, l *lead, echo []byte, fifo bool, flag uint8, body []byte, p *packet.Packet, use replyUse) (any, error) {
	key, ch, r, got, err := c.startSync(ctx, l, echo, fifo, flag, body, p, use)
	switch {
	case err != nil:
		return nil, err
	case got: // its slot freed by deliver
		return r.reply, r.err
	}
	return l.await(ctx, c, key, ch, use)
}

// startSync starts a blocking request on a ReceiveSync client's
// connection (use as for Conn.call), and
// returns its result too when the exchange brought it (got). When the
// read turn is free it takes it and sends the request in
// an exchange (transport.Client.Exchange): what the connection received
// before the request existed (a reply sent unasked at connect, a
// duplicated or late reply) goes through the pipeline first and, the
// request hidden from the matcher meanwhile, is dropped and counted as
// unknown instead of being taken for its reply; then the request is sent,
// and the read that waits for its reply is the one that looked for stale
// bytes, with no system call between. The first bytes of the answer go
// through the pipeline before it returns; a reply of its own found there
// is returned. When another goroutine holds the turn,
// it consumes such bytes as they come, and the request is only sent.
func (c *Conn) startSync(ctx context.Context, l *lead, echo []byte, fifo bool, flag uint8, body []byte, p *packet.Packet, use replyUse) (key int, ch chan result, r result, got bool, err error) {
	held := fifo // this call holds the matcher's fifoMu, from before register until the request is written
	if fifo {
		mu := &c.requests().fifoMu
		mu.Lock()
		defer func() {
			if held {
				mu.Unlock()
			}
		}()
	}
	size := len(body)
	if p != nil {
		size += p.Total()
	}
	small := size <= exchangeMax
	if !small && l.take() { // stale bytes first, before the request is registered; then it is sent without the turn
		l.drainStale(c)
		l.give()
	}
	m := c.requests()
	key, ch, _, err = m.register(ctx, nil, echo)
	if err != nil {
		p.Release()
		return 0, nil, r, false, acquireError(err)
	}
	if small && l.take() {
		if !l.events.Load() { // else the receive goroutine reads, or is about to
			var sent bool
			sent, r, got, err = l.exchange(ctx, c, m, key, &held, flag, body, p, use) // gives the turn back
			if sent {
				key, ch, err = c.sent(m, key, ch, err)
				return key, ch, r, got, err
			}
		} else {
			l.give()
		}
	}
	key, ch, err = c.sent(m, key, ch, c.send(ctx, key, fifo, flag, body, p))
	return key, ch, r, false, err
}

// exchangeMax is the largest request sent in an exchange, with the read
// turn held: a send that may block (a large request the peer's reading
// of cannot keep up with, while its replies to the other callers back up)
// must not hold the turn those replies need, or both ends wait on each
// other. A larger request is sent as another caller's is, after stale
// bytes are drained (drainStale).
const exchangeMax = 16 << 10

// drainStale runs through the pipeline what the connection has received
// and nobody has read, before a large request is registered (so that a
// stale reply cannot be taken for its answer): at most exchangeStaleReads
// reads that do not wait. The caller holds the turn.
func (l *lead) drainStale(c *Conn) {
	for range exchangeStaleReads {
		p, _ := l.tc.ReceiveBuffered() // an error shows again in the next receive
		if p == nil {
			return
		}
		c.read(p)
		p.Release()
	}
}

// exchangeStaleReads bounds drainStale's reads, as transport's exchange
// bounds its own: a peer that keeps sending cannot hold a request back.
const exchangeStaleReads = 16

// sent ends the start of a blocking request whose send returned err.
func (c *Conn) sent(m *matcher, key int, ch chan result, err error) (int, chan result, error) {
	if err != nil {
		if !m.unregister(key, false) {
			return key, ch, nil // the outcome came first (a stray reply, a timeout, the close): reported once
		}
		return 0, nil, sendError(err)
	}
	return key, ch, nil
}

// exchanged is the request a turn holder sends in an exchange; only the
// turn holder uses it.
type exchanged struct {
	c    *Conn
	ctx  context.Context
	key  int
	fifo bool
	flag uint8
	body []byte // a copy of the caller's payload, which may live on its stack
	p    *packet.Packet
	sent bool
	err  error // the send's
}

// Stale runs bytes received before the request through the pipeline.
func (x *exchanged) Stale(p *packet.Packet) { x.c.read(p) }

// Send sends the request, visible to the matcher from now on.
func (x *exchanged) Send() error {
	x.sent = true
	c := x.c
	c.requests().hidden = -1
	x.err = c.send(x.ctx, x.key, x.fifo, x.flag, x.body, x.p)
	if x.fifo {
		c.requests().fifoMu.Unlock() // written: the next FIFO request may register
	}
	return x.err
}

// exchange sends request key in an exchange with the turn held, runs the
// first bytes of the answer through the pipeline, and gives the turn
// back. sent reports that the request's send ran, err its error; unsent,
// p is still the caller's to send. got reports that the answer's first
// bytes held the request's reply: r is its result, and deliver has freed
// its slot. A read that fails needs no handling
// here: await sees ctx's end, a Wake, and the close (which failed every
// pending request).
func (l *lead) exchange(ctx context.Context, c *Conn, m *matcher, key int, held *bool, flag uint8, body []byte, p *packet.Packet, use replyUse) (sent bool, r result, got bool, err error) {
	ended := false
	defer func() {
		m.hidden = -1
		if !ended { // a panic: the Handler's, on stale bytes or the answer's
			m.readDone()
		}
		if !ended && !l.x.sent { // before the send: the request never left
			m.forget(key)
			l.x.p.Release()
			l.x.ctx, l.x.p = nil, nil
		}
		l.give()
	}()
	x := &l.x
	x.c, x.ctx, x.key, x.fifo, x.flag, x.body, x.p, x.sent, x.err = c, ctx, key, *held, flag, append(x.body[:0], body...), p, false, nil
	m.hidden = key
	q, _ := l.tc.Exchange(ctx, x)
	sent, err = x.sent, x.err
	if sent {
		*held = false // Send gave the matcher's fifoMu up (a FIFO request's), before anything that may panic
	}
	x.ctx, x.p, x.err = nil, nil, nil
	if sent && err == nil && q != nil {
		m.readFor(key, use) // a reply of its own read reaches it without its channel
		c.read(q)
		r, got = m.readDone()
	}
	ended = true
	return sent, r, got, err
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
