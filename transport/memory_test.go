package transport_test

import (
	"testing"

	"github.com/lifenet/lifenet/transport"
)

// A return of freed memory follows the end of a burst: a wave of sessions
// parking (at least 1,024, and a quarter of those parked) that has
// settled; not the trickle of heartbeats, nor a wave still rising.
func TestMemoryReturnFollowsTheEndOfABurst(t *testing.T) {
	for _, c := range []struct {
		low, prev, now int64
		want           bool
	}{
		{0, 19500, 19800, true},      // a ramp, or a burst, has ended
		{0, 5000, 19000, false},      // still parking
		{0, 1000, 1024, true},        // a wave of 1,024
		{0, 0, 1024, false},          // seen rising: a later sweep decides
		{0, 1023, 1023, false},       // a small server never collects
		{17800, 17800, 19800, false}, // heartbeats: 2,000 of 19,800 woke and parked
		{7500, 10000, 10000, true},   // a quarter
		{7501, 10000, 10000, false},  // one short
		{100000, 101000, 101000, false},
		{10000, 10000, 10000, false}, // steady
		{0, 0, 0, false},
	} {
		if got := transport.ParkWave(c.low, c.prev, c.now); got != c.want {
			t.Errorf("parkWave(%d, %d, %d) = %v, want %v", c.low, c.prev, c.now, got, c.want)
		}
	}
}
