//go:build race

package serve_test

// raceEnabled shortens the UDP flood: the race detector slows every
// goroutine several times over, and CI runs the suite twice under it.
const raceEnabled = true
