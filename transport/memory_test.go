package transport_test

import (
	"testing"

	"github.com/lifenet/lifenet/transport"
)

// A return of freed memory follows the end of a burst (a wave of sessions
// parking: at least 1,024, and a quarter of those parked), not the trickle
// of heartbeats.
func TestMemoryReturnFollowsTheEndOfABurst(t *testing.T) {
	for _, c := range []struct {
		low, now int64
		want     bool
	}{
		{0, 10000, true},     // a ramp, or a burst, has ended
		{9000, 10000, false}, // heartbeats: a tenth woke and parked
		{7500, 10000, true},  // a quarter
		{7501, 10000, false}, // one short
		{0, 1023, false},     // a small server never collects
		{0, 1024, true},
		{100000, 101000, false}, // 1,000 of 101,000
		{10000, 10000, false},   // steady
		{0, 0, false},
	} {
		if got := transport.ParkWave(c.low, c.now); got != c.want {
			t.Errorf("parkWave(%d, %d) = %v, want %v", c.low, c.now, got, c.want)
		}
	}
}
