package balance

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/rpc"
)

// endpoint is the state a balancer keeps for one address. It lives as long
// as its address is in the set (or has calls in flight after it left), so
// it is shared by successive snapshots: Pick and Done read and write it
// with atomics only; the rare shield transitions take its own mutex.
type endpoint struct {
	addr string

	inflight atomic.Int64
	picks    atomic.Uint64
	// until is the end of the endpoint's shield, in the set's clock (see
	// set.now); 0 when it is not shielded. While a probe is out it is
	// pushed on by one shield period, so that one pick wins each probe.
	until atomic.Int64

	// P2C's moving average of latency: logLag (float64 bits, the mean of
	// the samples' natural logarithms in ns) as of stamp (set clock);
	// weight (float64 bits) is the sum of its samples' weights, decayed by
	// age (see sample).
	logLag atomic.Uint64
	stamp  atomic.Int64
	weight atomic.Uint64

	mu       sync.Mutex // shield transitions
	failures int        // consecutive unavailable reports; 0 when healthy
	// probing is set when a pick was sent to it since its shield ended;
	// written under mu, read without it only to skip taking it.
	probing atomic.Bool
}

// snapshot is one endpoint set as Update published it. It is never changed
// after it is stored; Update replaces it whole.
type snapshot struct {
	eps     []*endpoint // resolver order
	weights []int       // eps' weights, each ≥ 1
	total   int         // sum of weights
	// byAddr finds an endpoint for Done: those of eps, and those Update
	// removed that still had calls in flight.
	byAddr map[string]*endpoint

	seq  []int32     // WeightedRoundRobin: one smooth cycle of indexes into eps
	ring []ringPoint // ConsistentHash: points sorted by hash
}

// set is what every policy shares: the published snapshot, the shield
// state machine, in-flight counting and the fallbacks of Pick.
type set struct {
	cfg     Config // defaults filled in
	start   time.Time
	build   func(*snapshot) // the policy's per-snapshot tables, or nil
	latency bool            // Done keeps P2C's latency average
	mu      sync.Mutex      // serialises Update
	snap    atomic.Pointer[snapshot]
	_       [64]byte      // next, written by every pick, off snap's line
	next    atomic.Uint64 // round-robin position, from a random start
}

func newSet(cfg Config, build func(*snapshot)) (*set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &set{cfg: cfg.withDefaults(), start: time.Now(), build: build}
	s.snap.Store(&snapshot{})
	s.next.Store(rand.Uint64())
	return s, nil
}

// now is the set's clock: monotonic nanoseconds since the set was made,
// plus one so that no instant is 0 (0 in endpoint.until means "not
// shielded").
func (s *set) now() int64 { return int64(time.Since(s.start)) + 1 }

func (s *set) update(eps []rpc.Endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.snap.Load()
	ns := &snapshot{
		eps:     make([]*endpoint, 0, len(eps)),
		weights: make([]int, 0, len(eps)),
		byAddr:  make(map[string]*endpoint, len(eps)),
	}
	for _, ep := range eps {
		if ep.Addr == "" {
			continue
		}
		if _, dup := ns.byAddr[ep.Addr]; dup {
			continue // the first of the same address counts
		}
		e := old.byAddr[ep.Addr]
		if e == nil {
			e = &endpoint{addr: ep.Addr}
		}
		w := min(max(ep.Weight, 1), maxWeight)
		ns.eps = append(ns.eps, e)
		ns.weights = append(ns.weights, w)
		ns.total += w
		ns.byAddr[ep.Addr] = e
	}
	for addr, e := range old.byAddr {
		if _, kept := ns.byAddr[addr]; !kept && e.inflight.Load() > 0 {
			ns.byAddr[addr] = e // removed, still draining: Done must find it
		}
	}
	if s.build != nil && len(ns.eps) > 0 {
		s.build(ns)
	}
	s.snap.Store(ns)
}

// take counts a pick of e and returns its address.
func (s *set) take(e *endpoint) (string, error) {
	if e == nil {
		return "", rpc.ErrNoEndpoints
	}
	e.inflight.Add(1)
	e.picks.Add(1)
	return e.addr, nil
}

func (s *set) done(addr string, r rpc.PickResult) {
	e := s.snap.Load().byAddr[addr]
	if e == nil {
		return // not an address of this balancer, or long gone
	}
	for {
		v := e.inflight.Load()
		if v <= 0 || e.inflight.CompareAndSwap(v, v-1) {
			break
		}
	}
	if r.Canceled {
		return // not the endpoint's doing: no sample, no shield change
	}
	if r.Unavailable {
		s.fail(e)
		return
	}
	if s.latency && r.Latency > 0 {
		s.sample(e, r.Latency)
	}
	if e.until.Load() != 0 {
		s.recover(e)
	}
}

// Endpoint states as Pick sees them.
const (
	healthy  = iota
	expired  // shielded, but the shield is over: the next pick probes it
	shielded // skipped
)

// status reads e's shield; *now is the set's clock, read on first need.
func (s *set) status(e *endpoint, now *int64) int {
	u := e.until.Load()
	if u == 0 {
		return healthy
	}
	if *now == 0 {
		*now = s.now()
	}
	if *now >= u {
		return expired
	}
	return shielded
}

// usable reports whether this pick may go to e: e is not excluded
// ([rpc.PickInfo.Excludes]: Exclude or one of Tried), and is
// healthy or its shield is over and this pick wins the probe. A true for
// an expired endpoint has made the pick its probe, so the caller must take
// e.
func (s *set) usable(e *endpoint, info *rpc.PickInfo, now *int64) bool {
	if info.Excludes(e.addr) {
		return false
	}
	return s.pickable(e, now)
}

// pickable is usable without the Exclude test.
func (s *set) pickable(e *endpoint, now *int64) bool {
	switch s.status(e, now) {
	case healthy:
		return true
	case expired:
		return s.claim(e, *now)
	}
	return false
}

// eligible reports whether e may be chosen without yet claiming a probe.
func (s *set) eligible(e *endpoint, info *rpc.PickInfo, now *int64) bool {
	if info.Excludes(e.addr) {
		return false
	}
	return s.status(e, now) != shielded
}

// claim makes this pick the probe of e, whose shield is over: one pick in
// a shield period wins, the others skip e. The shield is pushed on by its
// current length while the probe is out; the probe's Done clears it
// (success) or lengthens it (unavailable).
func (s *set) claim(e *endpoint, now int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.until.Load()
	if u == 0 {
		return true // cleared meanwhile
	}
	if now < u {
		return false // another pick won this probe
	}
	e.probing.Store(true)
	e.until.Store(now + int64(s.backoff(max(e.failures, 1))))
	return true
}

// fail shields e after an unavailable report: for ShieldTime if it was
// healthy, for twice its last shield (up to MaxShieldTime) if a probe
// failed or the shield was over. A report from a call sent before the
// shield (a reset that failed every call in flight) changes nothing.
func (s *set) fail(e *endpoint) {
	now := s.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.until.Load()
	switch {
	case u == 0:
		e.failures = 1
	case e.probing.Load() || now >= u:
		e.failures++
	default:
		return
	}
	e.probing.Store(false)
	e.until.Store(now + int64(s.backoff(e.failures)))
}

// recover clears e's shield after a success, if a probe was out or the
// shield was over (not for a call that was in flight before it).
func (s *set) recover(e *endpoint) {
	now := s.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if u := e.until.Load(); u != 0 && (e.probing.Load() || now >= u) {
		e.until.Store(0)
		e.failures = 0
		e.probing.Store(false)
	}
}

// backoff is the shield after the given number of consecutive failures.
func (s *set) backoff(failures int) time.Duration {
	d := s.cfg.ShieldTime
	for i := 1; i < failures && d < s.cfg.MaxShieldTime; i++ {
		d *= 2
	}
	return min(d, s.cfg.MaxShieldTime)
}

// random picks among the eligible endpoints at random, in proportion to
// their weights if weighted: the fallback of the rotating policies when
// their turn falls on an endpoint that is shielded or excluded, so that
// the others share its turns evenly. It ends in fallback when none is
// eligible.
func (s *set) random(sn *snapshot, info *rpc.PickInfo, weighted bool, now *int64) *endpoint {
	for range 3 { // a lost probe or a concurrent shield: try again
		total := 0
		for i, e := range sn.eps {
			if s.eligible(e, info, now) {
				total += weight(sn, i, weighted)
			}
		}
		if total == 0 {
			break
		}
		r := rand.IntN(total)
		for i, e := range sn.eps {
			if !s.eligible(e, info, now) {
				continue
			}
			if r -= weight(sn, i, weighted); r < 0 {
				if s.pickable(e, now) {
					return e
				}
				break
			}
		}
	}
	return s.fallback(sn, info, now)
}

func weight(sn *snapshot, i int, weighted bool) int {
	if weighted {
		return sn.weights[i]
	}
	return 1
}

// fallback is Pick's last resort when no endpoint but the excluded one is
// usable: the excluded one if it is, else, with every endpoint shielded,
// the one whose shield ends soonest (another than the excluded one if
// there is one), which this pick probes. Nil for an empty set.
func (s *set) fallback(sn *snapshot, info *rpc.PickInfo, now *int64) *endpoint {
	var best *endpoint
	var bestUntil int64
	bestExcluded := true
	for _, e := range sn.eps {
		excluded := info.Excludes(e.addr)
		if excluded && s.pickable(e, now) {
			return e
		}
		u := e.until.Load()
		if u == 0 && !excluded {
			return e // cleared meanwhile
		}
		if best == nil || (bestExcluded && !excluded) || (bestExcluded == excluded && u < bestUntil) {
			best, bestUntil, bestExcluded = e, u, excluded
		}
	}
	if best != nil && !best.probing.Load() {
		best.mu.Lock()
		if best.until.Load() != 0 {
			best.probing.Store(true) // its Done decides, as a probe's
		}
		best.mu.Unlock()
	}
	return best
}

// EndpointStats is a balancer's view of one endpoint, for monitoring and
// tests.
type EndpointStats struct {
	Addr string
	// InFlight counts the picks not yet reported Done.
	InFlight int
	// Picks counts the picks since the address joined the set.
	Picks uint64
	// Failures counts the consecutive unavailable reports and failed
	// probes; 0 when the endpoint is healthy.
	Failures int
	// ShieldedUntil is when the endpoint's shield ends; zero if it is not
	// shielded. A time in the past means the next pick probes it.
	ShieldedUntil time.Time
	// Latency is [P2C]'s moving average of the endpoint's latency, a
	// geometric mean (its typical latency); 0 for the other policies and
	// before the first sample.
	Latency time.Duration
}

func (s *set) stats() []EndpointStats {
	sn := s.snap.Load()
	out := make([]EndpointStats, len(sn.eps))
	for i, e := range sn.eps {
		e.mu.Lock()
		failures := e.failures
		e.mu.Unlock()
		out[i] = EndpointStats{
			Addr:     e.addr,
			InFlight: int(e.inflight.Load()),
			Picks:    e.picks.Load(),
			Failures: failures,
		}
		if u := e.until.Load(); u != 0 {
			out[i].ShieldedUntil = s.start.Add(time.Duration(u - 1))
		}
		if s.latency && e.stamp.Load() != 0 {
			out[i].Latency = time.Duration(math.Round(math.Exp(logLagOf(e))))
		}
	}
	return out
}
