//go:build race

package rpcport_test

// raceEnabled reports a -race build: the race detector makes every socket
// operation, copy and goroutine switch several times slower and allows at
// most 8,128 live goroutines, so the attacks run scaled down (see size).
const raceEnabled = true
