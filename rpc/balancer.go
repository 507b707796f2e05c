package rpc

import (
	"context"
	"slices"
	"time"
)

// Balancer chooses the server of each call among the endpoints a
// [Resolver] reports. The policies (failover, round-robin, weighted,
// power of two choices, consistent hashing) are in package
// [github.com/lifenet/lifenet/rpc/balance].
//
// A Balancer is safe for concurrent use: Pick and Done are called from
// every calling goroutine, Update from one goroutine at a time. Pick and
// Done are on every call's path and must not allocate.
type Balancer interface {
	// Update replaces the endpoint set. An endpoint keeps its identity,
	// and any state the balancer holds for it, by Addr across updates;
	// the balancer owns the slice.
	Update(endpoints []Endpoint)
	// Pick chooses the endpoint for one attempt of a call and counts it
	// in flight until Done. It fails, with [ErrNoEndpoints], only when the
	// set is empty. It returns an endpoint info excludes
	// ([PickInfo.Excludes]) only if no other endpoint is usable and, when
	// every endpoint is shielded, the one whose shield ends soonest (as a
	// probe) rather than fail.
	Pick(info PickInfo) (addr string, err error)
	// Done reports how an attempt that Pick sent to addr ended. It is
	// called once for each Pick that returned no error, with the address
	// Pick returned, after the attempt ended, whether or not addr is still
	// in the set. A balancer ignores a Done for an address it does not
	// know and never counts calls in flight below zero.
	Done(addr string, result PickResult)
}

// PickInfo is what a [Balancer] knows about the call it picks for.
type PickInfo struct {
	Action string
	// Key is the call's balancing key ([WithBalanceKey]), "" if none;
	// hashing balancers send calls with the same key to the same server.
	Key string
	// Exclude is an endpoint the attempt must avoid (the one the previous
	// attempt of the same call failed on), "" if none.
	Exclude string
	// Tried lists the endpoints every earlier attempt of the same call
	// went to (Exclude among them), nil for a first attempt: the attempt
	// avoids them all, as it avoids Exclude, so that a call retried over
	// three endpoints or more does not go back to one that failed it. The
	// caller owns the slice: Pick reads it and does not keep it.
	Tried []string
}

// Excludes reports whether the attempt must avoid addr: it is Exclude or
// one of Tried.
func (p *PickInfo) Excludes(addr string) bool {
	return p.Exclude != "" && addr == p.Exclude || slices.Contains(p.Tried, addr)
}

// PickResult is how one attempt ended, as [Balancer.Done] learns it.
type PickResult struct {
	// Latency is from the pick to the reply (or to the failure).
	Latency time.Duration
	// Unavailable is set when the endpoint itself failed: the connection
	// was refused, reset or closed, or the server is draining. Such an
	// endpoint is shielded (skipped by Pick) until it is probed back. An
	// error reply from the server is not unavailability, and neither is a
	// timeout by itself (a slow server is not a down one: its Latency
	// tells).
	Unavailable bool
	// Canceled is set when the attempt ended before its reply for a reason
	// not of the endpoint: the caller's ctx ended, or another attempt of
	// the same call answered first. The balancer only ends the attempt's
	// in-flight count: no latency sample, no shield change.
	Canceled bool
}

type balanceKeyType struct{}

// WithBalanceKey returns a ctx whose calls carry key as their balancing
// key ([PickInfo.Key]): a hashing balancer sends every call with the same
// key to the same server while the endpoint set stays the same.
func WithBalanceKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, balanceKeyType{}, key)
}

// BalanceKey returns the balancing key [WithBalanceKey] put in ctx, or "".
func BalanceKey(ctx context.Context) string {
	k, _ := ctx.Value(balanceKeyType{}).(string)
	return k
}
