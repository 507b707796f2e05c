package codec

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Matching errors.
var (
	// ErrTimeout: no reply within the request timeout.
	ErrTimeout = errors.New("codec: request timed out")
	// ErrConnClosed: the connection ended before the reply came; pending
	// and later requests fail with it.
	ErrConnClosed = errors.New("codec: connection closed")
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

// Callback receives a request's reply (which it owns) or an error. It runs
// on the connection's receive goroutine, or on the timeout sweeper, and
// must not block.
type Callback func(reply any, err error)

// MatchStats counts what the matcher dropped.
type MatchStats struct {
	Unknown  uint64 // replies matching no pending request (late, duplicate, never asked); released
	TimedOut uint64 // requests failed with ErrTimeout
}

// Slot states.
const (
	slotFree      = iota
	slotPending   // waiting for its reply
	slotDone      // a blocking waiter's result is in ch; the waiter frees the slot
	slotAbandoned // FIFO only: timed out or canceled, still queued so its late reply lines up
)

type waiter struct {
	state    uint8
	deadline int64 // unix nanoseconds
	ch       chan result
	cb       Callback
}

type result struct {
	reply any
	err   error
}

// resultChans recycles the one-slot channels of blocking requests: a
// channel goes back only once its waiter has taken its result and no sender
// can reach it any more.
var resultChans = sync.Pool{New: func() any { return make(chan result, 1) }}

// matcher pairs replies with requests on one connection. SRMP keys
// requests by sequence number (1…255, then 0, as NewLife); a timed-out SRMP
// request frees its number at once, so its late reply is unknown. FIFO
// (the length-field format has no ids) answers the oldest pending request;
// a timed-out FIFO request stays queued, abandoned, so the connection stays
// in step when its reply does come. (NewLife's queue matches the most
// recent request instead: LIFO.)
type matcher struct {
	fifo    bool
	timeout time.Duration
	tokens  chan struct{} // free in-flight slots: back-pressure
	stop    chan struct{}

	mu      sync.Mutex
	slots   [256]waiter
	next    int      // SRMP: the next sequence number to try
	order   [256]int // FIFO: slot keys in request order, a ring
	head    int
	count   int
	err     error // set when the connection closed
	sweeper bool

	// onExpire, if set, runs after the sweeper failed blocking requests:
	// a synchronous client wakes the request reading for the others, which
	// may be one of them (see Conn.lead).
	onExpire func()

	unknown, timedOut atomic.Uint64
}

func newMatcher(fifo bool, timeout time.Duration) *matcher {
	n := MaxInFlightSRMP
	if fifo {
		n = MaxInFlightFIFO
	}
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	m := &matcher{fifo: fifo, timeout: timeout, tokens: make(chan struct{}, n), stop: make(chan struct{}), next: 1}
	for range n {
		m.tokens <- struct{}{}
	}
	return m
}

// acquire waits for a free in-flight slot (back-pressure: never overwrite).
func (m *matcher) acquire(ctx context.Context) error {
	select {
	case <-m.tokens:
		return nil
	default:
	}
	select {
	case <-m.tokens:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-m.stop:
		return ErrConnClosed
	}
}

// register claims a slot for a request holding a token and returns its key:
// the SRMP sequence number, or a FIFO slot.
// The request's own timeout is the matcher's; a blocking request's context
// may end it sooner (wait watches it).
func (m *matcher) register(cb Callback) (int, chan result, error) {
	deadline := time.Now().Add(m.timeout).UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		m.tokens <- struct{}{}
		return 0, nil, m.err
	}
	key := m.next
	for m.slots[key].state != slotFree { // a held token guarantees one
		key = (key + 1) % len(m.slots)
	}
	m.next = (key + 1) % len(m.slots)
	if m.fifo {
		m.order[(m.head+m.count)%len(m.order)] = key
		m.count++
	}
	w := &m.slots[key]
	w.state, w.deadline, w.cb = slotPending, deadline, cb
	if cb == nil {
		w.ch = resultChans.Get().(chan result)
	}
	if !m.sweeper {
		m.sweeper = true
		go m.sweep()
	}
	return key, w.ch, nil
}

// unregister undoes register when the request could not be sent.
func (m *matcher) unregister(key int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w := &m.slots[key]; w.state == slotPending {
		if w.ch != nil {
			resultChans.Put(w.ch) // nothing was sent: the request never left
			w.ch = nil
		}
		m.giveUp(key)
	}
}

// giveUp ends a pending or done slot whose waiter will not get (or has
// had) a reply: free at once for SRMP, abandoned in the queue for FIFO.
// Called with m.mu held.
func (m *matcher) giveUp(key int) {
	w := &m.slots[key]
	w.cb = nil
	if m.fifo && m.err == nil {
		w.state = slotAbandoned
		return
	}
	m.freeSlot(key)
}

// freeSlot returns a slot and its token. Called with m.mu held.
func (m *matcher) freeSlot(key int) {
	w := &m.slots[key]
	w.state, w.cb = slotFree, nil
	if m.err == nil {
		m.tokens <- struct{}{}
	}
}

// deliver completes the request a reply answers, or counts and releases a
// reply that answers nothing. seq is ignored for FIFO.
func (m *matcher) deliver(seq int, reply any) {
	m.mu.Lock()
	key := seq & 0xFF
	if m.fifo {
		if m.count == 0 {
			m.mu.Unlock()
			m.drop(reply)
			return
		}
		key = m.order[m.head]
		m.head = (m.head + 1) % len(m.order)
		m.count--
	}
	w := &m.slots[key]
	switch w.state {
	case slotPending:
	case slotAbandoned: // the late reply of a FIFO request: now it can go
		m.freeSlot(key)
		fallthrough
	default:
		m.mu.Unlock()
		m.drop(reply)
		return
	}
	if cb := w.cb; cb != nil {
		m.freeSlot(key)
		m.mu.Unlock()
		cb(reply, nil)
		return
	}
	w.state = slotDone
	w.ch <- result{reply: reply}
	m.mu.Unlock()
}

func (m *matcher) drop(reply any) {
	m.unknown.Add(1)
	release(reply)
}

// wait blocks until the reply for slot key (on ch, from register), its
// timeout, the connection's end, or ctx's end, and then frees the slot.
func (m *matcher) wait(ctx context.Context, key int, ch chan result) (any, error) {
	select {
	case r := <-ch:
		return m.finish(key, ch, r)
	case <-ctx.Done():
		return m.abandon(ctx, key, ch)
	}
}

// finish frees slot key after its waiter took result r from ch.
func (m *matcher) finish(key int, ch chan result, r result) (any, error) {
	m.mu.Lock()
	m.slots[key].ch = nil
	if r.err == nil {
		m.freeSlot(key)
	} else {
		m.giveUp(key)
	}
	m.mu.Unlock()
	resultChans.Put(ch)
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
	m.mu.Unlock()
	resultChans.Put(ch) // empty, and no sender can reach it now
	return nil, ctx.Err()
}

// sweep fails expired requests until the connection closes.
func (m *matcher) sweep() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case now := <-t.C:
			m.expire(now.UnixNano())
		}
	}
}

func (m *matcher) expire(now int64) {
	var late []Callback
	woke := false
	m.mu.Lock()
	for key := range m.slots {
		w := &m.slots[key]
		if w.state != slotPending || w.deadline > now {
			continue
		}
		m.timedOut.Add(1)
		if w.cb != nil {
			late = append(late, w.cb)
			m.giveUp(key)
		} else {
			w.state = slotDone
			w.ch <- result{err: ErrTimeout}
			woke = true
		}
	}
	m.mu.Unlock()
	if woke && m.onExpire != nil {
		m.onExpire()
	}
	for _, cb := range late {
		cb(nil, ErrTimeout)
	}
}

// close fails every pending request with ErrConnClosed and refuses new ones.
func (m *matcher) close() {
	var pending []Callback
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return
	}
	m.err = ErrConnClosed
	close(m.stop)
	for key := range m.slots {
		w := &m.slots[key]
		switch {
		case w.state == slotPending && w.cb != nil:
			pending = append(pending, w.cb)
			w.state, w.cb = slotFree, nil
		case w.state == slotPending:
			w.state = slotDone
			w.ch <- result{err: ErrConnClosed}
		case w.state == slotAbandoned:
			w.state = slotFree
		}
	}
	m.mu.Unlock()
	for _, cb := range pending {
		cb(nil, ErrConnClosed)
	}
}

// pending reports whether FIFO requests wait for replies.
func (m *matcher) pending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count > 0
}

func (m *matcher) stats() MatchStats {
	return MatchStats{Unknown: m.unknown.Load(), TimedOut: m.timedOut.Load()}
}
