package transport

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/packet"
)

// syncReader is the receive side of a [ReceiveSync] client: Receive reads the
// socket on the caller's goroutine, so a request/response loop pays no
// goroutine hand-off per message (NewLife's synchronous Receive).
type syncReader struct {
	mu   sync.Mutex     // one Receive at a time; guards everything below but watch*
	buf  *packet.Packet // read buffer, kept between calls unless handed out (or shared: see buffer)
	loan packet.Loan    // ReceiveBorrowed's view of buf
	now  nowReader      // ReceiveBuffered's read without waiting
	ex   exchange       // Exchange's state

	// The context whose cancellation interrupts the read. A context seen
	// on two calls in a row stays armed between calls, so a loop that
	// passes the same context each time arms it once and then allocates
	// nothing; a context used once is disarmed when its call returns, so
	// cancelling it afterwards costs nothing.
	watchMu   sync.Mutex // guards watched, stopWatch and the read deadline against the callback and Wake
	watched   watchKey
	stopWatch func() bool
	previous  watchKey // the context of the previous call
	settled   bool     // previous and watched are both a context that never ends: nothing to arm (mu)

	woken atomic.Bool // Wake was called: the read deadline is in the past

	// limited is the read deadline limit set last (watchMu), zero once
	// anything else has moved the deadline: a receive timeout from a call,
	// plus a 32nd of it, so that it serves the calls that come soon after.
	limited time.Time

	// handedOff: StartReceiving gave the connection to a receive
	// goroutine, which now reads and finishes the session. Set once, under
	// mu and watchMu; every entry point of this reader checks it under
	// one of them, so none reads, moves the read deadline or finishes the
	// session after the hand-off.
	handedOff atomic.Bool

	ended sync.Once // the session's finish ran
}

// watchKey identifies what cancels a context: its Done channel and its
// deadline (comparing contexts themselves could panic on exotic types).
type watchKey struct {
	done     <-chan struct{}
	deadline time.Time
	set      bool // the zero key matches nothing
}

// errNotSync is ReceiveBorrowed's error in the other modes.
var errNotSync = errors.New("transport: ReceiveBorrowed needs ReceiveSync mode")

// errHandedOff is the error of the sync-mode receives after StartReceiving.
var errHandedOff = errors.New("transport: a receive goroutine reads this client (StartReceiving)")

// ReceiveBorrowed is Receive for a [ReceiveSync] caller that is done with
// the bytes before it receives again: it returns a borrowed view
// (packet.Loan) of the client's read buffer, with no copy and no packet
// from the pool, valid until the next Receive, ReceiveBuffered or
// ReceiveBorrowed on the client, or its Close, none of which the caller
// may let run before it is done (they would overwrite the bytes; Close
// gives the buffer back to the pool). Keep the view, or a
// part, to hold it longer: a share kept makes the next read take a new
// buffer. Releasing it does nothing. Errors are Receive's; in the other
// modes it fails at once.
func (c *Client) ReceiveBorrowed(ctx context.Context) (*packet.Packet, error) {
	if c.sync == nil {
		return nil, errNotSync
	}
	return c.receiveSync(ctx, true)
}

// receiveSync reads the next bytes (stream) or datagram from the socket,
// as a packet of the caller's own, or as a borrowed view of the read
// buffer when lend is set (see ReceiveBorrowed).
func (c *Client) receiveSync(ctx context.Context, lend bool) (*packet.Packet, error) {
	r := c.sync
	r.mu.Lock()
	if r.handedOff.Load() {
		r.mu.Unlock()
		return nil, errHandedOff
	}
	r.loan.End() // the previous borrowed view, if any, is over
	n, err := r.read(ctx, c)
	var p *packet.Packet
	switch {
	case n == 0:
	case lend:
		c.sess.Load().received(n)
		p = r.loan.Lend(r.buf, 0, n)
	default:
		p = r.take(c.sess.Load(), n)
	}
	r.mu.Unlock()
	return p, err
}

// read reads into the read buffer and returns how many bytes came, or the
// error. The caller holds r.mu. (Apart from receiveSync so that each has
// few enough returns for its deferred calls to be open-coded.)
func (r *syncReader) read(ctx context.Context, c *Client) (int, error) {
	s := c.sess.Load() // a ReceiveSync client never reconnects: fixed after Dial
	if s.Reason() != ReasonNone {
		r.end(s)
		return 0, s.closedErr()
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !r.watch(ctx, s) {
		defer r.unwatch()
	}
	until, err := r.limit(ctx, s, c.cfg.ReceiveTimeout)
	if err != nil {
		return 0, err
	}
	if r.takeWoken() { // after watch and limit: their deadlines must not undo a Wake
		return 0, ErrWoken
	}
	n, err := s.conn.Read(r.buffer(c.cfg.ReadBufferSize).Bytes())
	if n > 0 {
		return n, nil // an error comes again with the next read
	}
	if err == nil { // an empty datagram: the peer ended the session
		s.closeWith(ReasonPeerClosed, nil)
	}
	return r.readEnded(ctx, s, until, err)
}

// readEnded is what a read that got no byte returns for its error err (a
// read and an exchange share it): at a deadline, the caller's context's
// end, a Wake or the receive timeout (until: the deadline limit set);
// otherwise the session's close, which it starts. The caller holds r.mu.
func (r *syncReader) readEnded(ctx context.Context, s *Session, until time.Time, err error) (int, error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			return 0, context.DeadlineExceeded
		}
		if r.takeWoken() {
			return 0, ErrWoken
		}
		if !until.IsZero() { // limit set this call's deadline: nothing else moved it
			return 0, ErrReceiveTimeout
		}
	}
	s.closeWith(s.readReason(err, true), causeOf(err))
	r.end(s)
	return 0, s.closedErr()
}

// buffer returns the read buffer, a new one when there is none or when a
// receiver of a borrowed view kept a share of it (its bytes must stay).
// The caller holds r.mu.
func (r *syncReader) buffer(size int) *packet.Packet {
	if r.buf != nil && r.buf.RefCount() > 1 {
		r.buf.Release()
		r.buf = nil
	}
	if r.buf == nil {
		r.buf = packet.Get(size)
	}
	return r.buf
}

// take returns the n bytes read as a packet the caller owns: short reads
// are copied into a fitted buffer and the read buffer kept, long ones take
// the read buffer itself (the policy of [CopyThreshold]).
func (r *syncReader) take(s *Session, n int) *packet.Packet {
	s.received(n)
	if n < CopyThreshold {
		p := packet.Get(n)
		copy(p.Bytes(), r.buf.Bytes()[:n])
		return p
	}
	p := r.buf
	p.Resize(n)
	r.buf = nil
	return p
}

// watch makes ctx's deadline the read deadline and arms an interrupt for
// ctx's cancellation, unless the same context is armed already. It
// reports whether the watch should stay armed after this call.
func (r *syncReader) watch(ctx context.Context, s *Session) (keep bool) {
	done := ctx.Done()
	key := watchKey{done: done, set: true}
	key.deadline, _ = ctx.Deadline()
	if r.settled && done == nil && key.deadline.IsZero() {
		return true // the loop of a context that never ends, again: no key to compare
	}
	keep = key.same(r.previous)
	r.previous = key
	if key.same(r.watched) {
		r.settled = key.never()
		return true
	}
	r.unwatch()
	r.watchMu.Lock()
	s.conn.SetReadDeadline(key.deadline) // also clears an earlier interrupt
	r.watched, r.limited = key, time.Time{}
	r.watchMu.Unlock()
	if key.done == nil {
		r.settled = key.never()
		return true
	}
	stop := context.AfterFunc(ctx, func() {
		r.watchMu.Lock()
		defer r.watchMu.Unlock()
		if key.same(r.watched) { // not replaced by a later context meanwhile
			s.conn.SetReadDeadline(interrupted)
			r.limited = time.Time{}
		}
	})
	r.watchMu.Lock()
	r.stopWatch = stop
	r.watchMu.Unlock()
	return keep
}

// limit sets the read deadline to at least this call's receive timeout
// ahead (or to ctx's deadline, if that comes first) and returns it; zero
// means no timeout. It runs on every call, after watch, because each
// call's timeout starts anew, but it moves the deadline only when the one
// set is nearer than the timeout, and then to a 32nd of the timeout
// beyond: a serial caller's receives arm a runtime timer once in many
// (a receive waits at least the timeout, and at most 1/32 more). A
// cancellation whose interrupt the move may have overwritten is returned
// as ctx's error: the interrupt is set under watchMu after ctx is done,
// so either it comes after the move or ctx.Err() already says so.
func (r *syncReader) limit(ctx context.Context, s *Session, timeout time.Duration) (time.Time, error) {
	if timeout <= 0 {
		return time.Time{}, nil
	}
	want := time.Now().Add(timeout)
	r.watchMu.Lock()
	until := r.limited
	if d, ok := ctx.Deadline(); ok && d.Before(want) {
		until = d
	} else if until.Before(want) {
		until = want.Add(timeout / limitSlack)
	}
	if !until.Equal(r.limited) {
		s.conn.SetReadDeadline(until)
		r.limited = until
	}
	r.watchMu.Unlock()
	return until, ctx.Err()
}

// limitSlack: a receive timeout's deadline serves the calls of the next
// 1/limitSlack of it (see limit).
const limitSlack = 32

// unwatch disarms the interrupt. The next call sets the read deadline
// afresh, which also clears an interrupt that fired meanwhile.
func (r *syncReader) unwatch() {
	r.settled = false
	r.watchMu.Lock()
	if r.stopWatch != nil {
		r.stopWatch()
	}
	r.watched, r.stopWatch = watchKey{}, nil
	r.watchMu.Unlock()
}

// never reports a context that can never end: no Done channel, no
// deadline.
func (k watchKey) never() bool { return k.done == nil && k.deadline.IsZero() }

func (k watchKey) same(o watchKey) bool {
	return k.set && o.set && k.done == o.done && k.deadline.Equal(o.deadline)
}

// end finishes the session once (OnClose, counters) and drops the buffer
// and the context watch. The caller holds r.mu.
func (r *syncReader) end(s *Session) {
	r.ended.Do(func() {
		r.unwatch()
		if r.buf != nil {
			r.buf.Release()
			r.buf = nil
		}
		s.finish()
	})
}

// Wake makes a Receive blocked in [ReceiveSync] mode return [ErrWoken] at once
// (or the next Receive, when none is blocked), without closing the
// connection or losing data: a goroutine reading on behalf of others (a
// codec client's requests) can be called away to notice something else,
// such as a request timing out. It does nothing in other modes. Safe for
// concurrent use.
func (c *Client) Wake() {
	r := c.sync
	if r == nil {
		return
	}
	r.watchMu.Lock() // one step for watch: it cannot re-arm between the two
	if !r.handedOff.Load() {
		r.woken.Store(true)
		c.sess.Load().conn.SetReadDeadline(interrupted)
		r.limited = time.Time{}
	}
	r.watchMu.Unlock()
}

// takeWoken consumes a Wake. The read deadline it moved is restored by the
// next call's watch, which unwatch forces. It runs after watch has set the
// deadline, so a Wake that the deadline overwrote is still seen here.
func (r *syncReader) takeWoken() bool {
	if !r.woken.Load() || !r.woken.Swap(false) {
		return false
	}
	r.unwatch()
	return true
}

// close closes a [ReceiveSync] client's session ([ReasonLocal], unless it was
// closing already) and finishes it once any Receive in progress has
// returned; after StartReceiving the receive goroutine finishes it.
func (r *syncReader) close(s *Session) {
	s.closeWith(ReasonLocal, nil)
	r.mu.Lock()
	if !r.handedOff.Load() {
		r.end(s)
	}
	r.mu.Unlock()
}

// StartReceiving ends a [ReceiveSync] client's sync mode: from now on a
// receive goroutine reads the connection and hands what it reads to the
// hooks, as in [ReceiveEvent] mode (the session's handler, OnClose when it
// ends), and Receive, ReceiveBorrowed and ReceiveBuffered fail or find
// nothing; Wake does nothing. It is for a protocol layer that learns only
// after Dial that it needs reads nobody waits for (a stream, a push): a
// request/response loop pays no goroutine hand-off until then. A Receive
// blocked when it is called returns at once (as after Wake) with nothing
// lost. The caller must be done with any view ReceiveBorrowed returned,
// and must have run through its pipeline what earlier receives returned:
// the receive goroutine's first read follows them. It fails with the
// session's close error when the connection has ended, ErrClosed once
// the client is closed, and does nothing in the other modes or when
// called again. Safe for concurrent use.
func (c *Client) StartReceiving() error {
	r := c.sync
	if r == nil {
		return nil
	}
	c.Wake() // a Receive blocked in its read gives r.mu up
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handedOff.Load() {
		return nil
	}
	s := c.sess.Load()
	if s.Reason() != ReasonNone { // the session ended unseen: finish it here, as a Receive would
		r.end(s)
		return s.closedErr()
	}
	c.mu.Lock() // after r.mu, as a Receive that finishes the session takes them (retire)
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed // Close finishes the session
	}
	r.handOff(s) // a session that ends from now on ends the goroutine's read, which finishes it
	c.wg.Add(1)  // under c.mu: a Close after this sees handedOff and waits for the goroutine
	go c.run(s)
	return nil
}

// handOff disarms the reader for the receive goroutine: no context watch,
// no Wake pending, no read deadline, no buffer. The caller holds r.mu.
func (r *syncReader) handOff(s *Session) {
	r.unwatch()
	r.watchMu.Lock()
	r.handedOff.Store(true)
	r.woken.Store(false)
	s.conn.SetReadDeadline(time.Time{}) // undoes a Wake's interrupt
	r.watchMu.Unlock()
	r.loan.End()
	if r.buf != nil {
		r.buf.Release()
		r.buf = nil
	}
}
