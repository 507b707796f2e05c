package balance

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// P2C draws two endpoints at random and sends the call to one of them by
// chance, at odds inverse to the square of their loads, a load being the
// endpoint's typical latency times its calls in flight plus one: as
// go-zero's p2c (and Finagle's), but not always to the lower load. Equal
// loads split evenly; an endpoint with twice the other's calls in flight
// plus one (at the same latency) gets one call in five of the pair's
// draws, with ten times, one in 101; so a slow or overloaded endpoint
// gets fewer calls without being starved of all of them, and it keeps
// being measured. Latencies within a quarter of each
// other count as equal (identical servers on one host measure up to 10 to
// 20 % apart for seconds, connection by connection), and a larger ratio
// counts for what it exceeds 1.25 by: at the same calls in flight, an
// endpoint 9 times slower than the other gets one call in 53 of their
// draws. (Always taking the lower load turned averages a percent apart,
// or one slow first call, into every call of the pair whenever the calls
// in flight were equal, as they are one call at a time: two equal servers
// took 100 % and 0 %, and the second was never measured again.)
//
// The latency is a geometric mean of the endpoint's samples (the mean of
// their logarithms) weighted by their age, each weighing e^(-age/Decay)
// ([Config.Decay], default 10 s): at a steady rate a sample d later than
// the last weighs about 1-e^(-d/Decay) of the average, while the first
// samples, and those after a gap, are averaged about evenly. A sample
// more than Decay after the last starts the average afresh. Being
// geometric, it is the endpoint's typical latency: one stall 4 000 times
// the others (200 ms among 50 µs calls) moves it by a factor of
// 4 000^(1/n) after n calls, not 4 000/n; calls that hang show in the
// calls in flight.
//
// Two averages are compared as far as their samples support them: each is
// drawn towards the pair's mean (the two weighted by their samples) by
// two samples' worth, the samples' weights decayed by age as above. An
// endpoint with no sample yet is compared on its calls in flight alone,
// neither favoured nor penalised for latency it has not shown; one with a
// sample or two, or only old ones, nearly so; so an endpoint left alone
// (for being slow, or by chance) comes back towards an even chance as its
// samples age, and one that became fast has its share back within about
// a Decay, sooner at a higher rate of calls. Weights are ignored. A probe
// of an endpoint whose shield is over takes precedence when it is one of
// the two.
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
			if a = p.choose(a, b); s.pickable(a, &now) {
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

// prior is how many samples' worth of the pair's mean each average is
// drawn towards when two are compared (see trust).
const prior = 2

// tolerance is the logarithm of the latency ratio that counts as none,
// ln 1.25: identical servers on one host measure up to 10 to 20 % apart,
// connection by connection, for as long as a run lasts, which the square
// of the ratio would turn into a 40 / 60 % split. A larger ratio counts
// for what it exceeds 1.25 by (2.5 as 2).
const tolerance = 0.22314355131420976

// choose returns a or b at random, each with a chance inverse to the
// square of its load: a with (lb·fb)² / ((la·fa)² + (lb·fb)²), f being
// the calls in flight plus one and la/lb the ratio of the latencies as
// far as the samples support it (see trust), less the tolerance. Each
// average's weight decays for the time since its endpoint's last sample;
// since both decay from their stamps to the same now, only the older one
// needs decaying, by the time between the stamps, and choose needs no
// clock.
func (p *P2C) choose(a, b *endpoint) *endpoint {
	fa, fb := float64(a.inflight.Load()+1), float64(b.inflight.Load()+1)
	ca, cb := fa*fa, fb*fb
	if sa, sb := a.stamp.Load(), b.stamp.Load(); sa != 0 && sb != 0 {
		wa, wb := weightOf(a), weightOf(b)
		decay := float64(p.s.cfg.Decay)
		if sa < sb {
			wa *= decay1(float64(sb-sa) / decay)
		} else if sb < sa {
			wb *= decay1(float64(sa-sb) / decay)
		}
		// (la/lb)², both logarithms trusted as far as their samples go,
		// less the tolerance.
		if d := trust(wa, wb) * (logLagOf(a) - logLagOf(b)); d > tolerance {
			ca *= math.Exp(2 * (d - tolerance))
		} else if d < -tolerance {
			ca *= math.Exp(2 * (d + tolerance))
		}
	}
	// ca may be +Inf (then b) or 0 (then a); cb is at least 1.
	if rand.Float64()*(ca+cb) < cb {
		return a
	}
	return b
}

// trust is the part of the difference of two log-averages, of samples
// weighing wa and wb in all (one at least 1), that a comparison keeps
// when each is drawn towards the pair's mean m = (wa·ga + wb·gb)/(wa+wb)
// by prior samples' worth, g' = (w·g + prior·m)/(w + prior): 0 when
// either has no weight, wb/(wb+prior) when a's is much the larger, and
// towards 1 as both grow.
func trust(wa, wb float64) float64 {
	t := wa * wb * (wa + wb + 2*prior) / ((wa + prior) * (wb + prior) * (wa + wb))
	if !(t >= 0) { // NaN: no weight at all
		return 0
	}
	return t
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

func logLagOf(e *endpoint) float64 { return math.Float64frombits(e.logLag.Load()) }

func weightOf(e *endpoint) float64 { return math.Float64frombits(e.weight.Load()) }

// sample folds one call's latency into e's average, a mean of the
// samples' logarithms weighted by age: weight is the sum of the samples'
// weights, each decayed by e^(-age/Decay), so that a new sample weighs
// 1/weight of the average (1/n for the n-th of a burst, about
// 1-e^(-d/Decay) at a steady rate of one each d). One more than Decay
// after the last starts the average afresh. Concurrent samples may
// overwrite each other: the average loses a sample, never its bounds.
func (s *set) sample(e *endpoint, latency time.Duration) {
	now := s.now()
	x := math.Log(float64(max(latency, 1)))
	last := e.stamp.Load()
	if last == 0 || now-last > int64(s.cfg.Decay) {
		e.logLag.Store(math.Float64bits(x)) // the first, or the average is stale
		e.weight.Store(math.Float64bits(1))
		e.stamp.Store(now)
		return
	}
	w := weightOf(e)*decay1(float64(max(now-last, 0))/float64(s.cfg.Decay)) + 1
	g := logLagOf(e)
	e.logLag.Store(math.Float64bits(g + (x-g)/w))
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
