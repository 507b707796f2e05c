package transport

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Giving memory back. The goroutine stacks and buffers of a burst (a ramp
// of new connections, a wave of large messages) go back to Go's heap when
// the sessions park; the heap keeps the pages, and with little allocation
// after the burst no collection comes to find them free for minutes (the
// burst set the goal), so a gateway's RSS would stay at its peak. So the
// poller of a server with parked sessions asks, each time it wakes (a look
// at most twice a second per process), whether much was allocated
// since the heap was last trimmed and allocation has since fallen far from
// its peak; if so, it has the runtime collect and return the free pages
// (Config.KeepFreedMemory turns it off). Sessions give their read buffers
// back as they park, up to ParkAfter after a burst's last bytes: when a
// wave of them parked since the last trim and has ended, a second trim
// returns what they gave.

// memoryGrowthMin is the least allocation since the last trim worth one:
// a ramp of 20,000 connections that park at once allocates about 40 MiB.
const memoryGrowthMin = 16 << 20

// memoryReturnGap is the least time between two trims in a process (but
// for a parking wave's: waveReturnGap).
const memoryReturnGap = 5 * time.Second

// waveReturnGap is the least time between a trim and the one after the
// parking wave that followed it.
const waveReturnGap = time.Second

// parkingWaveMin is the fewest sessions parked between two looks that
// make a wave: each gives back a read buffer of 4 KiB or more.
const parkingWaveMin = 1024

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

// parkingWave reports whether sessions are parking in numbers: of the now
// parked, more than a sixteenth and parkingWaveMin parked since the last
// look (before then, net of those woken). Steady heartbeats, each session
// parked again within its wake, make none; nor does a slow stream of new
// connections.
func parkingWave(before, now int64) bool {
	return now-before > max(now/16, parkingWaveMin)
}

// parkedSessions counts the sessions parked in the process, every
// server's (park.go).
var parkedSessions atomic.Int64

// bigReadsBack counts the read buffers larger than FirstReadSize that
// sessions woken on the poller's goroutine gave back (Server.serveQuiet):
// such a session reads a large message and parks again at once, so a
// wave of them shows here rather than in parkedSessions.
var bigReadsBack atomic.Int64

var memWatch struct {
	sync.Mutex
	parked         int64     // parkedSessions at the last look
	bigBack        int64     // bigReadsBack at the last look
	wave           bool      // a parking wave since the last trim (or going on at it)
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
// due now: [burstEnded], and memoryReturnGap since the last; or a
// [parkingWave] since the last has ended, waveReturnGap after it, with
// less than a sixteenth of memoryGrowthMin allocated since the look before.
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
	parked, parkedBefore := parkedSessions.Load(), w.parked
	w.parked = parked
	if last == 0 { // the first look: what came before it (a ramp of connections, say) counts as one burst
		w.peak = allocs - w.atTrim
		return false
	}
	w.peak = max(w.peak, allocs-last)
	bigBack, bigBefore := bigReadsBack.Load(), w.bigBack
	w.bigBack = bigBack
	wave := parkingWave(parkedBefore, parked) || bigBack-bigBefore >= parkingWaveMin
	burst := burstEnded(allocs-w.atTrim, allocs-last, w.peak, heap) && now.Sub(w.trim) >= memoryReturnGap
	// (A wave's trim waits for allocation to be quiet too: one in the
	// middle of a burst would hold the burst's own off for memoryReturnGap.)
	settled := w.wave && !wave && now.Sub(w.trim) >= waveReturnGap && allocs-last < memoryGrowthMin/16
	w.wave = w.wave || wave
	if !burst && !settled {
		return false
	}
	w.trim, w.atTrim, w.peak, w.wave = now, allocs, 0, wave
	return true
}

// returnFreedMemory collects twice (the buffer pools drop what they hold
// over two collections) and returns the free pages to the OS.
func returnFreedMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}
