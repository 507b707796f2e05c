package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/internal/logattr"
	"github.com/lifenet/lifenet/rpc"
)

// Client calls the actions of a service whose servers a [rpc.Resolver]
// finds, spreading the calls over them with a [rpc.Balancer]. It keeps one
// [rpc.Client] per endpoint, dialed on the first call picked for it. All
// methods are safe for concurrent use.
type Client struct {
	cfg Config
	b   rpc.Balancer
	log *slog.Logger

	wctx    context.Context // ends on Close: the watch
	wcancel context.CancelFunc
	watchc  chan struct{} // closed when the watch goroutine returns
	// ctx ends once Close has drained the calls: the dials still running
	// (all their callers gave up), which dials counts.
	ctx    context.Context
	cancel context.CancelFunc
	dials  sync.WaitGroup
	probes sync.WaitGroup // the probe loop and its probes (health.go)

	// eps holds the endpoints by Addr: the current set's, and those that
	// left it but have not closed yet (see update).
	eps atomic.Pointer[map[string]*endpoint]

	mu     sync.Mutex // serializes set changes against Close
	closed atomic.Bool
	// badSeen holds the hashes of the invalid entries of the last set
	// (under mu): each is logged when it first appears, not at every set.
	badSeen map[uint64]struct{}
	overCap bool // the last set had more than MaxEndpoints valid entries (under mu)
	limits  *logattr.Limiter

	// Connecting (connect.go): dialSem bounds the dials for picks; dialc
	// is closed and replaced at the end of each dial; ready lists the
	// endpoints that connected (copy on write, under readyMu), the calls'
	// fallback, taken in turn.
	dialSem   chan struct{}
	dialMu    sync.Mutex
	dialc     chan struct{}
	readyMu   sync.Mutex
	ready     atomic.Pointer[[]*endpoint]
	readyTurn atomic.Uint32

	retry  retrier
	budget budget
}

// Dial returns a client of the service r resolves, balanced by b (which the
// client then owns: it calls b.Update with every set). It starts r's
// Watch and waits for its first set, at most Config.ResolveTimeout and
// never past ctx; it dials no server (each endpoint is dialed on the first
// call picked for it).
func Dial(ctx context.Context, r rpc.Resolver, b rpc.Balancer, cfg Config) (*Client, error) {
	if r == nil || b == nil {
		return nil, fmt.Errorf("%w: Dial needs a resolver and a balancer", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.fill()
	if cfg.Client.Log == nil {
		cfg.Client.Log = cfg.Logger // the endpoints' clients log where the cluster does (nil: slog.Default())
	}
	c := &Client{cfg: cfg, b: b, log: cfg.Logger, watchc: make(chan struct{}),
		dialSem: make(chan struct{}, maxDials), dialc: make(chan struct{})}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.limits = logattr.NewLimiter(numKinds, logattr.Burst, logattr.Interval, c.logSuppressed)
	c.retry = retrier{p: cfg.Retry}
	c.budget.init(cfg.Retry.Budget)
	empty := map[string]*endpoint{}
	c.eps.Store(&empty)
	none := []*endpoint{}
	c.ready.Store(&none)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wctx, c.wcancel = context.WithCancel(c.ctx)

	first := make(chan struct{})
	var once sync.Once
	var werr error
	go func() {
		defer close(c.watchc)
		werr = r.Watch(c.wctx, func(eps []rpc.Endpoint) {
			c.update(eps)
			once.Do(func() { close(first) })
		})
		if c.wctx.Err() == nil {
			c.log.Warn("cluster: the resolver stopped; the client keeps its last endpoint set", "err", werr)
		}
	}()

	if c.healthOn() {
		c.probes.Add(1)
		go c.probeLoop()
	}

	t := time.NewTimer(cfg.ResolveTimeout)
	defer t.Stop()
	select {
	case <-first:
		return c, nil
	case <-c.watchc:
		select {
		case <-first: // the set came, then the watch ended
			return c, nil
		default:
		}
		c.Close()
		if werr == nil {
			werr = rpc.ErrNoEndpoints
		}
		return nil, fmt.Errorf("cluster: resolver: %w", werr)
	case <-t.C:
		c.Close()
		return nil, fmt.Errorf("cluster: no endpoint set within %v: %w", cfg.ResolveTimeout, rpc.ErrNoEndpoints)
	case <-ctx.Done():
		c.Close()
		return nil, fmt.Errorf("cluster: waiting for the first endpoint set: %w", ctx.Err())
	}
}

// update applies a new endpoint set. Its entries are checked first
// (valid reports which it keeps). The client's map keeps every endpoint
// not yet closed, those that left the set (draining) included, so that a
// pick racing the update finds the endpoint it names, old or new: the map
// is published first, then the balancer learns the set, then the
// endpoints that left drain (each closes once its calls in flight end,
// and the next update forgets it).
func (c *Client) update(set []rpc.Endpoint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return
	}
	set, skipped := c.valid(set)
	old := *c.eps.Load()
	next := make(map[string]*endpoint, len(set))
	in := make(map[string]bool, len(set))
	var added, removed []string
	for _, ep := range set {
		in[ep.Addr] = true
		e := old[ep.Addr]
		if e != nil && !e.revive() {
			e = nil // it closed: a new one replaces it
		}
		if e == nil {
			e = newEndpoint(ep)
			added = append(added, ep.Addr)
		} else {
			e.ep = ep
		}
		next[ep.Addr] = e
	}
	var leaving []*endpoint
	for addr, e := range old {
		if in[addr] {
			continue
		}
		_, wasRemoved, closed := e.inFlight()
		if closed {
			continue
		}
		next[addr] = e
		if !wasRemoved {
			leaving = append(leaving, e)
			removed = append(removed, addr)
		}
	}
	c.eps.Store(&next)
	c.b.Update(set)
	for _, e := range leaving {
		e.remove()
	}
	c.pruneReady(next)
	c.log.Info("cluster: endpoint set", "endpoints", len(in), "skipped", skipped,
		"added", len(added), "removed", len(removed), "addedAddrs", firstAddrs(added), "removedAddrs", firstAddrs(removed))
}

// EndpointState is what [Client.Endpoints] tells of one endpoint.
type EndpointState struct {
	rpc.Endpoint
	// Connected: its client was dialed and is open.
	Connected bool
	// InFlight is the number of its calls in flight.
	InFlight int
	// Draining: it left the set and closes once InFlight is 0.
	Draining bool
	// Attempts counts the attempts sent to it, Failures those that
	// failed (error replies included).
	Attempts, Failures uint64
	// Health is HealthOK, or why the client sends it no new call (see
	// [Config.ProbeInterval]).
	Health Health
	// DialFailures counts its dials that failed (refused, timed out, no
	// reply within [Config.ConnectTimeout]), and its client's own redials
	// that did; Unreachable is set while its last dial failed (it is
	// dialed again on a pick a second later at the soonest).
	DialFailures uint64
	Unreachable  bool
}

// Endpoints returns the state of the endpoints, by Addr: those of the
// current set, and those that left it and still drain.
func (c *Client) Endpoints() []EndpointState {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := *c.eps.Load()
	var out []EndpointState
	for _, addr := range slices.Sorted(maps.Keys(cur)) {
		e := cur[addr]
		n, removed, closed := e.inFlight()
		if closed {
			continue
		}
		out = append(out, EndpointState{Endpoint: e.ep, Connected: e.cl.Load() != nil, InFlight: n,
			Draining: removed, Attempts: e.attempts.Load(), Failures: e.failures.Load(), Health: Health(e.health.Load()),
			DialFailures: e.dialFails.Load(), Unreachable: e.failedAt.Load() != 0})
	}
	return out
}

// Close stops the resolver's watch, refuses new calls ([rpc.ErrClosed]),
// waits for the calls in flight (each bounded by its ctx and
// Config.Client.Timeout) and closes every endpoint's client.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed.Swap(true) {
		c.mu.Unlock()
		return nil
	}
	c.wcancel()
	all := slices.Collect(maps.Values(*c.eps.Load()))
	c.mu.Unlock()
	<-c.watchc
	for _, e := range all {
		e.remove()
	}
	for _, e := range all {
		<-e.closedc
	}
	c.probes.Wait()
	c.cancel()
	c.dials.Wait()
	c.limits.Stop()
	return nil
}

// Invoke calls action with args on an endpoint the balancer picks and
// decodes the reply's data into result, as [rpc.Client.Invoke] does. It
// retries as Config.Retry says, and races the call over several endpoints
// when ctx is marked with [Race]. An empty set fails with an error
// matching [rpc.ErrNoServer] and [rpc.ErrNoEndpoints]; a closed client
// with [rpc.ErrClosed]; an attempt whose endpoint could not be dialed
// with one matching [rpc.ErrNoServer] and [rpc.ErrNotSent] (the call was
// not written: it did not run).
func (c *Client) Invoke(ctx context.Context, action string, args, result any) error {
	if c.closed.Load() {
		return rpc.ErrClosed
	}
	m, _ := ctx.Value(markKey{}).(*mark)
	if m != nil && m.race {
		if !m.idempotent {
			return fmt.Errorf("%w: %s: a Race call must be marked Idempotent too", ErrConfig, action)
		}
		return c.race(ctx, m.stagger, action, args, result)
	}
	idem := m != nil && m.idempotent
	info := rpc.PickInfo{Action: action, Key: rpc.BalanceKey(ctx)}
	moves := 0
	for n := 1; ; n++ {
		addr, sent, err := c.attempt(ctx, &info, action, args, result)
		if err == nil {
			c.budget.success()
			return nil
		}
		switch {
		case !sent && moves < maxMoves && c.movable(ctx, err):
			// Never written: it moves to another endpoint at once, as no
			// attempt of the RetryPolicy's.
			moves++
			n--
		case !c.retryable(ctx, err, sent, idem, n):
			return err
		default:
			if werr := c.retry.wait(ctx, n); werr != nil {
				return err
			}
		}
		// The next attempt avoids every endpoint tried so far, not only
		// this one: under failover, excluding only the last would send a
		// third attempt back to the first (allocated on a retry only).
		info.Exclude = addr
		if addr != "" {
			info.Tried = append(info.Tried, addr)
		}
	}
}

// Call is the generic form of Invoke: it returns the result as an R.
func Call[R any](ctx context.Context, c *Client, action string, args any) (R, error) {
	var r R
	err := c.Invoke(ctx, action, args, &r)
	return r, err
}

// errNoEndpoints is a pick's error on an empty set.
var errNoEndpoints = fmt.Errorf("cluster: %w: %w", rpc.ErrNoServer, rpc.ErrNoEndpoints)

// pick picks an endpoint for one attempt and counts it in flight on it.
// An address the balancer returns that is no longer (or not yet) in the
// client's set, or whose endpoint has closed, is given back (Done,
// Canceled) and picked again, a few times. So is one the client shields
// (its Health), the next pick avoiding it as the balancer avoids an
// excluded endpoint: the policy gives its turns to the others as it does
// for one it shields itself. A shielded endpoint is taken only as a last
// resort: the balancer has no other (it returns one already avoided), or
// the last try, of as many as the set has endpoints and three more, so
// that shielded endpoints, however many, are all avoided before one is
// taken.
func (c *Client) pick(info *rpc.PickInfo) (string, *endpoint, error) {
	cur := info
	var avoid rpc.PickInfo // info, also avoiding the shielded endpoints met (made on the first)
	tries := len(*c.eps.Load()) + 3
	for i := range tries {
		addr, err := c.b.Pick(*cur)
		if err != nil {
			return "", nil, c.noEndpoint()
		}
		e := (*c.eps.Load())[addr]
		if e != nil && e.shielded() && i < tries-1 && (cur != &avoid || !avoid.Excludes(addr)) {
			c.b.Done(addr, rpc.PickResult{Canceled: true})
			if cur != &avoid {
				avoid, cur = *info, &avoid
			}
			avoidAddr(&avoid, addr)
			continue
		}
		if e != nil && e.acquire() {
			return addr, e, nil
		}
		c.b.Done(addr, rpc.PickResult{Canceled: true})
	}
	return "", nil, c.noEndpoint()
}

// noEndpoint is a pick's error when it found no endpoint: the set is
// empty, or Close emptied it under a call that had begun.
func (c *Client) noEndpoint() error {
	if c.closed.Load() {
		return rpc.ErrClosed
	}
	return errNoEndpoints
}

// avoidAddr makes p avoid addr too: as its Exclude when that is free
// (empty, or in Tried too, as a retry's is), else added to a copy of
// Tried (an allocation, only with two endpoints to avoid).
func avoidAddr(p *rpc.PickInfo, addr string) {
	if p.Exclude == "" || slices.Contains(p.Tried, p.Exclude) {
		p.Exclude = addr
		return
	}
	p.Tried = append(slices.Clip(p.Tried), addr)
}

// attempt sends one attempt of a call: sent reports whether it may have
// reached a server (see neverSent). A pick that is not connected waits
// for a connection (connect).
func (c *Client) attempt(ctx context.Context, info *rpc.PickInfo, action string, args, result any) (addr string, sent bool, err error) {
	addr, e, err := c.pick(info)
	if err != nil {
		return "", false, err
	}
	picked := true
	if e.cl.Load() == nil {
		start := time.Now()
		if addr, e, picked, err = c.connect(ctx, info, action, addr, e); err != nil {
			return addr, false, err
		}
		if _, ok := ctx.Deadline(); !ok {
			// The wait for a connection counts in the call's Timeout.
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, start.Add(c.clientTimeout()))
			defer cancel()
		}
	}
	err = c.send(ctx, addr, e, picked, action, args, result)
	if err == nil {
		return addr, true, nil
	}
	return addr, !neverSent(err), err
}

// movable reports whether an attempt that was never written may move to
// another endpoint: the call's ctx runs, the client is open, and the
// attempt did not fail after looking over the set already (connect) or
// for want of endpoints.
func (c *Client) movable(ctx context.Context, err error) bool {
	var de *dialError
	if errors.As(err, &de) && de.swept {
		return false
	}
	return ctx.Err() == nil && !c.closed.Load() && !errors.Is(err, errNoEndpoints) && !errors.Is(err, rpc.ErrClosed)
}

// neverSent reports an attempt's error that shows its request was not
// written: [rpc.ErrNotSent], which send makes every failed dial's error
// match (see notSent).
func neverSent(err error) bool { return errors.Is(err, rpc.ErrNotSent) }

// notSentError adds [rpc.ErrNotSent] to an error whose call was not
// written, its text unchanged (never empty).
type notSentError struct{ err error }

func (e *notSentError) Error() string {
	if s := e.err.Error(); s != "" {
		return s
	}
	return "cluster: call not sent"
}
func (e *notSentError) Unwrap() []error { return []error{e.err, rpc.ErrNotSent} }

// notSent makes the error of an attempt that wrote nothing match
// [rpc.ErrNotSent], so that a caller, and the retry policy, know the call
// did not run: [rpc.ErrNoServer] from rpc.Client, which it returns only
// when it could not dial again before writing (the endpoint's server went
// away), and a dial that the attempt's ctx ended.
func notSent(err error) error {
	if err == nil || errors.Is(err, rpc.ErrNotSent) {
		return err
	}
	return &notSentError{err}
}

// send runs one attempt on e, which pick (or connect) counted in flight,
// reports it to the balancer when picked says the attempt holds the
// balancer's pick of it, and ends it.
func (c *Client) send(ctx context.Context, addr string, e *endpoint, picked bool, action string, args, result any) error {
	start := time.Now()
	sent := false
	dialing := e.cl.Load() == nil
	cl, err := c.client(ctx, e)
	switch {
	case err == nil:
		sent = true
		if dialing {
			// The latency is the call's, not the dial's: a first sample
			// of a few ms of dial would keep p2c off the endpoint for
			// many Decay periods.
			start = time.Now()
		}
		err = cl.Invoke(ctx, action, args, result)
		if errors.Is(err, rpc.ErrNoServer) {
			// Its client found the connection gone and could not dial
			// again: nothing was written, and the endpoint is down.
			c.lost(e, err)
			err = notSent(err)
		}
	case ctx.Err() == nil:
		err = &dialError{addr: addr, err: err}
	case errors.Is(err, context.DeadlineExceeded):
		err = notSent(fmt.Errorf("%w (%s, dialing %s): %w", rpc.ErrTimeout, action, addr, err))
	default:
		err = notSent(fmt.Errorf("cluster: %s, dialing %s: %w", action, addr, err))
	}
	e.attempts.Add(1)
	if err != nil {
		e.failures.Add(1)
	}
	end := time.Now()
	var res rpc.PickResult
	switch {
	case !sent && ctx.Err() == nil:
		res = rpc.PickResult{Unavailable: true, Latency: end.Sub(start)}
	case !sent: // a dial the caller's deadline or cancel cut short: no sample (the dial is not the call's latency)
		res = rpc.PickResult{Canceled: true}
	default:
		res = classify(ctx, err, end.Sub(start), c.healthOn())
	}
	if sent && c.healthOn() {
		c.observe(ctx, e, start, end, err)
	}
	if picked {
		c.b.Done(addr, res)
	}
	e.release()
	return err
}
