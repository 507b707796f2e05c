package soak

import (
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/lifenet/lifenet/internal/cpustat"
	"github.com/lifenet/lifenet/internal/pooltrack"
)

// Sample is one reading of the process's resources.
type Sample struct {
	At         time.Duration // since the load started (negative: the baseline)
	Goroutines int
	HeapAlloc  uint64 // bytes of live and not yet swept heap objects (MemStats.HeapAlloc)
	HeapLive   uint64 // heap marked live by the last GC
	Buffers    int    // pooled buffers taken since the run began and not released
	FDs        int    // open file descriptors (-1: not counted on this OS)
	Sessions   int    // open connections of both servers
	// Pending is the request numbers the live clients' matchers hold
	// (codec.MatchStats.InFlight summed): requests awaiting replies and
	// timed-out ones quarantined until their late reply. In Final it is
	// read before the clients close (see drainPending).
	Pending int
	Calls   int64 // operations completed so far
	Errors  int64 // unexpected outcomes so far
	CPU     float64
}

// heapMetrics are read with runtime/metrics rather than ReadMemStats, which
// stops the world; /gc/heap/live is the heap the last GC found reachable, a
// steadier measure of what is held than HeapAlloc, which also counts
// garbage not yet collected and so saws up and down with every GC cycle.
var heapMetrics = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}

func readHeap() (alloc, live uint64) {
	s := make([]metrics.Sample, len(heapMetrics))
	copy(s, heapMetrics)
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		alloc = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		live = s[1].Value.Uint64()
	}
	return alloc, live
}

// sampler takes samples of one run.
type sampler struct {
	mark  uint64 // the buffer-tracking mark at the start of the run
	start time.Time
	srv   *servers
	cnt   *counters
	// pending reads the load's clients (nil before the load: none).
	pending func() int
}

func (s *sampler) take() Sample {
	alloc, live := readHeap()
	pending := 0
	if s.pending != nil {
		pending = s.pending()
	}
	return Sample{
		At:         time.Since(s.start),
		Goroutines: runtime.NumGoroutine(),
		HeapAlloc:  alloc,
		HeapLive:   live,
		Buffers:    len(pooltrack.Since(s.mark)),
		FDs:        openFDs(),
		Sessions:   s.srv.sessions(),
		Pending:    pending,
		Calls:      s.cnt.calls(),
		Errors:     s.cnt.unexpected(),
		CPU:        cpustat.Seconds(),
	}
}

// collected takes a sample after two forced collections (the second
// empties sync.Pool's victim caches, where the buffer pools keep storage),
// so that a baseline and a drained sample compare what is really held.
func (s *sampler) collected() Sample {
	runtime.GC()
	runtime.GC()
	return s.take()
}

// metric is one judged resource.
type metric struct {
	name     string
	unit     string // "" for counts, "MiB" for bytes
	of       func(Sample) float64
	trend    Tolerance // allowed rise between the medians of the last two quarters
	perConn  float64   // added to trend.Abs for each connection of the run
	drained  Tolerance // allowed excess over the baseline after the drain
	onlyWhen func(Sample) bool
}

const mib = 1 << 20

// judged are the resources judged with their tolerances. The trend
// tolerances are sized to the noise of a steady load (the operations in
// flight, the slow calls held, the redials under way at the moment of a
// sample); the drained ones are tight: once every client is closed,
// everything the load took must be given back.
var judged = []metric{
	{name: "goroutines", of: func(s Sample) float64 { return float64(s.Goroutines) },
		trend: Tolerance{Abs: 16, Rel: 0.02}, drained: Tolerance{Abs: 2}},
	{name: "heap", unit: "MiB", of: func(s Sample) float64 { return float64(s.HeapLive) / mib },
		trend: Tolerance{Abs: 4, Rel: 0.1}, drained: Tolerance{Abs: 4, Rel: 0.5}},
	{name: "buffers", of: func(s Sample) float64 { return float64(s.Buffers) },
		trend: Tolerance{Abs: 16, Rel: 0.02}, drained: Tolerance{}},
	{name: "fds", of: func(s Sample) float64 { return float64(s.FDs) },
		trend: Tolerance{Abs: 8, Rel: 0.02}, drained: Tolerance{Abs: 2},
		onlyWhen: func(s Sample) bool { return s.FDs >= 0 }},
	{name: "sessions", of: func(s Sample) float64 { return float64(s.Sessions) },
		trend: Tolerance{Abs: 8, Rel: 0.02}, drained: Tolerance{}},
	// Pending requests are the call rate times the latency, plus the
	// timeout rate times how long a timed-out number waits for its late
	// reply (SlowFor less CallTimeout), so they follow the machine's load
	// rather than any leak; a rise of a tenth of the connections on top of
	// doubling means calls are getting stuck or numbers are not coming
	// back. They replace a count of the workers' operations in progress,
	// which told nothing more: every operation is bounded by a deadline
	// whose expiry is counted as an error, and once the workers stop it is
	// 0 by construction, whereas the matchers' numbers can leak.
	{name: "pending", of: func(s Sample) float64 { return float64(s.Pending) },
		trend: Tolerance{Abs: 4, Rel: 1}, perConn: 0.1, drained: Tolerance{}},
}
