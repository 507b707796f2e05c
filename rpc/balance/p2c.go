package balance

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// P2C picks two endpoints at random and sends the call to the one with the
// lower load: its moving average of latency times its calls in flight plus
// one, as go-zero's p2c (and Finagle's). A slow or overloaded endpoint
// gets fewer calls without being starved of all of them.
//
// The average is a mean of the endpoint's samples weighted by their age,
// each weighing e^(-age/Decay) ([Config.Decay], default 10 s): at a steady
// rate a sample d later than the last weighs about 1-e^(-d/Decay) of the
// average, while the first samples, and those after a gap, are averaged
// about evenly, so that one slow call among an endpoint's first (a cold
// connection, a 20 ms outlier) weighs 1/n of its average after n calls,
// rather than setting its load for a time constant. A sample more than
// Decay after the last starts the average afresh. When P2C compares two averages, it decays
// each towards zero by the same constant for the time since its last
// sample, so an endpoint left alone for being slow is tried again (one 50
// times slower than the others after about ln 50 ≈ 4 time constants), and
// if it has become fast it has its share back from that call on. An
// endpoint with no sample yet is compared on its calls in flight alone,
// neither favoured nor penalised for latency it has not shown. Weights are
// ignored. A probe of an endpoint whose shield is over takes precedence
// when it is one of the two.
type P2C struct{ s *set }

var _ rpc.Balancer = (*P2C)(nil)

// NewP2C returns a P2C balancer with no endpoints yet.
func NewP2C(cfg Config) (*P2C, error) {
	s, err := newSet(cfg, nil)
	if err != nil {
		return nil, err
	}
	s.latency = true
	return &P2C{s}, nil
}

// Update implements [rpc.Balancer].
func (p *P2C) Update(endpoints []rpc.Endpoint) { p.s.update(endpoints) }

// Pick implements [rpc.Balancer].
func (p *P2C) Pick(info rpc.PickInfo) (string, error) {
	s := p.s
	sn := s.snap.Load()
	n := len(sn.eps)
	if n < 2 {
		return s.take(s.rotate(sn, &info))
	}
	var now int64
	for range 3 {
		r := rand.Uint64() // two indexes from one draw (n < 2^32)
		i := int((r >> 32) * uint64(n) >> 32)
		j := int((r & 0xffffffff) * uint64(n-1) >> 32)
		if j >= i {
			j++
		}
		a, b := sn.eps[i], sn.eps[j]
		okA, okB := s.eligible(a, &info, &now), s.eligible(b, &info, &now)
		switch {
		case okA && okB:
			if s.status(a, &now) == expired && s.claim(a, now) {
				return s.take(a)
			}
			if s.status(b, &now) == expired && s.claim(b, now) {
				return s.take(b)
			}
			if p.less(b, a) {
				a = b
			}
			if s.pickable(a, &now) {
				return s.take(a)
			}
		case okA:
			if s.pickable(a, &now) {
				return s.take(a)
			}
		case okB:
			if s.pickable(b, &now) {
				return s.take(b)
			}
		}
	}
	return s.take(s.random(sn, &info, false, &now))
}

// less reports whether a's load is below b's. Each average decays for
// the time since its endpoint's last sample; since both decay from their
// stamps to the same now, only the older one needs decaying, by the time
// between the stamps, and Pick needs no clock.
func (p *P2C) less(a, b *endpoint) bool {
	fa, fb := float64(a.inflight.Load()+1), float64(b.inflight.Load()+1)
	sa, sb := a.stamp.Load(), b.stamp.Load()
	if sa == 0 || sb == 0 {
		return fa < fb
	}
	la, lb := lagOf(a), lagOf(b)
	decay := float64(p.s.cfg.Decay)
	if sa < sb {
		la *= decay1(float64(sb-sa) / decay)
	} else if sb < sa {
		lb *= decay1(float64(sa-sb) / decay)
	}
	return la*fa < lb*fb
}

// decay1 is e^(-x) for x ≥ 0, and decayed 1-e^(-x), the weight of a
// sample x time constants after the last; for the small x of busy
// endpoints both by their series (relative error below 10^-6), which
// saves math.Exp on most calls.
func decay1(x float64) float64 {
	if x < 1.0/64 {
		return 1 - decayed(x)
	}
	return math.Exp(-x)
}

func decayed(x float64) float64 {
	if x < 1.0/64 {
		return x * (1 - x/2*(1-x/3))
	}
	return -math.Expm1(-x)
}

func lagOf(e *endpoint) float64 { return math.Float64frombits(e.lag.Load()) }

// sample folds one call's latency into e's average, a mean of the samples
// weighted by age: weight is the sum of the samples' weights, each
// decayed by e^(-age/Decay), so that a new sample weighs 1/weight of the
// average (1/n for the n-th of a burst, about 1-e^(-d/Decay) at a steady
// rate of one each d). One more than Decay after the last starts the
// average afresh. (The decay of lag is for reading only: it lets an
// endpoint left alone be tried again, and is not a sample.) Concurrent
// samples may overwrite each other: the average loses a sample, never its
// bounds.
func (s *set) sample(e *endpoint, latency time.Duration) {
	now := s.now()
	x := float64(max(latency, 0))
	last := e.stamp.Load()
	if last == 0 || now-last > int64(s.cfg.Decay) {
		e.lag.Store(math.Float64bits(x)) // the first, or the average is stale
		e.weight.Store(math.Float64bits(1))
		e.stamp.Store(now)
		return
	}
	w := math.Float64frombits(e.weight.Load())*decay1(float64(max(now-last, 0))/float64(s.cfg.Decay)) + 1
	l := lagOf(e)
	e.lag.Store(math.Float64bits(l + (x-l)/w))
	e.weight.Store(math.Float64bits(w))
	e.stamp.Store(now)
}

// Done implements [rpc.Balancer]; it folds the latency of a call that did
// not find the endpoint unavailable into the endpoint's average. A zero
// Latency is no sample (an attempt abandoned before its reply, measured
// by nothing).
func (p *P2C) Done(addr string, result rpc.PickResult) { p.s.done(addr, result) }

// Stats returns the state of each endpoint of the current set, in order.
func (p *P2C) Stats() []EndpointStats { return p.s.stats() }
