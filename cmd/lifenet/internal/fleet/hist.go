package fleet

import (
	"math/bits"
	"sync/atomic"
)

// histogram is a log-bucket histogram of microsecond values, 16 buckets
// per power of two (each value within 1/16 of its bucket's bounds), safe
// for concurrent use: the event loops add to it while the progress line
// reads it. It holds 1,024 counters whatever it counts.
type histogram struct {
	counts [64 * 16]atomic.Uint64
	max    atomic.Uint64
}

// bucket returns v's bucket: values below 16 each have their own.
func bucket(v uint64) int {
	if v < 16 {
		return int(v)
	}
	top := bits.Len64(v) - 1 // ≥ 4
	sub := (v >> (top - 4)) & 15
	return (top-3)*16 + int(sub)
}

// lowest returns the smallest value of bucket b.
func lowest(b int) uint64 {
	if b < 16 {
		return uint64(b)
	}
	top := b/16 + 3
	return (16 + uint64(b%16)) << (top - 4)
}

func (h *histogram) add(us uint64) {
	h.counts[bucket(us)].Add(1)
	for {
		m := h.max.Load()
		if us <= m || h.max.CompareAndSwap(m, us) {
			return
		}
	}
}

// snapshot returns the counts as they are now.
func (h *histogram) snapshot() []uint64 {
	s := make([]uint64, len(h.counts))
	for i := range h.counts {
		s[i] = h.counts[i].Load()
	}
	return s
}

// quantile returns the q quantile (0 < q ≤ 1) of the counts now minus
// those of since (nil: all), as the middle of its bucket, in
// microseconds; 0 when nothing was counted.
func (h *histogram) quantile(q float64, since []uint64) float64 {
	now := h.snapshot()
	var total uint64
	for i := range now {
		if since != nil {
			now[i] -= since[i]
		}
		total += now[i]
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total) + 0.5)
	rank = max(rank, 1)
	var seen uint64
	for i, n := range now {
		if seen += n; seen >= rank {
			if i < 16 {
				return float64(i)
			}
			return float64(lowest(i)+lowest(i+1)-1) / 2
		}
	}
	return float64(h.max.Load())
}
