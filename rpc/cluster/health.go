package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// Health is whether a [Client] sends new calls to an endpoint, and if not,
// why ([EndpointState.Health]). The client itself decides it, from the
// endpoint's replies and its health checks ([Config.ProbeInterval]); it is
// apart from the balancer's own shield (a connection refused or reset).
type Health int32

const (
	// HealthOK: the endpoint takes calls.
	HealthOK Health = iota
	// HealthNoReply: [Config.ShieldTimeouts] attempts in a row timed out
	// with no reply from the endpoint since they were written (its link
	// is down, or it hangs). It takes no new call until a probe on a new
	// connection, or a call, gets a reply.
	HealthNoReply
	// HealthNotServing: the server says it is not serving: Api/Health
	// answered 503 ([rpc.ErrNotServing], as after [rpc.Server.SetServing]
	// with false, or while it shuts down), or a call was refused with a
	// 503 [rpc.ErrNotServing] or [rpc.ErrShutdown]. It takes no new call
	// until Api/Health answers "Serving" (or any other reply but a 503:
	// a server without the action).
	HealthNotServing
)

var healthNames = [...]string{"ok", "no reply", "not serving"}

// String returns "ok", "no reply" or "not serving".
func (h Health) String() string {
	if h >= 0 && int(h) < len(healthNames) {
		return healthNames[h]
	}
	return fmt.Sprintf("Health(%d)", int32(h))
}

// MarshalText implements encoding.TextMarshaler: the String form.
func (h Health) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: the String form.
func (h *Health) UnmarshalText(b []byte) error {
	for i, n := range healthNames {
		if string(b) == n {
			*h = Health(i)
			return nil
		}
	}
	return fmt.Errorf("cluster: unknown Health %q", b)
}

// actionHealth is the server's built-in health action (rpc.Server's).
const actionHealth = "Api/Health"

// maxProbes bounds the probes out at once; an endpoint skipped for it is
// probed at a later tick.
const maxProbes = 64

// epoch is the origin of the instants (ns) the health state keeps.
var epoch = time.Now()

func mono(t time.Time) int64 { return int64(t.Sub(epoch)) }

// healthOn reports whether the client runs health checks and shields.
func (c *Client) healthOn() bool { return c.cfg.ProbeInterval > 0 }

// shielded reports whether the client keeps new calls off e.
func (e *endpoint) shielded() bool { return e.health.Load() != int32(HealthOK) }

// refusing reports a 503 by which a server refuses a call it did not run
// because it drains: [rpc.ErrNotServing] or [rpc.ErrShutdown].
func refusing(err error) bool {
	var ae *rpc.APIError
	return errors.As(err, &ae) && (errors.Is(ae, rpc.ErrNotServing) || errors.Is(ae, rpc.ErrShutdown))
}

// observe feeds the end of an attempt written to e (its client was
// there) to e's health:
//
//   - A reply (a success, an error reply) clears the count of timeouts and
//     brings back an endpoint shielded for no reply.
//   - A 503 refusal (see refusing) shields it as not serving.
//   - A timeout of a request written after the last reply counts one;
//     Config.ShieldTimeouts in a row shield it for no reply. A timeout
//     with a reply since its request was written is the slowness of that
//     call (a heavy action), not of the endpoint.
func (c *Client) observe(ctx context.Context, e *endpoint, start, end time.Time, err error) {
	if err == nil {
		c.replied(e, end)
		return
	}
	c.observeErr(ctx, e, start, end, err)
}

// observeErr is observe of a failed attempt (apart, so that a success
// allocates nothing: errors.As's target escapes).
func (c *Client) observeErr(ctx context.Context, e *endpoint, start, end time.Time, err error) {
	var ae *rpc.APIError
	switch {
	case errors.As(err, &ae):
		if refusing(ae) {
			c.shield(e, HealthNotServing, "a 503 reply: "+ae.Message)
			return
		}
		c.replied(e, end)
	case errors.Is(err, rpc.ErrTimeout) && !neverSent(err) && !errors.Is(ctx.Err(), context.Canceled):
		c.timedOut(e, start)
	}
}

// replied records a reply from e at t.
func (c *Client) replied(e *endpoint, t time.Time) {
	if now := mono(t); e.lastReply.Load() < now {
		e.lastReply.Store(now)
	}
	if e.timeouts.Load() != 0 {
		e.timeouts.Store(0)
	}
	if e.health.Load() == int32(HealthNoReply) {
		c.unshield(e, HealthNoReply)
	}
}

// timedOut counts a timed-out request written to e at start, if no reply
// came from e since, and shields e at Config.ShieldTimeouts of them.
func (c *Client) timedOut(e *endpoint, start time.Time) {
	if c.cfg.ShieldTimeouts < 0 || mono(start) <= e.lastReply.Load() {
		return
	}
	if n := e.timeouts.Add(1); int(n) >= c.cfg.ShieldTimeouts {
		c.shield(e, HealthNoReply, fmt.Sprintf("%d timeouts in a row, no reply since they were written", n))
	}
}

// shield keeps new calls off e for reason h. Shielded for no reply, e's
// client is retired: its connection may be stuck behind TCP's
// retransmissions (whose backoff grows to seconds while a link is down),
// so that probes, and any call sent to e meanwhile, dial afresh.
func (c *Client) shield(e *endpoint, h Health, why string) {
	old := Health(e.health.Swap(int32(h)))
	if old == h {
		return
	}
	if h == HealthNoReply {
		c.retire(e)
	}
	c.log.Warn("cluster: endpoint shielded", "addr", e.addr, "health", h.String(), "why", why)
}

// unshield brings e back if its health is still from.
func (c *Client) unshield(e *endpoint, from Health) {
	if !e.health.CompareAndSwap(int32(from), int32(HealthOK)) {
		return
	}
	e.timeouts.Store(0)
	c.log.Info("cluster: endpoint back", "addr", e.addr, "was", from.String())
}

// retire sets e's client aside: new calls dial a new one. It is closed
// once every call already on it has ended (twice the client's Timeout:
// a 401 retried after Login takes two), by the probe loop, or when e
// closes; until then a late reply on it still reaches its caller.
func (c *Client) retire(e *endpoint) {
	e.mu.Lock()
	defer e.mu.Unlock()
	cl := e.cl.Swap(nil)
	if cl == nil {
		return
	}
	if e.state.Load()&closedBit != 0 {
		cl.Close()
		return
	}
	e.retired = append(e.retired, retiredClient{cl: cl, closeAt: mono(time.Now()) + 2*int64(c.clientTimeout())})
}

// clientTimeout is the endpoint clients' Timeout, default filled in.
func (c *Client) clientTimeout() time.Duration {
	if c.cfg.Client.Timeout > 0 {
		return c.cfg.Client.Timeout
	}
	return rpc.DefaultTimeout
}

// closeRetired closes e's retired clients whose time has come.
func (e *endpoint) closeRetired(now int64) {
	e.mu.Lock()
	var due []*rpc.Client
	kept := e.retired[:0]
	for _, r := range e.retired {
		if r.closeAt <= now {
			due = append(due, r.cl)
		} else {
			kept = append(kept, r)
		}
	}
	e.retired = kept
	e.mu.Unlock()
	for _, cl := range due {
		cl.Close()
	}
}

// probeLoop runs the health checks every Config.ProbeInterval until the
// client closes: Api/Health to each endpoint of the set that is connected
// and has the action, and to each shielded one.
func (c *Client) probeLoop() {
	defer c.probes.Done()
	t := time.NewTicker(c.cfg.ProbeInterval)
	defer t.Stop()
	sem := make(chan struct{}, maxProbes)
	for {
		select {
		case <-c.wctx.Done():
			return
		case <-t.C:
		}
		now := mono(time.Now())
		for _, e := range *c.eps.Load() {
			_, removed, closed := e.inFlight()
			if closed {
				continue
			}
			e.closeRetired(now)
			if removed || !e.wantsProbe() {
				continue
			}
			select {
			case sem <- struct{}{}:
			default:
				continue // enough out: a later tick
			}
			if !e.probing.CompareAndSwap(false, true) {
				<-sem
				continue // the last one is still out
			}
			c.probes.Add(1)
			go func() {
				defer c.probes.Done()
				c.probe(e)
				e.probing.Store(false)
				<-sem
			}()
		}
	}
}

// wantsProbe reports whether the tick probes e: shielded, or connected
// with an Api/Health to ask (a never-dialed endpoint is not dialed for
// it).
func (e *endpoint) wantsProbe() bool {
	if e.shielded() {
		return true
	}
	return e.cl.Load() != nil && !e.noHealth.Load()
}

// probe asks e's server Api/Health, within Config.ProbeTimeout, on e's
// client, or on a new one when e has none (shielded for no reply: its
// client retired), which becomes e's once it has answered: a connection
// that never answered is closed, so that each probe of an endpoint
// shielded for no reply dials afresh.
func (c *Client) probe(e *endpoint) {
	ctx, cancel := context.WithTimeout(c.wctx, c.cfg.ProbeTimeout)
	defer cancel()
	cl := e.cl.Load()
	fresh := cl == nil
	if fresh {
		if !e.shielded() {
			return
		}
		var err error
		if cl, err = rpc.Dial(ctx, e.addr, c.cfg.Client); err != nil {
			return // still unreachable: still shielded
		}
	}
	start := time.Now()
	var status string
	err := cl.Invoke(ctx, actionHealth, nil, &status)
	var ae *rpc.APIError
	if fresh {
		if err != nil && !errors.As(err, &ae) {
			cl.Close() // no reply on it
		} else {
			e.mu.Lock()
			_, ierr := e.install(cl)
			e.mu.Unlock()
			if ierr != nil {
				return // the endpoint closed meanwhile
			}
			e.failedAt.Store(0)
			c.markReady(e)
		}
	}
	switch {
	case err == nil:
		c.replied(e, time.Now())
		c.unshield(e, HealthNotServing)
	case errors.As(err, &ae) && errors.Is(ae, rpc.ErrUnavailable) && !errors.Is(ae, rpc.ErrBusy):
		c.shield(e, HealthNotServing, "Api/Health: "+ae.Message)
	case errors.As(err, &ae):
		// A reply all the same: the server is there, without the action
		// (404: a NewLife server) or refusing it; it takes calls.
		if errors.Is(ae, rpc.ErrNotFound) {
			e.noHealth.Store(true)
		}
		c.replied(e, time.Now())
		c.unshield(e, HealthNotServing)
	case errors.Is(err, rpc.ErrTimeout) && c.wctx.Err() == nil:
		c.timedOut(e, start)
	}
}
