package rpc

import (
	"context"
	"errors"
	"slices"
)

// Endpoint is one server a client may send calls to, as a [Resolver]
// reports it. Only Addr is required; the rest is metadata balancers read.
type Endpoint struct {
	// Addr is what Dial takes for one server: "host:port" (SRMP over TCP)
	// or a URL ("tcp://", "udp://", "http://", …).
	Addr string `json:"addr"`
	// Weight is the endpoint's relative share for weighted balancing; 0
	// means 1.
	Weight int `json:"weight,omitempty"`
	// Zone and Version are labels a balancer may prefer or filter on.
	Zone    string `json:"zone,omitempty"`
	Version string `json:"version,omitempty"`
	// Meta holds any other labels; a resolver gives each set its own map.
	Meta map[string]string `json:"meta,omitempty"`
}

// Resolver finds the servers of a service. Watch calls update with the
// whole current set first and again each time it changes, from one
// goroutine at a time, until ctx ends; it then returns ctx's error. A
// resolver that loses its source (a registry that cannot be reached) keeps
// the last set it reported rather than reporting an empty one, and returns
// an error only when it cannot go on at all. update owns the slice it is
// given.
type Resolver interface {
	Watch(ctx context.Context, update func([]Endpoint)) error
}

// ErrNoEndpoints is returned by a [Resolver] that has no servers to report
// and never will (an empty static list).
var ErrNoEndpoints = errors.New("rpc: no endpoints")

// StaticResolver reports endpoints once and never changes them: the
// resolver of a fixed server list.
type StaticResolver []Endpoint

// Watch implements [Resolver]: it reports the list, then waits for ctx.
func (s StaticResolver) Watch(ctx context.Context, update func([]Endpoint)) error {
	if len(s) == 0 {
		return ErrNoEndpoints
	}
	update(slices.Clone(s))
	<-ctx.Done()
	return ctx.Err()
}
