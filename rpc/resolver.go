package rpc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
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

// MaxEndpointAddr bounds the length of an [Endpoint]'s Addr: a registry
// entry longer than this is not a server address.
const MaxEndpointAddr = 1024

// Validate reports whether e's Addr names one server a [Client] can dial:
// not empty, at most [MaxEndpointAddr] bytes, no comma (one server, not a
// list), no space or control byte, a scheme Dial takes (none, which means
// tcp; tcp, tls, udp, ws, wss, http or https), a host, and a port of 1 to
// 65535 (needed for tcp, tls and udp; optional for the URL schemes). The
// error wraps [ErrAddress]; it quotes the address only when it is within
// [MaxEndpointAddr]. It checks nothing else of e: Weight and the labels
// are only read by balancers. A [Resolver] may report invalid endpoints:
// its consumer (the cluster client) skips them.
func (e Endpoint) Validate() error {
	a := e.Addr
	switch {
	case a == "":
		return fmt.Errorf("%w: empty", ErrAddress)
	case len(a) > MaxEndpointAddr:
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrAddress, len(a), MaxEndpointAddr)
	}
	for i := 0; i < len(a); i++ {
		switch c := a[i]; {
		case c == ',':
			return fmt.Errorf("%w: %q is a list (one server per endpoint)", ErrAddress, a)
		case c <= ' ' || c == 0x7f:
			return fmt.Errorf("%w: %q has a space or a control byte", ErrAddress, a)
		}
	}
	us, err := parseServers(a)
	if err != nil {
		return err
	}
	u := us[0]
	if u.Hostname() == "" {
		return fmt.Errorf("%w: %q has no host", ErrAddress, a)
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "tcp", "tls", "udp":
			return fmt.Errorf("%w: %q has no port", ErrAddress, a)
		}
		return nil
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%w: %q: port %s (1 to 65535)", ErrAddress, a, port)
	}
	return nil
}

// Resolver finds the servers of a service. Watch calls update with the
// whole current set first and again each time it changes, from one
// goroutine at a time, until ctx ends; it then returns ctx's error. A
// resolver that loses its source (a registry that cannot be reached) keeps
// the last set it reported rather than reporting an empty one, and returns
// an error only when it cannot go on at all. update owns the slice it is
// given. A registry's entries are not trusted: the consumer of a set
// checks each endpoint ([Endpoint.Validate]) and skips those it cannot
// use, so a resolver may pass them on.
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
