package balance

import "github.com/lifenet/lifenet/rpc"

// Failover sends every call to the first endpoint, in the resolver's
// order, that is not shielded: NewLife's default (ApiHttpClient and
// FailoverLoadBalancer). When the first is reported unavailable the calls
// go to the second, and so on; once the first's shield is over, the next
// pick probes it, and a success brings every call back to it.
type Failover struct{ s *set }

var _ rpc.Balancer = (*Failover)(nil)

// NewFailover returns a Failover balancer with no endpoints yet.
func NewFailover(cfg Config) (*Failover, error) {
	s, err := newSet(cfg, nil)
	if err != nil {
		return nil, err
	}
	return &Failover{s}, nil
}

// Update implements [rpc.Balancer].
func (f *Failover) Update(endpoints []rpc.Endpoint) { f.s.update(endpoints) }

// Pick implements [rpc.Balancer]: the first usable endpoint in order.
func (f *Failover) Pick(info rpc.PickInfo) (string, error) {
	sn := f.s.snap.Load()
	var now int64
	for _, e := range sn.eps {
		if f.s.usable(e, &info, &now) {
			return f.s.take(e)
		}
	}
	return f.s.take(f.s.fallback(sn, &info, &now))
}

// Done implements [rpc.Balancer].
func (f *Failover) Done(addr string, result rpc.PickResult) { f.s.done(addr, result) }

// Stats returns the state of each endpoint of the current set, in order.
func (f *Failover) Stats() []EndpointStats { return f.s.stats() }
