package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// How the client makes its endpoints' connections (the package's
// "Connecting").
const (
	// connectStagger is how long a call waits for the dial of the
	// endpoint picked for it before it goes to an endpoint already
	// connected, or, with none, dials the next pick as well (happy
	// eyeballs): a dial on a LAN takes a millisecond, one to a black hole
	// its whole ConnectTimeout.
	connectStagger = 250 * time.Millisecond
	// connectFanout bounds the young dials (not yet connectStagger old)
	// one call waits on at once: when a dial fails, the call starts dials
	// of new picks up to it, so that a set of thousands of dead endpoints
	// is swept in parallel; maxWaits bounds them all, the black holes
	// among them.
	connectFanout = 32
	maxWaits      = 64
	// maxDials bounds the dials a client runs at once for its calls'
	// picks (a call's own inline dial, as a race's, is not counted).
	maxDials = 256
	// redialAfter is how long after a failed dial an endpoint is not
	// dialed again for a call: a pick that falls on it meanwhile reports
	// it unavailable to the balancer (which shields it) and the call goes
	// on to another.
	redialAfter = time.Second
	// maxMoves bounds the times an attempt that was never written moves
	// to another endpoint, whatever the RetryPolicy.
	maxMoves = 2
	// noProgress bounds the picks in a row that start no dial before a
	// call with no dial to wait on gives up.
	noProgress = 3
)

// dialError is the error of an attempt whose endpoint could not be
// dialed: it matches [rpc.ErrNoServer], [rpc.ErrNotSent] (nothing was
// written) and the dial's error. swept is set when the call looked for a
// connection over the set already (connect): moving it would not help.
type dialError struct {
	addr  string
	err   error
	swept bool
}

func (d *dialError) Error() string {
	if d.err == nil {
		return "cluster: dial " + d.addr + ": failed"
	}
	return "cluster: dial " + d.addr + ": " + d.err.Error()
}
func (d *dialError) Unwrap() []error { return []error{rpc.ErrNoServer, rpc.ErrNotSent, d.err} }

// errNoConnection is the error of a call that found no endpoint
// connected, and none it could connect to.
var errNoConnection = errors.New("no endpoint connected")

// startDial returns e's dial in progress, or starts one, or returns nil:
// e is connected, or (unless force) its last dial failed too recently or
// every dial slot is taken. A forced dial (a call's inline dial) takes no
// slot.
func (c *Client) startDial(e *endpoint, force bool) *dial {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d := e.dialer; d != nil {
		return d
	}
	if e.cl.Load() != nil || e.state.Load()&closedBit != 0 {
		return nil
	}
	d := &dial{done: make(chan struct{}), start: time.Now()}
	if !force {
		if e.recentlyFailed(mono(time.Now())) {
			return nil
		}
		select {
		case c.dialSem <- struct{}{}:
			d.sem = true
		default:
			return nil
		}
	}
	e.dialer = d
	c.dials.Add(1)
	go c.runDial(e, d)
	return d
}

// runDial dials e within Config.ConnectTimeout on the client's ctx (not a
// caller's: a dial goes on when its callers give up) and, with health
// checks on, waits for a reply to Api/Health on the new connection. It
// installs the client, or records the failure (the endpoint is then not
// dialed again for a call for redialAfter), reports the picks handed to
// it, and wakes the calls waiting for a connection.
func (c *Client) runDial(e *endpoint, d *dial) {
	defer c.dials.Done()
	start := time.Now()
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.ConnectTimeout)
	cl, err := rpc.Dial(ctx, e.addr, c.cfg.Client)
	var rtt time.Duration
	if err == nil && c.healthOn() {
		if rtt, err = c.check(ctx, e, cl); err != nil {
			cl.Close()
		}
	}
	cancel()
	closing := c.ctx.Err() != nil
	e.mu.Lock()
	if err == nil {
		cl, err = e.install(cl)
	}
	e.dialer = nil
	handed := d.handed
	d.cl, d.err, d.rtt, d.took = cl, err, rtt, time.Since(start)
	e.mu.Unlock()

	res := rpc.PickResult{Latency: rtt}
	switch {
	case err == nil:
		e.failedAt.Store(0)
		c.markReady(e)
	case closing || errors.Is(err, rpc.ErrClosed):
		res = rpc.PickResult{Canceled: true}
	default:
		e.failErr.Store(&err)
		e.failedAt.Store(max(mono(time.Now()), 1))
		e.dialFails.Add(1)
		c.logLimited(kindDialFailed, "cluster: dial failed", "addr", clip(e.addr), "err", err)
		res = rpc.PickResult{Unavailable: true, Latency: d.took}
	}
	close(d.done)
	if d.sem {
		<-c.dialSem
	}
	for range handed {
		c.b.Done(e.addr, res)
	}
	c.dialEnded()
}

// check asks Api/Health on cl, e's new connection: any reply shows a
// server there (a 404: one without the action, asked no more; a 503: one
// that does not serve, shielded until its probe says it does); no reply
// within ctx fails the dial. It returns the round trip.
func (c *Client) check(ctx context.Context, e *endpoint, cl *rpc.Client) (time.Duration, error) {
	start := time.Now()
	var status string
	err := cl.Invoke(ctx, actionHealth, nil, &status)
	end := time.Now()
	var ae *rpc.APIError
	switch {
	case err == nil:
		c.replied(e, end)
		c.unshield(e, HealthNotServing)
	case errors.As(err, &ae) && errors.Is(ae, rpc.ErrUnavailable) && !errors.Is(ae, rpc.ErrBusy):
		c.replied(e, end)
		c.shield(e, HealthNotServing, "Api/Health: "+ae.Message)
	case errors.As(err, &ae):
		if errors.Is(ae, rpc.ErrNotFound) {
			e.noHealth.Store(true)
		}
		c.replied(e, end)
		c.unshield(e, HealthNotServing)
	default:
		return 0, fmt.Errorf("connected, but no reply to %s within %v: %w", actionHealth, c.cfg.ConnectTimeout, err)
	}
	return end.Sub(start), nil
}

// client returns e's client for an attempt picked for it, dialing it if
// need be and waiting for the dial as long as ctx lets it: the path of a
// race's attempts, and of a pick whose client was set aside between the
// pick and the send.
func (c *Client) client(ctx context.Context, e *endpoint) (*rpc.Client, error) {
	if cl := e.cl.Load(); cl != nil {
		return cl, nil
	}
	d := c.startDial(e, true)
	if d == nil {
		if cl := e.cl.Load(); cl != nil {
			return cl, nil
		}
		return nil, rpc.ErrClosed // the endpoint closed
	}
	select {
	case <-d.done:
		return d.cl, d.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// lost records that e's client could not dial its server again (the
// call's error matched rpc.ErrNoServer): the client is set aside, so that
// e counts as not connected and its next dial checks it afresh.
func (c *Client) lost(e *endpoint, err error) {
	e.failErr.Store(&err)
	e.failedAt.Store(max(mono(time.Now()), 1))
	e.dialFails.Add(1)
	c.retire(e)
}

// markReady adds e, just connected, to the list of endpoints that have
// connected (the calls' fallback, see readyEndpoint), and drops from it
// the endpoints that closed.
func (c *Client) markReady(e *endpoint) {
	if e.listed.Load() {
		return
	}
	c.readyMu.Lock()
	defer c.readyMu.Unlock()
	if e.listed.Load() || e.state.Load()&closedBit != 0 {
		return
	}
	old := *c.ready.Load()
	next := make([]*endpoint, 0, len(old)+1)
	for _, o := range old {
		if _, _, closed := o.inFlight(); !closed {
			next = append(next, o)
		} else {
			o.listed.Store(false)
		}
	}
	next = append(next, e)
	e.listed.Store(true)
	c.ready.Store(&next)
}

// pruneReady keeps in the ready list only the endpoints of set (called by
// update, under Client.mu).
func (c *Client) pruneReady(set map[string]*endpoint) {
	c.readyMu.Lock()
	defer c.readyMu.Unlock()
	old := *c.ready.Load()
	next := make([]*endpoint, 0, len(old))
	for _, o := range old {
		if set[o.addr] == o {
			if _, removed, closed := o.inFlight(); !removed && !closed {
				next = append(next, o)
				continue
			}
		}
		o.listed.Store(false)
	}
	c.ready.Store(&next)
}

// readyEndpoint returns an endpoint of the set that is connected, not
// shielded and not one info excludes (an earlier attempt's), counted in
// flight, taking them in turn; nil if there is none.
func (c *Client) readyEndpoint(info *rpc.PickInfo) *endpoint {
	list := *c.ready.Load()
	n := len(list)
	if n == 0 {
		return nil
	}
	start := int(c.readyTurn.Add(1) % uint32(n))
	for i := range n {
		e := list[(start+i)%n]
		if e.cl.Load() == nil || e.shielded() || info.Excludes(e.addr) {
			continue
		}
		if _, removed, closed := e.inFlight(); removed || closed {
			continue
		}
		if e.acquire() {
			return e
		}
	}
	return nil
}

// dialWatch returns a channel closed when the next dial ends.
func (c *Client) dialWatch() <-chan struct{} {
	c.dialMu.Lock()
	defer c.dialMu.Unlock()
	return c.dialc
}

// dialEnded wakes the calls waiting for a dial to end.
func (c *Client) dialEnded() {
	c.dialMu.Lock()
	close(c.dialc)
	c.dialc = make(chan struct{})
	c.dialMu.Unlock()
}

// waiter is a pick a connecting call holds (the endpoint counted in
// flight, the balancer's Done owed) while e's dial runs.
type waiter struct {
	addr string
	e    *endpoint
	d    *dial
}

// handOver gives w's pick to its dial, which reports it to the balancer
// when it ends (at once if it has ended), and ends w's count in flight:
// the call goes elsewhere, the dial goes on.
func (c *Client) handOver(w waiter) {
	w.e.mu.Lock()
	running := w.e.dialer == w.d
	if running {
		w.d.handed++
	}
	w.e.mu.Unlock()
	if !running {
		<-w.d.done // it ended: its result is set
		switch {
		case w.d.err == nil:
			c.b.Done(w.addr, rpc.PickResult{Latency: w.d.rtt})
		case errors.Is(w.d.err, rpc.ErrClosed) || c.ctx.Err() != nil:
			c.b.Done(w.addr, rpc.PickResult{Canceled: true})
		default:
			c.b.Done(w.addr, rpc.PickResult{Unavailable: true, Latency: w.d.took})
		}
	}
	w.e.release()
}

// connect finds a connected endpoint for an attempt whose pick, addr (e,
// counted in flight), is not connected. It starts (or joins) e's dial and
// waits for it; when the dial fails it dials new picks, up to
// connectFanout at once, and when connectStagger passes with no
// connection it dials the next pick as well; as soon as the wait is over
// (a dial failed, or the stagger passed) and some endpoint is connected,
// the call goes there, the dials it started going on without it. It
// returns the endpoint, counted in flight, and whether the attempt holds
// the balancer's pick of it (false for an endpoint taken from the ready
// list, which the balancer did not pick). An endpoint that connects but
// says it does not serve (a 503 to the connect check) is passed over as a
// failed one. It fails, with a *dialError (swept), when every pick failed
// and no dial is left to wait for; with rpc.ErrTimeout (and
// rpc.ErrNotSent) when the call's Timeout passes first, or its ctx ends.
func (c *Client) connect(ctx context.Context, info *rpc.PickInfo, action, addr string, e *endpoint) (string, *endpoint, bool, error) {
	var ws []waiter
	lastAddr, lastE := addr, e
	var lastErr error
	// fail ends the call's wait with err, counted as a failed attempt on
	// lastE (the endpoint it last waited for), as an attempt on an
	// endpoint whose dial fails is.
	fail := func(err error) (string, *endpoint, bool, error) {
		lastE.attempts.Add(1)
		lastE.failures.Add(1)
		return lastAddr, nil, false, err
	}
	// add takes a pick (counted in flight on its endpoint, its Done owed):
	// true when the endpoint is connected, to be used; else the pick is
	// kept while its dial runs, or given back.
	add := func(addr string, e *endpoint) bool {
		if e.cl.Load() != nil {
			return true
		}
		if d := c.startDial(e, false); d != nil {
			ws = append(ws, waiter{addr, e, d})
			return false
		}
		if e.cl.Load() != nil {
			return true
		}
		if err := e.lastFailure(); err != nil && e.recentlyFailed(mono(time.Now())) {
			lastAddr, lastE, lastErr = addr, e, err
			c.b.Done(addr, rpc.PickResult{Unavailable: true})
		} else {
			c.b.Done(addr, rpc.PickResult{Canceled: true})
		}
		e.release()
		return false
	}
	// leave hands every pick held but keep's over to its dial.
	leave := func(keep int) {
		for i, w := range ws {
			if i != keep {
				c.handOver(w)
			}
		}
	}
	if add(addr, e) {
		return addr, e, true, nil
	}
	// The wait is the call's: its Timeout, unless its ctx ends first.
	deadline := time.NewTimer(c.clientTimeout())
	defer deadline.Stop()
	stagger := time.NewTimer(connectStagger)
	defer stagger.Stop()
	wake := c.dialWatch()
	failed := len(ws) == 0 // move on at once: the first pick started no dial
	staggered := false
	for {
		for i := 0; i < len(ws); {
			w := ws[i]
			select {
			case <-w.d.done:
			default:
				i++
				continue
			}
			if w.d.err == nil && !w.e.shielded() {
				leave(i)
				return w.addr, w.e, true, nil
			}
			res := rpc.PickResult{Unavailable: true, Latency: w.d.took}
			err := w.d.err
			switch {
			case err == nil: // connected, but its Api/Health says it does not serve
				res = rpc.PickResult{Latency: w.d.rtt}
				err = fmt.Errorf("connected, but not serving (%s)", Health(w.e.health.Load()))
			case errors.Is(err, rpc.ErrClosed) || c.ctx.Err() != nil:
				res = rpc.PickResult{Canceled: true}
			}
			c.b.Done(w.addr, res)
			w.e.release()
			lastAddr, lastE, lastErr = w.addr, w.e, err
			ws = slices.Delete(ws, i, i+1)
			failed = true
		}
		if failed || staggered {
			if r := c.readyEndpoint(info); r != nil {
				leave(-1)
				return r.addr, r, false, nil
			}
			// Dials younger than the stagger count against the fan-out;
			// older ones (black holes, most likely) do not, up to
			// maxWaits in all.
			now := time.Now()
			young := 0
			for _, w := range ws {
				if now.Sub(w.d.start) < connectStagger {
					young++
				}
			}
			want := max(connectFanout-young, 0)
			pi := *info
			if staggered {
				// Past the stagger: dial another endpoint than those
				// dialing (under failover, the next in the list). A pick
				// after a failure does without: the endpoints that
				// failed are shielded, and excluding endpoints makes a
				// pick over a large set slow.
				want = max(want, 1)
				for _, w := range ws {
					pi.Tried = append(slices.Clip(pi.Tried), w.addr)
				}
			}
			for tries := 0; want > 0 && len(ws) < maxWaits && tries < noProgress; {
				a, pe, err := c.pick(&pi)
				if err != nil {
					break
				}
				if slices.ContainsFunc(ws, func(w waiter) bool { return w.addr == a }) {
					// Dialing already: under failover, or with no other
					// usable endpoint.
					c.b.Done(a, rpc.PickResult{Canceled: true})
					pe.release()
					tries++
					continue
				}
				n := len(ws)
				if add(a, pe) {
					leave(-1)
					return a, pe, true, nil
				}
				if len(ws) > n {
					want--
					tries = 0
				} else {
					tries++
				}
			}
			failed, staggered = false, false
			if len(ws) == 0 {
				if lastErr == nil {
					lastErr = errNoConnection
				}
				return fail(&dialError{addr: lastAddr, err: lastErr, swept: true})
			}
		}
		select {
		case <-wake:
			wake = c.dialWatch()
		case <-stagger.C:
			staggered = true
			stagger.Reset(connectStagger)
		case <-deadline.C:
			lastAddr, lastE = ws[0].addr, ws[0].e
			leave(-1)
			return fail(notSent(fmt.Errorf("%w (%s, waiting %v for a connection, dialing %s): %w",
				rpc.ErrTimeout, action, c.clientTimeout(), lastAddr, errNoConnection)))
		case <-ctx.Done():
			lastAddr, lastE = ws[0].addr, ws[0].e
			leave(-1)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fail(notSent(fmt.Errorf("%w (%s, dialing %s): %w", rpc.ErrTimeout, action, lastAddr, ctx.Err())))
			}
			return fail(notSent(fmt.Errorf("cluster: %s, dialing %s: %w", action, lastAddr, ctx.Err())))
		}
	}
}
