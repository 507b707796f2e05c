package loadtest

import "time"

// byteTrace is the server's received-byte counter read every traceTick
// (a fraction of a second), from which STEADY's rate is computed: the
// bytes between the first and the last read that saw traffic, less the
// partial tick at each end, over the time between those reads. A rate
// from whole-second samples cannot be had from a short window: a 2 s
// window seen by a ticker that is not aligned with it is three samples,
// two of them partial, whose median was 0.5–1.0× the rate.
//
// A client's warm-up is no part of the rate: a first burst of at most
// warmLimit bytes that a quiet tick follows (the priming of a one-way or
// UDP client, which pauses 200 ms before its window) is counted in warm
// and the span starts after it.
type byteTrace struct {
	at        []time.Duration // since the trace began, per read
	bytes     []uint64        // the counter at each read
	first     int             // the first read whose tick saw traffic (after the warm-up); -1: none yet
	last      int             // the last such read
	warmLimit uint64          // the largest first burst taken for warm-up (0: none is)
	warm      uint64          // the warm-up's bytes, left out of the span
	quiet     int             // ticks without traffic since the last with traffic
	checked   bool            // the first quiet gap after traffic has been seen: no warm-up after it
}

// traceTick is how often the counter is read; warmUpTrim how much of a
// long span (at least longSpan) is left out at its start, as NetLoadTest
// leaves out its first seconds.
const (
	traceTick  = 100 * time.Millisecond
	warmUpTrim = 2 * time.Second
	longSpan   = 8 * time.Second
)

func newByteTrace(at time.Duration, bytes uint64) *byteTrace {
	return &byteTrace{at: []time.Duration{at}, bytes: []uint64{bytes}, first: -1}
}

// add records a read, and whether its tick saw traffic.
func (b *byteTrace) add(at time.Duration, bytes uint64) {
	i := len(b.at)
	b.at, b.bytes = append(b.at, at), append(b.bytes, bytes)
	if bytes == b.bytes[i-1] {
		b.quiet++
		return
	}
	if b.first >= 0 && b.quiet > 0 && !b.checked { // traffic again after the first quiet gap
		b.checked = true
		if burst := b.bytes[i-1] - b.bytes[b.first-1]; burst <= b.warmLimit {
			b.warm, b.first = burst, i
		}
	}
	if b.first < 0 {
		b.first = i
	}
	b.last, b.quiet = i, 0
}

// rate is the bytes per second of the span with traffic, its partial end
// ticks left out (and, for a long span, its first warmUpTrim); 0 without
// traffic. A span with no whole tick of traffic inside (one or two ticks,
// or a burst at each end) is taken whole.
func (b *byteTrace) rate() float64 {
	if b.first < 0 {
		return 0
	}
	// The reads that close the first whole tick, and the last whole one;
	// with no whole tick inside, or none with traffic, the span whole.
	from, to := b.first, b.last-1
	if to <= from || b.bytes[to] == b.bytes[from] {
		from, to = b.first-1, b.last
	}
	if b.at[to]-b.at[from] >= longSpan {
		for from < to && b.at[from]-b.at[b.first] < warmUpTrim {
			from++
		}
	}
	d := b.at[to] - b.at[from]
	if d <= 0 {
		return 0
	}
	return float64(b.bytes[to]-b.bytes[from]) / d.Seconds()
}
