package balance

import "github.com/lifenet/lifenet/rpc"

// RoundRobin sends each call to the next endpoint in turn, ignoring
// weights, as grpc's round_robin; it starts at a random endpoint, so that
// many clients started together do not all begin with the first. A turn
// that falls on a shielded (or excluded) endpoint goes to one of the
// others at random, so they share its turns evenly.
type RoundRobin struct{ s *set }

var _ rpc.Balancer = (*RoundRobin)(nil)

// NewRoundRobin returns a RoundRobin balancer with no endpoints yet.
func NewRoundRobin(cfg Config) (*RoundRobin, error) {
	s, err := newSet(cfg, nil)
	if err != nil {
		return nil, err
	}
	return &RoundRobin{s}, nil
}

// Update implements [rpc.Balancer].
func (r *RoundRobin) Update(endpoints []rpc.Endpoint) { r.s.update(endpoints) }

// Pick implements [rpc.Balancer].
func (r *RoundRobin) Pick(info rpc.PickInfo) (string, error) {
	return r.s.take(r.s.rotate(r.s.snap.Load(), &info))
}

// rotate is round-robin over the endpoints, with random among the usable
// ones when the turn's is not.
func (s *set) rotate(sn *snapshot, info *rpc.PickInfo) *endpoint {
	n := len(sn.eps)
	if n == 0 {
		return nil
	}
	var now int64
	if e := sn.eps[s.next.Add(1)%uint64(n)]; s.usable(e, info, &now) {
		return e
	}
	return s.random(sn, info, false, &now)
}

// Done implements [rpc.Balancer].
func (r *RoundRobin) Done(addr string, result rpc.PickResult) { r.s.done(addr, result) }

// Stats returns the state of each endpoint of the current set, in order.
func (r *RoundRobin) Stats() []EndpointStats { return r.s.stats() }
