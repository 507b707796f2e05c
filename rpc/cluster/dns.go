package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// DefaultDNSInterval is how often a [DNSResolver] looks its name up again.
const DefaultDNSInterval = 30 * time.Second

// DNSResolver is an [rpc.Resolver] of DNS names: the A and AAAA records of
// Host with Port, or, when Service is set, the SRV records of
// _Service._Proto.Host (each target's addresses with the record's port,
// its weight as [rpc.Endpoint.Weight], its priority and target in Meta).
// It looks the name up every Interval and reports the set only when it
// changed. A lookup that fails or finds nothing keeps the last set (an
// outage of DNS never empties it); until a first lookup succeeds, it tries
// again every second (or Interval, if shorter).
type DNSResolver struct {
	// Host is the name looked up (a trailing dot makes it absolute: no
	// search domain is tried).
	Host string
	// Port is the port of the A/AAAA form's endpoints.
	Port int
	// Service and Proto (default "tcp") make it the SRV form.
	Service, Proto string
	// Interval is the time between lookups (default 30 s).
	Interval time.Duration
	// Resolver does the lookups (nil: net.DefaultResolver).
	Resolver *net.Resolver
}

// Watch implements [rpc.Resolver]. It fails at once, with [ErrConfig], on
// a DNSResolver with no Host, or with neither Port nor Service.
func (d DNSResolver) Watch(ctx context.Context, update func([]rpc.Endpoint)) error {
	switch {
	case d.Host == "":
		return fmt.Errorf("%w: DNSResolver with no Host", ErrConfig)
	case d.Service == "" && (d.Port <= 0 || d.Port > 65535):
		return fmt.Errorf("%w: DNSResolver of %s: Port %d (1 to 65535) or Service needed", ErrConfig, d.Host, d.Port)
	case d.Interval < 0:
		return fmt.Errorf("%w: DNSResolver of %s: Interval %v < 0", ErrConfig, d.Host, d.Interval)
	}
	interval := cmp.Or(d.Interval, DefaultDNSInterval)
	var last []rpc.Endpoint
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		eps, err := d.lookup(ctx)
		switch {
		case err != nil || len(eps) == 0:
			// keep the last set
		case !slices.EqualFunc(eps, last, sameEndpoint):
			last = eps
			update(slices.Clone(eps))
		}
		next := interval
		if last == nil {
			next = min(interval, time.Second)
		}
		t.Reset(next)
	}
}

func sameEndpoint(a, b rpc.Endpoint) bool {
	return a.Addr == b.Addr && a.Weight == b.Weight && a.Meta["priority"] == b.Meta["priority"]
}

func (d DNSResolver) resolver() *net.Resolver {
	if d.Resolver != nil {
		return d.Resolver
	}
	return net.DefaultResolver
}

// lookup returns the name's endpoints, sorted by Addr.
func (d DNSResolver) lookup(ctx context.Context) ([]rpc.Endpoint, error) {
	r := d.resolver()
	var eps []rpc.Endpoint
	if d.Service == "" {
		ips, err := r.LookupIPAddr(ctx, d.Host)
		if err != nil {
			return nil, err
		}
		for _, ip := range ips {
			eps = append(eps, rpc.Endpoint{Addr: net.JoinHostPort(ip.IP.String(), strconv.Itoa(d.Port))})
		}
	} else {
		_, srvs, err := r.LookupSRV(ctx, d.Service, cmp.Or(d.Proto, "tcp"), d.Host)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, s := range srvs {
			ips, err := r.LookupIPAddr(ctx, s.Target)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			target := strings.TrimSuffix(s.Target, ".")
			for _, ip := range ips {
				eps = append(eps, rpc.Endpoint{
					Addr:   net.JoinHostPort(ip.IP.String(), strconv.Itoa(int(s.Port))),
					Weight: max(int(s.Weight), 1),
					Meta:   map[string]string{"target": target, "priority": strconv.Itoa(int(s.Priority))},
				})
			}
		}
		if len(eps) == 0 && len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
	}
	slices.SortFunc(eps, func(a, b rpc.Endpoint) int { return strings.Compare(a.Addr, b.Addr) })
	eps = slices.CompactFunc(eps, func(a, b rpc.Endpoint) bool { return a.Addr == b.Addr })
	return eps, nil
}
