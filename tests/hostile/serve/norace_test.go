//go:build !race

package serve_test

// raceEnabled is false: the UDP flood runs for the full 10 s.
const raceEnabled = false
