package transport_test

import (
	"testing"

	"github.com/lifenet/lifenet/transport"
)

// A trim of the heap follows the end of a burst: much allocated since the
// last trim (64 MiB and half the heap), and allocation all but stopped;
// not a burst still going, nor a small server.
func TestMemoryReturnFollowsTheEndOfABurst(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name                        string
		sinceTrim, lastSecond, heap uint64
		want                        bool
	}{
		{"a ramp of connections has ended", 120 * mib, 1 * mib, 110 * mib, true},
		{"a burst of large messages has ended", 3000 * mib, 5 * mib, 700 * mib, true},
		{"the burst goes on", 3000 * mib, 400 * mib, 700 * mib, false},
		{"a minute of heartbeats at 1 MB/s", 64 * mib, 1 * mib, 100 * mib, true},
		{"half a minute of them", 32 * mib, 1 * mib, 100 * mib, false},
		{"a large heap, little allocated", 100 * mib, 1 * mib, 1000 * mib, false},
		{"allocation at a sixteenth", 64 * mib, 4 * mib, 64 * mib, false},
		{"just under it", 64 * mib, 4*mib - 1, 64 * mib, true},
	} {
		if got := transport.BurstEnded(c.sinceTrim, c.lastSecond, c.heap); got != c.want {
			t.Errorf("%s: burstEnded(%d, %d, %d) = %v, want %v", c.name, c.sinceTrim, c.lastSecond, c.heap, got, c.want)
		}
	}
}
