package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"strings"
	"time"
)

// memClasses are the runtime's memory classes --memstats prints: together
// (the /memory/classes/... ones) they sum to what the Go runtime has
// mapped; with released taken away, to what it may hold resident.
var memClasses = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mspan/free:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/profiling/buckets:bytes",
	"/gc/heap/goal:bytes",
	"/gc/heap/live:bytes",
	"/gc/cycles/total:gc-cycles",
	"/sched/goroutines:goroutines",
}

// memLine is one --memstats line: each class's short name and value (KiB
// for bytes), then the process's RSS from /proc (Linux; "-" elsewhere).
func memLine(samples []metrics.Sample, start time.Time) string {
	metrics.Read(samples)
	var b strings.Builder
	fmt.Fprintf(&b, "memstats t=%.1fs", time.Since(start).Seconds())
	for _, s := range samples {
		name, unit, _ := strings.Cut(s.Name, ":")
		name = strings.TrimPrefix(strings.TrimPrefix(name, "/memory/classes/"), "/")
		name = strings.ReplaceAll(name, "/", ".")
		var v uint64
		if s.Value.Kind() == metrics.KindUint64 {
			v = s.Value.Uint64()
		}
		if unit == "bytes" {
			fmt.Fprintf(&b, " %s=%dK", name, v>>10)
		} else {
			fmt.Fprintf(&b, " %s=%d", name, v)
		}
	}
	fmt.Fprintf(&b, " rss=%s", rssKiB())
	return b.String()
}

// rssKiB is VmRSS from /proc/self/status, or "-".
func rssKiB() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "-"
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.ReplaceAll(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), " ", "") + "K"
		}
	}
	return "-"
}

// printMemStats writes a memLine to w every interval until ctx ends, and
// one more then.
func printMemStats(ctx context.Context, w io.Writer, every time.Duration) {
	samples := make([]metrics.Sample, len(memClasses))
	for i, n := range memClasses {
		samples[i].Name = n
	}
	start := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(w, memLine(samples, start))
			return
		case <-t.C:
			fmt.Fprintln(w, memLine(samples, start))
		}
	}
}
