package codec

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/internal/mono"
	"github.com/lifenet/lifenet/packet"
)

// In-flight limits per connection: SRMP has 256 sequence numbers (one
// request may not reuse a number still in flight), NewLife's match queue
// has 256 slots.
const (
	MaxInFlightSRMP = 255
	MaxInFlightFIFO = 256
)

// DefaultRequestTimeout applies when a request's context has no earlier
// deadline (NewLife MessageCodec.Timeout, 30 s).
const DefaultRequestTimeout = 30 * time.Second

// sweepEvery is how often expired requests are failed.
const sweepEvery = 50 * time.Millisecond

// reuseHold: a number whose previous request was sent this recently, and
// so had its reply even more recently, counts in MatchStats.Reused when
// it is given out with more than half the numbers taken.
const reuseHold = time.Second

// callback is a RequestAsync callback of either format, or a
// RequestStream callback.
type callback struct {
	msg    func(*Message, error)
	pkt    func(*packet.Packet, error)
	stream func(*Message, error) StreamStep
}

// call runs the callback with a borrowed reply or an error; more is false
// unless a stream's callback asks for more replies.
func (cb *callback) call(reply any, err error) (more bool) {
	switch {
	case cb.msg != nil:
		m, _ := reply.(*Message)
		cb.msg(m, err)
	case cb.pkt != nil:
		p, _ := reply.(*packet.Packet)
		cb.pkt(p, err)
	default:
		m, _ := reply.(*Message)
		return cb.stream(m, err) == StreamMore && err == nil
	}
	return false
}

// MatchStats counts what the matcher dropped and what it holds.
type MatchStats struct {
	Unknown  uint64 // replies matching no pending request (late, duplicate, never asked); released
	TimedOut uint64 // requests failed with ErrTimeout
	InFlight int    // numbers (SRMP) or queue places (FIFO) taken now: pending requests, and timed-out ones still in quarantine
	// Reused (SRMP) counts requests given a sequence number whose previous
	// reply came less than about a round trip before: fewer replies had
	// come since than requests were in flight, and its previous request
	// was sent under a second before. A duplicate of that reply arriving
	// then would be taken for the new request's. Numbers are given out
	// least recently freed first, so this is every request sent while more
	// than 128 numbers are taken (timed-out ones in quarantine included)
	// on a busy connection (see docs/reliability.md, issue 26 F6).
	Reused uint64
}

// Slot states.
const (
	slotFree       = iota
	slotPending    // waiting for its reply
	slotDone       // a blocking waiter's result is in ch; the waiter frees the slot
	slotAbandoned  // FIFO only: timed out or canceled, still queued so its late reply lines up
	slotQuarantine // SRMP only: timed out or canceled; its number is not reused until its late reply comes or the quarantine ends
	slotLeft       // SRMP streams only: left before their end (by the consumer or a timeout); late replies are dropped and each moves the quarantine's end on
)

// waiter is one slot: 48 bytes, its small fields packed at the end (a
// connection with 255 requests in flight walks 12 KiB of them).
type waiter struct {
	deadline int64 // unix nanoseconds
	ch       chan result
	cb       callback
	gen      uint32 // counts the slot's uses, so a stream's reader finds whether its slot is still its own
	state    uint8
	async    bool  // cb is set: a RequestAsync or RequestStream
	echo     uint8 // RequestBytesPrefixed: how many bytes of echoes[key] the reply must start with
	streamed bool  // a stream's callback has had an item: a failed send is no longer the caller's to report
}

type result struct {
	reply    any
	err      error
	answered bool // the peer answered (an error reply included): the number is free at once
}

// matcher pairs replies with requests on one connection. SRMP keys
// requests by sequence number. A request takes the number that has been
// free longest (the front of a ring of free numbers, to whose back a freed
// one goes), so a number whose reply came is given out again only after
// every number freed before it: with n requests in flight it rests while
// 256 − n others are given out, and a duplicate of its reply that comes in
// that time lands on a free number (or one whose waiter has not taken its
// reply yet), is unknown and dropped, instead of reaching the next request
// given the number (issue 26 F6: the wire has 8 bits; any choice is
// NewLife's, since the peer echoes the number). Serial requests get 1…255,
// then 0, as NewLife's client gives them. A timed-out SRMP request keeps
// its number in quarantine until its late reply comes or a timeout passes
// (see giveUp). FIFO
// (the length-field format has no ids) answers the oldest pending request;
// a timed-out FIFO request stays queued, abandoned, so the connection stays
// in step when its reply does come. (NewLife's queue matches the most
// recent request instead: LIFO.)
type matcher struct {
	fifo    bool
	fifoMu  sync.Mutex // FIFO: a request registers and is written in one step under it, so that wire order is queue order (Conn.startFIFO)
	timeout time.Duration
	span    int64         // timeout plus a tick, in nanoseconds: what deadline adds to the clock
	stop    chan struct{} // closed by close; made with slots, as is freed
	freed   chan struct{} // a slot was freed while requests waited for one

	mu      sync.Mutex
	slots   *[256]waiter // made by the first register: a connection that never sends a request (most server connections) holds none
	free    int          // in-flight slots left: back-pressure, never overwrite
	cap     int          // the slots there are
	waiting int          // requests waiting in register for a free slot
	ring    *[256]uint8  // the free slots' keys, least recently freed first, from rhead to rtail; made with slots
	rhead   uint8        // the ring's front and back (a uint8 wraps at its length): free says whether it holds a key, and
	rtail   uint8        // a slot being freed is not in it, so it is never full when one is added
	order   *[256]int    // FIFO: slot keys in request order, a ring; made with slots
	head    int
	count   int
	err     error         // set when the connection closed
	sweeper bool          // a sweeper runs: whenever a slot is pending or quarantined (see deadline)
	due     int64         // no pending or quarantined slot's deadline is earlier: the sweeper scans the slots only from then on
	chans   []chan result // blocking requests' one-slot result channels, free for reuse: one goes back only once its waiter has taken its result and no sender can reach it any more

	// onExpire, if set, runs after the sweeper failed blocking requests:
	// a synchronous client wakes the request reading for the others, which
	// may be one of them (see connSide.lead). Set under mu (setOnExpire): a
	// request sent from OnOpen may have started the sweeper already.
	onExpire func()

	echoes *[256][MaxPrefix]byte // RequestBytesPrefixed's prefixes, made on first use

	batch atomic.Pointer[batchStage] // requests staged inside Batch, made by the first Batch that stages

	// self is the key of the request whose own goroutine is reading the
	// connection now (a ReceiveSync client's turn holder, see lead), or -1:
	// deliver hands that request's result over in selfRes instead of its
	// channel, from which its goroutine would take it at once, and frees
	// its slot, which its goroutine's finish would do next. Only the
	// turn holder sets and reads these, and in that mode deliver runs on
	// it; the sweeper and close still use the channel.
	// selfUse, when it takes the reply, gets that request's reply
	// borrowed, in place of a kept copy (Conn.RequestBytesInto,
	// Conn.RequestPacketInto).
	self    int
	selfRes result
	// hidden is the key of a request registered but not yet sent, whose
	// turn holder reads what arrived before it (startSync): a reply that
	// would match it is dropped as unknown, as if it were not there, and
	// for FIFO the queue is left as it is. -1: none. Only the turn holder
	// sets and reads it.
	hidden  int
	selfGot bool
	selfUse replyUse

	unknown, timedOut atomic.Uint64
	queued            atomic.Int32 // FIFO: count, readable without the lock
	clock             atomic.Int64 // mono reading, set by the sweeper each tick while it runs (deadline, starting one): no clock read per request

	reused uint64 // MatchStats.Reused; under mu, as register counts it
}

// maxRequestTimeout is the longest request timeout kept (Options.Timeout
// of more, math.MaxInt64 for "never", is taken as this): a deadline is a
// monotonic reading plus the timeout and a tick, which must not wrap.
const maxRequestTimeout = 100 * 365 * 24 * time.Hour

func newMatcher(fifo bool, timeout time.Duration) *matcher {
	n := MaxInFlightSRMP
	if fifo {
		n = MaxInFlightFIFO
	}
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	timeout = min(timeout, maxRequestTimeout)
	return &matcher{fifo: fifo, timeout: timeout, span: int64(timeout + sweepEvery), free: n, cap: n, due: math.MaxInt64, self: -1, hidden: -1}
}

// register takes a free in-flight slot, waiting for one while all are in
// use (back-pressure: never overwrite), for at most the timeout
// ([ErrTimeout]), claims it for a request and returns its key (the SRMP
// sequence number, or a FIFO slot), the channel a blocking request's
// result comes on (cb nil), and alone: no other request is in flight
// (read under the lock here, so that no atomic counter is written per
// request). A wait for a slot is part of the request's time: its own
// timeout is the matcher's less the wait; a blocking request's context
// may end it sooner (wait watches it). One call, one lock, per request.
func (m *matcher) register(ctx context.Context, cb *callback, echo []byte) (key int, ch chan result, alone bool, err error) {
	m.mu.Lock()
	if key, ch, alone, err = m.claimLocked(ctx, cb, echo); err == nil {
		m.mu.Unlock()
	}
	return key, ch, alone, err
}

// registerStaged is register for an asynchronous SRMP request inside a
// Batch (see batchStage): with the slot claimed as register claims it
// (echo included), under the same lock, it frames the request with flag
// and body into the batch's staging buffer and returns how many bytes are
// staged now; 0 when no batch stages (it ended meanwhile), and the caller
// sends the request itself.
func (m *matcher) registerStaged(ctx context.Context, cb *callback, echo []byte, flag uint8, body []byte) (key, staged int, err error) {
	m.mu.Lock()
	if key, _, _, err = m.claimLocked(ctx, cb, echo); err != nil {
		return 0, 0, err
	}
	if bs := m.batch.Load(); bs != nil && bs.batching.Load() > 0 {
		staged = bs.stageLocked(flag, uint8(key), body)
	}
	m.mu.Unlock()
	return key, staged, nil
}

// claimLocked is register's work, with m.mu held on entry and, unless it
// fails, on return.
func (m *matcher) claimLocked(ctx context.Context, cb *callback, echo []byte) (key int, ch chan result, alone bool, err error) {
	var waited time.Duration
	if m.free == 0 || m.waiting > 0 || m.slots == nil || m.err != nil {
		if waited, err = m.acquireSlow(ctx); err != nil {
			return 0, nil, false, err
		}
	} else {
		m.free-- // the common case: a slot free, nobody waiting for one
	}
	alone = m.cap-m.free == 1
	// The coarse clock lags by up to a tick: adding one keeps every request
	// waiting at least its timeout (it fails within two ticks after). As
	// deadline, inline.
	if !m.sweeper {
		m.startSweeper()
	}
	deadline := m.clock.Load() + m.span - int64(waited)
	m.due = min(m.due, deadline)
	// The slot taken (so the ring holds at least one): the one free
	// longest.
	key = int(m.ring[m.rhead])
	m.rhead++
	w := &m.slots[key]
	if w.state != slotFree {
		m.mu.Unlock()
		panic("codec: matcher: a taken slot in the free ring")
	}
	// The replies since this number's own are the numbers behind it in
	// the ring: 256 − n with n taken (this request's included). Fewer than
	// n, less than about a round trip, while its previous request was sent
	// under reuseHold ago (its deadline tells), and a duplicate of that
	// reply still on its way would be taken for this request's. Counted
	// only: no free number has rested longer, and waiting would cut the
	// throughput of a client that keeps 255 in flight.
	if !m.fifo && 2*(m.cap-m.free) > len(m.ring) && w.deadline > deadline-int64(reuseHold) {
		m.reused++
	}
	if m.fifo {
		m.order[uint8(m.head+m.count)] = key // a [256] ring: a uint8 index wraps, with no bounds check
		m.count++
		m.queued.Store(int32(m.count))
	}
	w.state, w.deadline, w.async, w.streamed = slotPending, deadline, cb != nil, false
	w.gen++
	if len(echo) > 0 {
		if m.echoes == nil {
			m.echoes = new([256][MaxPrefix]byte)
		}
		w.echo = uint8(copy(m.echoes[key][:], echo))
	}
	if cb != nil {
		w.cb = *cb
	} else {
		w.ch = m.takeChan()
	}
	return key, w.ch, alone, nil
}

// acquireSlow takes a slot for register (m.mu held on entry) when none is
// free, requests wait for one, the slots are not made yet or the
// connection closed: it waits for a free slot and returns how long it
// waited, with m.mu held; on an error m.mu is released.
func (m *matcher) acquireSlow(ctx context.Context) (waited time.Duration, err error) {
	if m.free == 0 && m.err == nil {
		if waited, err = m.waitFree(ctx); err != nil {
			return 0, err
		}
	}
	if m.err != nil {
		m.mu.Unlock()
		return 0, m.err
	}
	if m.slots == nil {
		m.stop, m.freed = make(chan struct{}), make(chan struct{}, 1)
		m.slots = new([256]waiter)
		m.ring = new([256]uint8)
		for i := range m.ring {
			m.ring[i] = uint8(i + 1) // 1…255, then 0
		}
		if m.fifo {
			m.order = new([256]int)
		}
	}
	m.free--
	m.passOn()
	return waited, nil
}

// waitFree waits, with m.mu held on entry, until a slot is free or the
// connection closed, for at most the timeout, and returns how long it
// waited with m.mu held; on an error m.mu is released. It is apart from
// register so that register has no deferred call: a defer in a loop is never
// open-coded, and would cost every request a deferreturn.
func (m *matcher) waitFree(ctx context.Context) (time.Duration, error) {
	start := time.Now() // only a full matcher pays for the timer
	t := time.NewTimer(m.timeout)
	defer t.Stop()
	for m.free == 0 && m.err == nil {
		var err error
		m.waiting++
		m.mu.Unlock()
		select {
		case <-m.freed:
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
			m.timedOut.Add(1)
			err = ErrTimeout
		case <-m.stop:
		}
		m.mu.Lock()
		m.waiting--
		if err != nil {
			m.passOn()
			m.mu.Unlock()
			return 0, err
		}
	}
	return time.Since(start), nil
}

// passOn wakes another waiting request if a slot is still free (one wake
// per freed slot could have reached a request that gave up). Called with
// m.mu held.
func (m *matcher) passOn() {
	if m.free > 0 && m.waiting > 0 {
		select {
		case m.freed <- struct{}{}:
		default:
		}
	}
}

// takeChan returns a free result channel: one of the matcher's own, kept
// from earlier requests (a lock already held and a slice, where a shared
// pool costs a round trip per request), or a new one. Called with m.mu held.
func (m *matcher) takeChan() chan result {
	if n := len(m.chans); n > 0 {
		ch := m.chans[n-1]
		m.chans = m.chans[:n-1]
		return ch
	}
	return make(chan result, 1)
}

// deadline is the deadline of a slot that becomes pending, is quarantined
// or waits on (a stream): a timeout from now, plus a tick since the coarse
// clock lags by up to one. Every deadline is set through it (register
// has its own copy, inline, less the wait for a slot), so it keeps due a
// bound below them all, and it starts the sweeper if none runs (the
// first request, or the first deadline since the sweeper found nothing
// left to expire), reading the clock afresh: the last tick's value is
// stale then. So a sweeper runs whenever a slot is pending or
// quarantined. Called with m.mu held.
func (m *matcher) deadline() int64 {
	if !m.sweeper {
		m.startSweeper()
	}
	d := m.clock.Load() + m.span
	m.due = min(m.due, d)
	return d
}

// startSweeper starts the sweeper, the clock read afresh (apart, so that
// deadline inlines). Called with m.mu held.
func (m *matcher) startSweeper() {
	m.clock.Store(mono.Now())
	m.sweeper = true
	go m.sweep()
}

// unregister undoes register when the request could not be sent. A FIFO
// request leaves the queue again (it is its tail: matcher.fifoMu keeps
// registering and writing in one step), so the next reply goes to the
// request it answers. It reports false when an asynchronous request's
// callback has had its outcome already (a stray reply on its number,
// the sweeper's timeout or the close came first): the send's failure must
// not be reported to the caller too.
func (m *matcher) unregister(key int, async bool) (undone bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := &m.slots[key]
	done := w.state == slotDone && w.ch != nil
	switch {
	case done:
		// A reply on its number (a stray: the request never left), the
		// sweeper's timeout or the close came before the send failed; no
		// waiter will take it.
		r := <-w.ch
		release(r.reply)
	case w.state != slotPending:
		// An asynchronous request whose callback has had its outcome: its
		// reply freed the slot, or the sweeper or the close failed it. A
		// FIFO one the sweeper abandoned leaves the queue: no reply of its
		// will come.
		if w.state == slotAbandoned && m.popTail(key) {
			m.freeSlot(key)
		}
		return !async
	}
	if w.streamed { // a stray reply reached the stream's callback, which goes on: it is told no more
		m.giveUp(key)
		return false
	}
	m.giveChan(w) // nothing was sent: the request never left
	// The queue's tail leaves it; a done request is out of the queue
	// already (FIFO), or holds a number no late reply can come for: it
	// never left.
	if m.popTail(key) || done {
		m.freeSlot(key)
		return true
	}
	m.giveUp(key)
	return true
}

// forget frees the slot of a blocking request that never left (none of
// its bytes was written) and that nobody waits for: no late reply can come
// for it. A result already in its channel (the sweeper's timeout, the
// close) is dropped.
func (m *matcher) forget(key int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := &m.slots[key]
	if w.ch != nil {
		select {
		case r := <-w.ch:
			release(r.reply)
		default:
		}
	}
	m.giveChan(w)
	m.popTail(key)
	m.freeSlot(key)
}

// giveUp ends a pending or done slot whose waiter will not get (or has
// had) a reply: abandoned in the queue for FIFO; for SRMP quarantined, so
// that its number is not given to a new request while the late reply may
// still come and be taken for the new request's (the number returns when
// that reply arrives, or after another timeout). Called with m.mu held.
func (m *matcher) giveUp(key int) {
	w := &m.slots[key]
	stream := w.cb.stream != nil
	w.cb, w.async, w.echo = callback{}, false, 0
	switch {
	case m.err != nil:
		m.freeSlot(key)
	case m.fifo && !m.queuedKey(key): // its reply came already, after the sweeper failed it: none will line up
		m.freeSlot(key)
	case m.fifo:
		w.state = slotAbandoned
	case stream: // the peer may go on sending: one late reply does not end it
		w.state = slotLeft
		w.deadline = m.deadline()
	default:
		w.state = slotQuarantine
		w.deadline = m.deadline()
	}
}

// popTail takes FIFO slot key off the queue when it is the queue's tail
// (the request registered last), and reports whether it did. Called with
// m.mu held.
func (m *matcher) popTail(key int) bool {
	if !m.fifo || m.count == 0 || m.order[uint8(m.head+m.count-1)] != key {
		return false
	}
	m.count--
	m.queued.Store(int32(m.count))
	return true
}

// queuedKey reports whether FIFO slot key waits in the queue for a reply.
// Only a request that timed out or was canceled asks (a scan of at most
// 256 keys). Called with m.mu held.
func (m *matcher) queuedKey(key int) bool {
	for i := range m.count {
		if m.order[uint8(m.head+i)] == key {
			return true
		}
	}
	return false
}

// giveChan gives w's result channel, if it has one, back to the
// matcher's spares. Called with m.mu held.
func (m *matcher) giveChan(w *waiter) {
	if w.ch != nil {
		m.chans = append(m.chans, w.ch)
		w.ch = nil
	}
}

// freeSlot returns a slot and its token; the slot goes to the back of the
// free ring, to be used again after every slot freed before it. Called with
// m.mu held.
func (m *matcher) freeSlot(key int) {
	w := &m.slots[key]
	w.state, w.cb, w.async, w.echo = slotFree, callback{}, false, 0
	if m.err == nil { // after close no request takes a slot: the ring is left as it is
		m.ring[m.rtail] = uint8(key)
		m.rtail++
		m.free++
		m.passOn()
	}
}

// deliver completes the request a borrowed reply answers: a callback gets
// it during the call, a blocking waiter a kept copy. A reply that answers
// nothing is counted and dropped. seq is ignored for FIFO.
func (m *matcher) deliver(seq int, reply any) {
	m.mu.Lock()
	if m.slots == nil { // no request was ever sent
		m.mu.Unlock()
		m.drop(reply)
		return
	}
	key := seq & 0xFF
	if m.fifo {
		if m.count == 0 || m.order[uint8(m.head)] == m.hidden {
			m.mu.Unlock()
			m.drop(reply)
			return
		}
		key = m.order[m.head]
		m.head = int(uint8(m.head + 1))
		m.count--
		m.queued.Store(int32(m.count))
	}
	w := &m.slots[key]
	if w.state != slotPending || key == m.hidden || w.echo > 0 && !m.echoed(key, reply.(*Message)) {
		m.dropReply(key, reply)
		return
	}
	if w.async {
		if w.cb.stream != nil {
			m.deliverStream(key, reply)
			return
		}
		cb := w.cb
		m.freeSlot(key)
		m.mu.Unlock()
		msg, isMsg := reply.(*Message)
		switch {
		case isMsg && msg.Kind == KindError:
			cb.call(nil, replyError(msg))
		case cb.msg != nil: // RequestAsync's, called here: the common callback
			cb.msg(msg, nil)
		default:
			cb.call(reply, nil)
		}
		return
	}
	var re *ReplyError
	msg, isMsg := reply.(*Message)
	if isMsg && msg.Kind == KindError {
		re = replyError(msg)
	}
	own := key == m.self
	if own {
		// The turn holder's own reply, handed over in selfRes: its slot is
		// freed here, as its waiter's finish would (answered), with no
		// channel and no second lock. Its number may be given out again
		// at once: a later frame of the read that bears it is not this
		// request's (self is cleared).
		m.giveChan(w)
		m.freeSlot(key)
		m.self = -1
		if re == nil && m.selfUse.takes(reply) {
			m.mu.Unlock() // use is the caller's code
			m.selfRes, m.selfGot = m.use(reply), true
			return
		}
	} else {
		w.state = slotDone
	}
	r := result{answered: true}
	if re != nil {
		r.err = re
	} else {
		r.reply = keep(reply)
	}
	if own {
		m.selfRes, m.selfGot = r, true
	} else {
		w.ch <- r
	}
	m.mu.Unlock()
}

// dropReply drops a reply that answers no pending request (m.mu held on
// entry, released): one for the hidden request, one whose echoed prefix
// is not its request's (an earlier request's late or repeated reply: this
// one waits on), or one for a slot that is not pending. A left stream's
// reply moves its quarantine's end on (the number waits until the peer
// has been quiet a timeout); the late reply of an abandoned or quarantined
// request frees its slot.
func (m *matcher) dropReply(key int, reply any) {
	if w := &m.slots[key]; key != m.hidden {
		switch w.state {
		case slotLeft:
			w.deadline = m.deadline()
		case slotAbandoned, slotQuarantine:
			m.freeSlot(key)
		}
	}
	m.mu.Unlock()
	m.drop(reply)
}

// readFor marks key as the request whose goroutine reads next (see self),
// and use, when it takes the reply (see replyUse), as the user of its
// reply.
func (m *matcher) readFor(key int, use replyUse) {
	m.self, m.selfUse = key, use
}

// readDone ends readFor and returns the result deliver handed over, if any.
func (m *matcher) readDone() (r result, got bool) {
	r, got = m.selfRes, m.selfGot
	m.self, m.selfRes, m.selfGot, m.selfUse = -1, result{}, false, replyUse{}
	return r, got
}

// usedReply is the reply of a result whose reply selfUse used during the
// read: err is use's error.
type usedReply struct{}

// usePanic is the reply of a result whose use panicked during the read:
// the panic is raised again on the caller's goroutine once the read turn
// is given back (Conn.RequestBytesInto, Conn.RequestPacketInto), as it
// would be had use run there.
type usePanic struct{ v any }

// use runs selfUse on the turn holder's own borrowed reply.
func (m *matcher) use(reply any) (r result) {
	r = result{reply: usedReply{}, answered: true}
	defer func() {
		if v := recover(); v != nil {
			r.reply, r.err = usePanic{v}, nil
		}
	}()
	r.err = m.selfUse.run(reply)
	return r
}

// ReplyError is the error of a request the peer answered with an error
// reply (SRMP kind 11): Request and its variants return it, and callbacks
// get it, instead of a reply. Payload is a copy of the reply's payload,
// the caller's. Test for it with errors.As.
type ReplyError struct {
	Flag, Seq uint8
	Payload   []byte
}

// Error implements error.
func (e *ReplyError) Error() string {
	const show = 64
	p := e.Payload
	if len(p) > show {
		p = p[:show]
	}
	return fmt.Sprintf("codec: error reply (seq %d): %q", e.Seq, p)
}

// replyError returns the error a borrowed reply stands for, or nil.
func replyError(reply any) *ReplyError {
	m, ok := reply.(*Message)
	if !ok || m.Kind != KindError {
		return nil
	}
	var p []byte
	if m.Payload != nil {
		p = m.Payload.AppendTo(make([]byte, 0, m.Payload.Total()))
	}
	return &ReplyError{Flag: m.Flag, Seq: m.Seq, Payload: p}
}

// echoed reports whether reply starts with the prefix its request named.
func (m *matcher) echoed(key int, reply *Message) bool {
	want := m.echoes[key][:m.slots[key].echo]
	if reply.Payload == nil || reply.Payload.Total() < len(want) {
		return false
	}
	b := reply.Payload.Bytes()
	if len(b) < len(want) { // a chained payload: compare across segments
		b = reply.Payload.AppendTo(make([]byte, 0, reply.Payload.Total()))
	}
	return string(b[:len(want)]) == string(want)
}

// deliverStream hands one reply of a stream to its callback (m.mu held on
// entry, released inside). The slot stays the stream's, its deadline moved
// on, until the callback wants no more: then its number is free, or left
// in quarantine when the stream did not end ([StreamLeave]).
func (m *matcher) deliverStream(key int, reply any) {
	w := &m.slots[key]
	cb, gen := w.cb, w.gen
	w.deadline, w.streamed = m.deadline(), true
	m.mu.Unlock()
	step := StreamDone
	if re := replyError(reply); re != nil {
		cb.call(nil, re) // an error reply ends the stream
	} else {
		m, _ := reply.(*Message)
		step = cb.stream(m, nil)
	}
	if step == StreamMore {
		return
	}
	m.mu.Lock()
	if w.gen == gen && w.state == slotPending {
		if step == StreamLeave {
			m.giveUp(key)
		} else {
			m.freeSlot(key)
		}
	}
	m.mu.Unlock()
}

func (m *matcher) drop(any) { m.unknown.Add(1) }

// keep returns an owned copy of a borrowed reply.
func keep(reply any) any {
	switch r := reply.(type) {
	case *Message:
		return r.Keep()
	case *packet.Packet:
		return r.Keep()
	}
	return reply
}

// wait blocks until the reply for slot key (on ch, from register), its
// timeout, the connection's end, or ctx's end, and then frees the slot.
func (m *matcher) wait(ctx context.Context, key int, ch chan result) (any, error) {
	done := ctx.Done()
	if done == nil { // a context that never ends: a receive costs less than a select
		return m.finish(key, ch, <-ch)
	}
	select {
	case r := <-ch:
		return m.finish(key, ch, r)
	case <-done:
		return m.abandon(ctx, key, ch)
	}
}

// finish frees slot key after its waiter took result r from ch.
func (m *matcher) finish(key int, ch chan result, r result) (any, error) {
	m.mu.Lock()
	m.slots[key].ch = nil
	if r.err == nil || r.answered {
		m.freeSlot(key)
	} else {
		m.giveUp(key)
	}
	m.chans = append(m.chans, ch)
	m.mu.Unlock()
	return r.reply, r.err
}

// abandon ends the wait of a request whose context ended, unless its
// result won the race.
func (m *matcher) abandon(ctx context.Context, key int, ch chan result) (any, error) {
	m.mu.Lock()
	select {
	case r := <-ch:
		m.mu.Unlock()
		return m.finish(key, ch, r)
	default:
	}
	m.slots[key].ch = nil
	if m.slots[key].state == slotPending {
		m.giveUp(key)
	}
	m.chans = append(m.chans, ch) // empty, and no sender can reach it now
	m.mu.Unlock()
	return nil, ctx.Err()
}

// sweep fails expired requests until the connection closes or nothing is
// left to expire (no slot pending or quarantined): an idle connection then
// costs no wake-up a tick, and the next deadline set starts the sweeper
// again (now).
func (m *matcher) sweep() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case now := <-t.C:
			ns := mono.Of(now)
			m.clock.Store(ns)
			if m.expire(ns) {
				return
			}
		}
	}
}

// expire fails the requests whose deadline has passed and frees the
// quarantined numbers whose late reply never came. It scans the slots only
// once the earliest deadline is due, and then sets the next one: most ticks
// find nothing due, and a scan of 256 slots, cold in the cache, showed in
// the profile of a client with 100 connections. It reports whether nothing
// is left to expire; the sweeper then stops (m.sweeper is cleared under
// the same lock, so that the next deadline set starts another). That is
// so at once when every slot is free (the last request had its reply):
// the answered requests' deadlines need no tick. A blocking request failed
// here is done, not pending: its waiter's finish quarantines the number,
// through deadline.
func (m *matcher) expire(now int64) (idle bool) {
	var late []callback
	woke := false
	m.mu.Lock()
	if m.free == m.cap {
		m.due = math.MaxInt64
		m.sweeper = false
		m.mu.Unlock()
		return true
	}
	if now < m.due {
		m.mu.Unlock()
		return false
	}
	next := int64(math.MaxInt64)
	for key := range m.slots {
		w := &m.slots[key]
		switch {
		case (w.state == slotQuarantine || w.state == slotLeft) && w.deadline <= now:
			m.freeSlot(key) // no late reply came: the number is clean again
		case w.state != slotPending || w.deadline > now:
		case w.async:
			m.timedOut.Add(1)
			late = append(late, w.cb)
			m.giveUp(key) // quarantined, with a deadline of its own
		default:
			m.timedOut.Add(1)
			w.state = slotDone
			w.ch <- result{err: ErrTimeout}
			woke = true
		}
		if w.state == slotPending || w.state == slotQuarantine || w.state == slotLeft {
			next = min(next, w.deadline)
		}
	}
	m.due = next
	idle = next == math.MaxInt64
	if idle {
		m.sweeper = false
	}
	onExpire := m.onExpire
	m.mu.Unlock()
	if woke && onExpire != nil {
		onExpire()
	}
	for _, cb := range late {
		cb.call(nil, ErrTimeout)
	}
	return idle
}

// setOnExpire sets onExpire.
func (m *matcher) setOnExpire(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onExpire = f
}

// close fails every pending request with [ErrConnClosed] and refuses new ones.
func (m *matcher) close(cause error) {
	var pending []callback
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return
	}
	m.err = ErrConnClosed
	if cause != nil {
		m.err = fmt.Errorf("%w: %w", ErrConnClosed, cause)
	}
	if m.stop != nil {
		close(m.stop)
	}
	if m.slots != nil { // nil: no request was ever sent, none can be pending
		pending = m.failPending()
	}
	m.mu.Unlock()
	for _, cb := range pending {
		cb.call(nil, m.err)
	}
}

// failPending ends every request: blocking waiters get [ErrConnClosed] now,
// asynchronous ones are returned for the caller to call outside m.mu.
// Called with m.mu held.
func (m *matcher) failPending() (pending []callback) {
	for key := range m.slots {
		w := &m.slots[key]
		switch {
		case w.state == slotPending && w.async:
			pending = append(pending, w.cb)
			w.state, w.cb, w.async = slotFree, callback{}, false
		case w.state == slotPending:
			w.state = slotDone
			w.ch <- result{err: m.err}
		case w.state == slotAbandoned || w.state == slotQuarantine || w.state == slotLeft:
			w.state = slotFree
		}
	}
	return pending
}

// pending reports whether FIFO requests wait for replies: an atomic load,
// not the lock, since a server's connections ask it for every frame and
// almost never have requests of their own.
func (m *matcher) pending() bool { return m.queued.Load() > 0 }

func (m *matcher) stats() MatchStats {
	m.mu.Lock()
	inFlight, reused := m.cap-m.free, m.reused
	m.mu.Unlock()
	return MatchStats{Unknown: m.unknown.Load(), TimedOut: m.timedOut.Load(), InFlight: inFlight, Reused: reused}
}
