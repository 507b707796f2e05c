// Package pooltrack records every pooled buffer that is outstanding, with the
// stack that took it, so tests can prove that nothing leaked.
//
// Tracking is off until Enable is called (the lifenet_debug build tag calls it
// at start-up). Once on it stays on for the life of the process: a buffer taken
// while tracking must still be found when it is released. When off, the only
// cost on the hot path is one atomic load in Enabled.
//
// All functions are safe for concurrent use.
package pooltrack

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Record describes one outstanding buffer.
type Record struct {
	Seq  uint64 // order in which buffers were taken, starting at 1
	Size int    // capacity of the buffer in bytes
	pcs  [24]uintptr
}

// Stack formats where the buffer was taken, innermost frame first.
func (r Record) Stack() string {
	n := 0
	for n < len(r.pcs) && r.pcs[n] != 0 {
		n++
	}
	return formatStack(r.pcs[:n])
}

var (
	enabled atomic.Bool
	seq     atomic.Uint64

	mu          sync.Mutex
	outstanding = map[any]Record{}
)

// Enable switches tracking on for the rest of the process.
func Enable() { enabled.Store(true) }

// Enabled reports whether new buffers are being tracked.
func Enabled() bool { return enabled.Load() }

// Track records key as outstanding; skip is the number of caller frames to
// leave out of the stack (0 = the caller of Track).
func Track(key any, size, skip int) {
	rec := Record{Seq: seq.Add(1), Size: size}
	runtime.Callers(skip+2, rec.pcs[:]) // formatted only if reported
	mu.Lock()
	outstanding[key] = rec
	mu.Unlock()
}

// Untrack forgets key. Keys that were never tracked (taken before Enable)
// are ignored.
func Untrack(key any) {
	mu.Lock()
	delete(outstanding, key)
	mu.Unlock()
}

// Seq returns the sequence number of the most recently tracked buffer; pass
// it to Since to see only buffers taken after this point.
func Seq() uint64 { return seq.Load() }

// Since returns the records of tracked buffers taken after sequence number
// after and not yet released, oldest first.
func Since(after uint64) []Record {
	mu.Lock()
	var recs []Record
	for _, r := range outstanding {
		if r.Seq > after {
			recs = append(recs, r)
		}
	}
	mu.Unlock()
	sort.Slice(recs, func(i, j int) bool { return recs[i].Seq < recs[j].Seq })
	return recs
}

func formatStack(pcs []uintptr) string {
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "\t%s\n\t\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			break
		}
	}
	return b.String()
}
