package transport_test

import (
	"testing"

	"github.com/lifenet/lifenet/transport"
)

// A trim of the heap follows the end of a burst: much allocated since the
// last trim (16 MiB and half the heap), and allocation fallen to a
// sixteenth of its peak; not a steady load, a burst still going, nor a
// small server.
func TestMemoryReturnFollowsTheEndOfABurst(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name                              string
		sinceTrim, lastSecond, peak, heap uint64
		want                              bool
	}{
		{"a ramp of connections has ended", 120 * mib, 1 * mib, 100 * mib, 110 * mib, true},
		{"a burst of large messages has ended", 3000 * mib, 5 * mib, 900 * mib, 700 * mib, true},
		{"the burst goes on", 3000 * mib, 400 * mib, 900 * mib, 700 * mib, false},
		{"steady heartbeats, however long", 6400 * mib, 4 * mib, 5 * mib, 100 * mib, false},
		{"a ramp of connections that park at once has ended", 40 * mib, 0, 35 * mib, 50 * mib, true},
		{"too little since the last trim", 32 * mib, 0, 30 * mib, 100 * mib, false},
		{"a small server, little allocated", 12 * mib, 0, 12 * mib, 10 * mib, false},
		{"a large heap, little allocated", 100 * mib, 0, 90 * mib, 1000 * mib, false},
		{"at a sixteenth of the peak", 64 * mib, 4 * mib, 64 * mib, 64 * mib, false},
		{"just under it", 64 * mib, 4*mib - 1, 64 * mib, 64 * mib, true},
	} {
		if got := transport.BurstEnded(c.sinceTrim, c.lastSecond, c.peak, c.heap); got != c.want {
			t.Errorf("%s: burstEnded(%d, %d, %d, %d) = %v, want %v", c.name, c.sinceTrim, c.lastSecond, c.peak, c.heap, got, c.want)
		}
	}
}

// A trim also waits for a wave of parking sessions to end (each gives
// its read buffer back as it parks); heartbeats' wakes and parks are none.
func TestMemoryReturnWaitsForParkingWave(t *testing.T) {
	for _, c := range []struct {
		name        string
		before, now int64
		want        bool
	}{
		{"the sessions of a burst parking", 2000, 19800, true},
		{"a ramp's connections parking", 0, 5000, true},
		{"new connections one by one", 19800, 19850, false},
		{"heartbeats: as many woken as parked", 19790, 19800, false},
		{"sessions ending", 19800, 10000, false},
		{"none parked", 0, 0, false},
		{"just over a sixteenth joined", 30000, 32001, true},
		{"a sixteenth joined", 30000, 32000, false},
		{"a few sessions parking", 0, 1024, false},
		{"just over parkingWaveMin", 0, 1025, true},
	} {
		if got := transport.ParkingWave(c.before, c.now); got != c.want {
			t.Errorf("%s: parkingWave(%d, %d) = %v, want %v", c.name, c.before, c.now, got, c.want)
		}
	}
}
