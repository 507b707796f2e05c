//go:build race

package transport_test

// raceEnabled reports a -race build, whose instrumentation (and sync.Pool,
// which drops items at random under -race) changes allocation counts.
const raceEnabled = true
