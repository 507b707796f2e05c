package transport

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Giving memory back. The goroutine stacks and buffers of a burst (a ramp
// of new connections, a wave of large messages) go back to Go's heap when
// the sessions park; the heap keeps the pages, and with little allocation
// after the burst no collection comes to find them free for minutes (the
// burst set the goal), so a gateway's RSS would stay at its peak. So at
// each sweep a server with parked sessions asks whether much was allocated
// since the heap was last trimmed and allocation has since fallen far from
// its peak; if so, it has the runtime collect and return the free pages
// (Config.KeepFreedMemory turns it off).

// memoryGrowthMin is the least allocation since the last trim worth one:
// a ramp of 20,000 connections that park at once allocates about 40 MiB.
const memoryGrowthMin = 16 << 20

// memoryReturnGap is the least time between two trims in a process.
const memoryReturnGap = 5 * time.Second

// burstEnded reports whether, with sinceTrim bytes allocated since the
// last trim, lastSecond of them since the look before, peak the most
// allocated between two looks since the last trim, and a heap of heap
// bytes (objects, free and unused spans, stacks), a burst has ended: at
// least memoryGrowthMin and half the heap were allocated, and allocation
// has fallen under a sixteenth of its peak. A steady load (heartbeats),
// whose allocation never falls from its peak, makes none; nor does a burst
// still going.
func burstEnded(sinceTrim, lastSecond, peak, heap uint64) bool {
	return sinceTrim >= max(memoryGrowthMin, heap/2) && lastSecond < peak/16
}

var memWatch struct {
	sync.Mutex
	allocs, atTrim uint64    // allocations at the last look, and at the last trim
	peak           uint64    // the most allocated between two looks since the last trim
	seen, trim     time.Time // the last look; the last trim
	samples        []metrics.Sample
}

// heapSamples are what memoryBurstEnded reads: the heap's classes that are
// resident or may be, then the count of bytes allocated.
func heapSamples() []metrics.Sample {
	return []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/gc/heap/allocs:bytes"},
	}
}

// memoryBurstEnded looks at the runtime's heap (at most twice a second in
// a process, whichever server's sweep asks) and reports whether a trim is
// due now ([burstEnded], and memoryReturnGap since the last).
func memoryBurstEnded() bool {
	w := &memWatch
	w.Lock()
	defer w.Unlock()
	now := time.Now()
	if now.Sub(w.seen) < time.Second/2 {
		return false
	}
	w.seen = now
	if w.samples == nil {
		w.samples = heapSamples()
	}
	metrics.Read(w.samples)
	var heap uint64
	for _, s := range w.samples[:4] {
		if s.Value.Kind() == metrics.KindUint64 {
			heap += s.Value.Uint64()
		}
	}
	allocs := w.samples[4].Value.Uint64()
	last := w.allocs
	w.allocs = allocs
	if last == 0 { // the first look: what came before it (a ramp of connections, say) counts as one burst
		w.peak = allocs - w.atTrim
		return false
	}
	w.peak = max(w.peak, allocs-last)
	if !burstEnded(allocs-w.atTrim, allocs-last, w.peak, heap) || now.Sub(w.trim) < memoryReturnGap {
		return false
	}
	w.trim, w.atTrim, w.peak = now, allocs, 0
	return true
}

// returnFreedMemory collects twice (the buffer pools drop what they hold
// over two collections) and returns the free pages to the OS.
func returnFreedMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}
