//go:build race

package conns_test

// raceEnabled reports a -race build: the race detector slows every
// synchronisation point several times over, so the heaviest items run
// scaled down and latency bounds are logged instead of asserted.
const raceEnabled = true
