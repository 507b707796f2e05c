package cluster

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/lifenet/lifenet/rpc"
)

// endpoint is one server of the set: its rpc.Client, dialed on the first
// call picked for it, and the calls in flight on it.
//
// state packs the calls in flight (the low bits) with two flags: removed
// (the endpoint left the set: it drains, and closes once no call is in
// flight) and closed (its client is closed, or is being closed: no call
// may start on it any more). A call starts with acquire, which fails once
// closed is set, and ends with release; whichever of release and remove
// finds removed with nothing in flight closes the endpoint, once.
type endpoint struct {
	addr  string
	ep    rpc.Endpoint // its metadata, which updates replace (under Client.mu)
	state atomic.Int64
	cl    atomic.Pointer[rpc.Client] // nil until dialed

	mu     sync.Mutex
	dialer *dial // the dial in progress, if any
	// retired are clients set aside when the endpoint was shielded for no
	// reply, with calls perhaps still waiting on them; each is closed at
	// its time by the probe loop (see retire), or with the endpoint.
	retired []retiredClient

	attempts, failures atomic.Uint64
	closedc            chan struct{} // closed once the client is closed

	// Health (see health.go): health is a Health; timeouts counts the
	// timed-out attempts in a row written after lastReply, the instant
	// (mono) of the last reply; noHealth is set once the server answered
	// that it has no Api/Health (a NewLife server): it is then probed only
	// while shielded; probing is set while a probe is out.
	health    atomic.Int32
	timeouts  atomic.Int32
	lastReply atomic.Int64
	noHealth  atomic.Bool
	probing   atomic.Bool
}

// retiredClient is a client set aside, to be closed at closeAt (mono).
type retiredClient struct {
	cl      *rpc.Client
	closeAt int64
}

const (
	removedBit = 1 << 62
	closedBit  = 1 << 61
	countMask  = closedBit - 1
)

// dial is one dial of an endpoint; the calls that find it in progress
// wait for it (or their ctx) and share its result.
type dial struct {
	done chan struct{}
	cl   *rpc.Client
	err  error
}

func newEndpoint(ep rpc.Endpoint) *endpoint {
	return &endpoint{addr: ep.Addr, ep: ep, closedc: make(chan struct{})}
}

// acquire counts a call in flight; false if the endpoint is closed.
func (e *endpoint) acquire() bool {
	for {
		s := e.state.Load()
		if s&closedBit != 0 {
			return false
		}
		if e.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// release ends a call acquire counted, and closes a removed endpoint whose
// last call it was.
func (e *endpoint) release() {
	if e.state.Add(-1) == removedBit {
		e.tryClose()
	}
}

// remove marks the endpoint out of the set: it closes at once if no call
// is in flight, else when the last one ends.
func (e *endpoint) remove() {
	if e.state.Or(removedBit)&countMask == 0 {
		e.tryClose()
	}
}

// revive takes a removed endpoint back into the set; false if it closed
// already (a new endpoint must replace it).
func (e *endpoint) revive() bool {
	return e.state.And(^removedBit)&closedBit == 0
}

func (e *endpoint) tryClose() {
	if !e.state.CompareAndSwap(removedBit, removedBit|closedBit) {
		return // a call started again, or another closer won
	}
	// A dial still running (its callers gave up) closes its client itself
	// when it lands (see dial).
	e.mu.Lock()
	cl := e.cl.Load()
	retired := e.retired
	e.retired = nil
	e.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
	for _, r := range retired {
		r.cl.Close()
	}
	close(e.closedc)
}

// inFlight returns the calls in flight and whether the endpoint drains
// (removed) or is closed.
func (e *endpoint) inFlight() (n int, removed, closed bool) {
	s := e.state.Load()
	return int(s & countMask), s&removedBit != 0, s&closedBit != 0
}

// client returns the endpoint's client, dialing it if need be (one dial
// at a time, on dctx, the cluster client's; a caller waits for it as long
// as its own ctx lets it). A failed dial is not kept: the next call dials
// again (the balancer shields the endpoint meanwhile). dials counts the
// dial goroutines, for Close to wait for.
func (e *endpoint) client(ctx, dctx context.Context, dials *sync.WaitGroup, cfg rpc.ClientConfig) (*rpc.Client, error) {
	if cl := e.cl.Load(); cl != nil {
		return cl, nil
	}
	e.mu.Lock()
	if cl := e.cl.Load(); cl != nil {
		e.mu.Unlock()
		return cl, nil
	}
	d := e.dialer
	if d == nil {
		d = &dial{done: make(chan struct{})}
		e.dialer = d
		dials.Add(1)
		go func() {
			defer dials.Done()
			e.dial(d, dctx, cfg)
		}()
	}
	e.mu.Unlock()
	select {
	case <-d.done:
		return d.cl, d.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *endpoint) dial(d *dial, ctx context.Context, cfg rpc.ClientConfig) {
	d.cl, d.err = rpc.Dial(ctx, e.addr, cfg)
	e.mu.Lock()
	if d.err == nil {
		d.cl, d.err = e.install(d.cl)
	}
	e.dialer = nil
	e.mu.Unlock()
	close(d.done)
}

// install makes cl, just dialed, the endpoint's client, under e.mu, and
// returns the client to use: cl; or the endpoint's own if another dial (a
// probe's) installed one meanwhile, cl being closed; or nil and
// rpc.ErrClosed if the endpoint closed while dialing (nobody waits).
func (e *endpoint) install(cl *rpc.Client) (*rpc.Client, error) {
	switch {
	case e.state.Load()&closedBit != 0:
		cl.Close()
		return nil, rpc.ErrClosed
	case e.cl.Load() != nil:
		cl.Close()
		return e.cl.Load(), nil
	}
	e.cl.Store(cl)
	return cl, nil
}
