package cluster

import (
	"sync"
	"sync/atomic"
	"time"

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

	// Dials (see connect.go): failedAt is the instant (mono) its last dial
	// failed, 0 if none did since it last connected; failErr is that
	// dial's error; dialFails counts the failed dials; listed is set once
	// it is in the client's list of endpoints that connected (under
	// Client.readyMu).
	failedAt  atomic.Int64
	failErr   atomic.Pointer[error]
	dialFails atomic.Uint64
	listed    atomic.Bool
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
// wait for it (or their ctx) and share its result, set before done is
// closed. handed counts the balancer's picks of the endpoint that calls
// gave the dial to report (rpc.Balancer.Done) when it ends (under
// endpoint.mu while the dial is the endpoint's dialer); sem is set when
// the dial holds one of the client's dial slots.
type dial struct {
	done   chan struct{}
	cl     *rpc.Client
	err    error
	rtt    time.Duration // its Api/Health round trip, 0 if none
	took   time.Duration
	handed int
	sem    bool
	start  time.Time
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

// recentlyFailed reports whether e's last dial failed less than
// redialAfter before now (mono): it is not dialed again yet.
func (e *endpoint) recentlyFailed(now int64) bool {
	f := e.failedAt.Load()
	return f != 0 && now-f < int64(redialAfter)
}

// lastFailure returns the error of e's last failed dial, or nil.
func (e *endpoint) lastFailure() error {
	if p := e.failErr.Load(); p != nil {
		return *p
	}
	return nil
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
