package balance

import "github.com/lifenet/lifenet/rpc"

// WeightedRoundRobin sends calls to the endpoints in proportion to their
// weights ([rpc.Endpoint.Weight], 0 meaning 1), spread out in the smooth
// order of nginx's weighted round-robin: weights 5:1:1 give a a b a c a a,
// not a a a a a b c. It mirrors NewLife's WeightedRoundRobinLoadBalancer
// and grpc's weighted_round_robin with fixed weights. Update computes one
// cycle of the order; picks step through it with an atomic counter, from a
// random start. A turn that falls on a shielded (or excluded) endpoint
// goes to one of the others at random, in proportion to their weights.
//
// Weights are reduced by their greatest common divisor; a cycle longer
// than 16 384 picks is scaled down in proportion, which changes each
// share by less than 1/16 384.
type WeightedRoundRobin struct{ s *set }

var _ rpc.Balancer = (*WeightedRoundRobin)(nil)

// NewWeightedRoundRobin returns a WeightedRoundRobin balancer with no
// endpoints yet.
func NewWeightedRoundRobin(cfg Config) (*WeightedRoundRobin, error) {
	s, err := newSet(cfg, buildSequence)
	if err != nil {
		return nil, err
	}
	return &WeightedRoundRobin{s}, nil
}

// Update implements [rpc.Balancer].
func (w *WeightedRoundRobin) Update(endpoints []rpc.Endpoint) { w.s.update(endpoints) }

// Pick implements [rpc.Balancer].
func (w *WeightedRoundRobin) Pick(info rpc.PickInfo) (string, error) {
	sn := w.s.snap.Load()
	if len(sn.seq) == 0 {
		return w.s.take(nil)
	}
	var now int64
	if e := sn.eps[sn.seq[w.s.next.Add(1)%uint64(len(sn.seq))]]; w.s.usable(e, &info, &now) {
		return w.s.take(e)
	}
	return w.s.take(w.s.random(sn, &info, true, &now))
}

// Done implements [rpc.Balancer].
func (w *WeightedRoundRobin) Done(addr string, result rpc.PickResult) { w.s.done(addr, result) }

// Stats returns the state of each endpoint of the current set, in order.
func (w *WeightedRoundRobin) Stats() []EndpointStats { return w.s.stats() }

// buildSequence computes one cycle of smooth weighted round-robin: at each
// step every endpoint's current weight grows by its weight, the largest is
// chosen and loses the total.
func buildSequence(sn *snapshot) {
	n := len(sn.eps)
	w := make([]int, n)
	copy(w, sn.weights)
	total := sn.total
	if total > maxSequence {
		total = 0
		for i := range w {
			w[i] = max(1, int(float64(w[i])*maxSequence/float64(sn.total)))
			total += w[i]
		}
	}
	g := 0
	for _, x := range w {
		g = gcd(g, x)
	}
	total /= g
	for i := range w {
		w[i] /= g
	}
	sn.seq = make([]int32, total)
	if total == n { // equal weights
		for i := range sn.seq {
			sn.seq[i] = int32(i)
		}
		return
	}
	cur := make([]int, n)
	for k := range sn.seq {
		best := 0
		for i := range cur {
			cur[i] += w[i]
			if cur[i] > cur[best] {
				best = i
			}
		}
		cur[best] -= total
		sn.seq[k] = int32(best)
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
