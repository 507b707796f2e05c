package rpcport_test

import (
	"os"
	"time"
)

// fullEnv names the environment variable that runs every attack at the
// size issue 26 names (LIFENET_RPCPORT_FULL=1): the figures in
// docs/reliability.md come from such a run. Without it the attacks run at
// a size that keeps the package near a minute on a loaded 2-core machine,
// and smaller again under the race detector.
const fullEnv = "LIFENET_RPCPORT_FULL"

// full reports a full-size run.
var full = os.Getenv(fullEnv) == "1"

// size picks an attack's size: full in a full-size run, ci in a normal
// build, underRace under the race detector (a full-size run under -race
// still takes underRace: the detector's goroutine limit and its slowness
// are the same whatever was asked).
func size(ci, underRace, fullSize int) int {
	switch {
	case raceEnabled:
		return underRace
	case full:
		return fullSize
	}
	return ci
}

// slow is the factor by which waits that a loaded machine may stretch
// grow under the race detector and with lifenet_debug (every pooled buffer
// poisoned byte by byte when released).
func slow() time.Duration {
	f := time.Duration(1)
	if raceEnabled {
		f *= 3
	}
	if debugBuild {
		f *= 2
	}
	return f
}
