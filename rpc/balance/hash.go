package balance

import (
	"cmp"
	"slices"

	"github.com/lifenet/lifenet/rpc"
)

// ConsistentHash sends every call with the same key ([rpc.PickInfo.Key],
// set with [rpc.WithBalanceKey]) to the same endpoint while the set stays
// the same, as grpc's ring_hash: each endpoint has [Config.VirtualNodes]
// points per unit of weight on a ring of 64-bit hashes, and a key goes to
// the endpoint of the first point at or after its hash. A point's place
// depends on its endpoint's address alone, so adding an endpoint to n
// moves about 1/(n+1) of the keys, all to the new one, and removing one
// moves only its own keys. The hash (FNV-1a, then murmur3's finaliser) is
// fixed, so every client process maps a key the same way.
//
// A key whose endpoint is shielded (or excluded) goes to the next endpoint
// on the ring, and returns once the shield is cleared. A call with no key
// is sent round-robin over the endpoints, ignoring weights. The ring holds
// at most 65 536 points; past that each endpoint's count is scaled down in
// proportion (every endpoint keeping one at least), and the keys move more
// than the minimum when the set changes.
type ConsistentHash struct{ s *set }

var _ rpc.Balancer = (*ConsistentHash)(nil)

type ringPoint struct {
	hash uint64
	ep   int32 // index in snapshot.eps
}

// NewConsistentHash returns a ConsistentHash balancer with no endpoints
// yet.
func NewConsistentHash(cfg Config) (*ConsistentHash, error) {
	c := &ConsistentHash{}
	s, err := newSet(cfg, nil)
	if err != nil {
		return nil, err
	}
	vnodes := s.cfg.VirtualNodes
	s.build = func(sn *snapshot) { buildRing(sn, vnodes) }
	c.s = s
	return c, nil
}

// Update implements [rpc.Balancer].
func (c *ConsistentHash) Update(endpoints []rpc.Endpoint) { c.s.update(endpoints) }

// Pick implements [rpc.Balancer].
func (c *ConsistentHash) Pick(info rpc.PickInfo) (string, error) {
	s := c.s
	sn := s.snap.Load()
	if info.Key == "" || len(sn.ring) == 0 {
		return s.take(s.rotate(sn, &info))
	}
	h := hashString(info.Key)
	ring := sn.ring
	lo, hi := 0, len(ring)
	for lo < hi { // the first point at or after h
		m := int(uint(lo+hi) >> 1)
		if ring[m].hash < h {
			lo = m + 1
		} else {
			hi = m
		}
	}
	var now int64
	last := int32(-1)
	for k := range ring {
		p := ring[(lo+k)%len(ring)]
		if p.ep == last {
			continue
		}
		last = p.ep
		if e := sn.eps[p.ep]; s.usable(e, &info, &now) {
			return s.take(e)
		}
	}
	return s.take(s.fallback(sn, &info, &now))
}

// Done implements [rpc.Balancer].
func (c *ConsistentHash) Done(addr string, result rpc.PickResult) { c.s.done(addr, result) }

// Stats returns the state of each endpoint of the current set, in order.
func (c *ConsistentHash) Stats() []EndpointStats { return c.s.stats() }

func buildRing(sn *snapshot, vnodes int) {
	counts := make([]int, len(sn.eps))
	total := 0
	for i, w := range sn.weights {
		counts[i] = vnodes * w
		total += counts[i]
	}
	if total > maxRingPoints {
		scale := float64(maxRingPoints) / float64(total)
		total = 0
		for i := range counts {
			counts[i] = max(1, int(float64(counts[i])*scale))
			total += counts[i]
		}
	}
	ring := make([]ringPoint, 0, total)
	for i, e := range sn.eps {
		base := hashString(e.addr)
		for k := range counts[i] {
			ring = append(ring, ringPoint{hash: mix64(base + uint64(k+1)*0x9e3779b97f4a7c15), ep: int32(i)})
		}
	}
	slices.SortFunc(ring, func(a, b ringPoint) int {
		if c := cmp.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return cmp.Compare(sn.eps[a.ep].addr, sn.eps[b.ep].addr) // the same order whatever the set's
	})
	sn.ring = ring
}

// hashString is FNV-1a 64 of s, through mix64 so that near keys spread.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix64(h)
}

// mix64 is murmur3's 64-bit finaliser, a bijection that spreads every
// input bit over the output.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
