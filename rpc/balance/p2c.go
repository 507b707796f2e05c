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
// The average is over time, with the time constant [Config.Decay]
// (default 10 s): a sample d later than the last weighs 1-e^(-d/Decay).
// The first eight samples of an endpoint are averaged evenly instead, so
// that one slow first call (a dial) does not set its load for a whole
// time constant. When P2C reads the average to compare, it decays it
// towards zero by the same constant for the time since the endpoint's last
// sample, so an endpoint that was slow, and was left alone for it, is
// tried again: one 50 times slower than the others after about
// ln 50 ≈ 4 time constants. An average with no sample for longer than
// Decay is stale: the next sample starts it afresh, as an endpoint's
// first, so an endpoint that has become fast has its share back at once. An endpoint with no sample yet is compared on its calls in flight
// alone, neither favoured nor penalised for latency it has not shown.
// Weights are ignored. A probe of an endpoint whose shield is over takes
// precedence when it is one of the two.
type P2C struct{ s *set }

var _ rpc.Balancer = (*P2C)(nil)

// warmup is the number of first samples P2C averages evenly.
const warmup = 8

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
		i := rand.IntN(n)
		j := rand.IntN(n - 1)
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
			if now == 0 {
				now = s.now()
			}
			if p.less(b, a, now) {
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

// less reports whether a's load is below b's.
func (p *P2C) less(a, b *endpoint, now int64) bool {
	fa, fb := float64(a.inflight.Load()+1), float64(b.inflight.Load()+1)
	if a.stamp.Load() == 0 || b.stamp.Load() == 0 {
		return fa < fb
	}
	return p.lag(a, now)*fa < p.lag(b, now)*fb
}

// lag is e's average latency decayed for the time since its last sample.
func (p *P2C) lag(e *endpoint, now int64) float64 {
	l := lagOf(e)
	if d := now - e.stamp.Load(); d > 0 {
		l *= math.Exp(-float64(d) / float64(p.s.cfg.Decay))
	}
	return l
}

func lagOf(e *endpoint) float64 { return math.Float64frombits(e.lag.Load()) }

// sample folds one call's latency into e's average: a sample d after the
// last weighs 1-e^(-d/Decay), or 1/k for the k-th of the first eight; one
// more than Decay after the last starts the average afresh.
// (The decay of lag is for reading only: it lets an endpoint left alone
// be tried again, and is not a sample.) Concurrent samples may overwrite
// each other: the average loses a sample, never its bounds.
func (s *set) sample(e *endpoint, latency time.Duration) {
	now := s.now()
	x := float64(max(latency, 0))
	last := e.stamp.Load()
	if last == 0 || now-last > int64(s.cfg.Decay) {
		e.lag.Store(math.Float64bits(x)) // the first, or the average is stale
		e.samples.Store(1)
		e.stamp.Store(now)
		return
	}
	k := e.samples.Load()
	if k < warmup {
		e.samples.Store(k + 1)
	}
	alpha := 1 - math.Exp(-float64(max(now-last, 0))/float64(s.cfg.Decay))
	if k < warmup {
		alpha = max(alpha, 1/float64(k+1))
	}
	l := lagOf(e)
	e.lag.Store(math.Float64bits(l + alpha*(x-l)))
	e.stamp.Store(now)
}

// Done implements [rpc.Balancer]; it folds the latency of a call that did
// not find the endpoint unavailable into the endpoint's average.
func (p *P2C) Done(addr string, result rpc.PickResult) { p.s.done(addr, result) }

// Stats returns the state of each endpoint of the current set, in order.
func (p *P2C) Stats() []EndpointStats { return p.s.stats() }
