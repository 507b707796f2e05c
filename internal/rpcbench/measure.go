package rpcbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lifenet/lifenet/internal/cpustat"
)

// Summary is a load run's result (rpcload's, grpcload's), printed as the
// SUMMARY line.
type Summary struct {
	Impl        string  `json:"impl"`
	Call        string  `json:"call"`
	Direct      bool    `json:"direct,omitempty"`
	Conns       int     `json:"conns"`
	Inflight    int     `json:"inflight"`
	Calls       int64   `json:"calls"`
	Errors      int64   `json:"errors"`
	FirstError  string  `json:"firstError,omitempty"`
	Elapsed     float64 `json:"elapsed"`               // seconds of the window that ran
	Interrupted bool    `json:"interrupted,omitempty"` // ctx ended before the window did: Elapsed is shorter than asked
	CallsPerSec float64 `json:"callsPerSec"`
	Mean        float64 `json:"meanUs"`
	P50         float64 `json:"p50Us"`
	P95         float64 `json:"p95Us"`
	P99         float64 `json:"p99Us"`
	P999        float64 `json:"p999Us"`
	Max         float64 `json:"maxUs"`
	ClientAlloc float64 `json:"clientBytesPerCall"`
	ClientCPU   float64 `json:"clientCpuUsPerCall"`
	InProcess   bool    `json:"inProcess,omitempty"` // the server ran in this process: ClientAlloc and ClientCPU are the whole process's, the server's share included
	ServerAlloc float64 `json:"serverBytesPerCall"`  // -1: not measured
	ServerCPU   float64 `json:"serverCpuUsPerCall"`  // -1: not measured
}

// Target is what a load run calls: one Caller per calling goroutine, how
// to read the server process's counters (false: unknown) and how to clean
// up. grpcload (bench/) measures grpc-go with it too.
type Target struct {
	Callers []Caller
	Stats   func(ctx context.Context) (ProcStats, bool)
	Close   func()
}

// Window is a run's timing: warm-up and measured seconds; Remote says the
// server is another process (its counters are per call of this run).
type Window struct {
	Warmup, Seconds float64
	Remote          bool
	Label           string // the progress line's prefix
}

// worker is one calling goroutine's own counters (no sharing while calls
// run: the progress line reads done, which only its goroutine writes).
type worker struct {
	done  atomic.Int64 // calls answered, warm-up included (the progress line's)
	errs  int64
	first error
	hist  *hdrhistogram.Histogram
	_     [64]byte // keep neighbours' counters off this cache line
}

// Measure runs t's callers for the warm-up and the window and sums up: the
// calls started inside the window, their latencies (HDR histograms, one
// per goroutine), and the client's and server's CPU and bytes per call.
// When ctx ends first (an interrupt) the summary is of the part of the
// window that ran, its Elapsed that part's length, and Interrupted set.
func Measure(ctx context.Context, win Window, t *Target, s Summary, progress io.Writer) Summary {
	warm := time.Duration(win.Warmup * float64(time.Second))
	window := time.Duration(win.Seconds * float64(time.Second))
	start := time.Now()
	from, until := start.Add(warm), start.Add(warm+window)
	ctx, cancel := context.WithDeadline(ctx, until.Add(20*time.Second)) // a stuck call cannot hold the run
	defer cancel()

	workers := make([]*worker, len(t.Callers))
	var wg sync.WaitGroup
	for i, call := range t.Callers {
		w := &worker{hist: hdrhistogram.New(1, 60_000_000_000, 3)}
		workers[i] = w
		wg.Go(func() { w.run(ctx, call, from, until) })
	}
	type sample struct {
		ps    ProcStats
		ok    bool
		alloc uint64
		cpu   float64
	}
	take := func() sample {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		ps, ok := t.Stats(ctx)
		return sample{ps, ok, ms.TotalAlloc, cpustat.Seconds()}
	}
	stopProgress := showProgress(progress, win.Label, workers, start, warm, window)
	sleepUntil(ctx, from)
	s0 := take()
	sleepUntil(ctx, until)
	end := time.Now() // until, or earlier when interrupted
	s1 := take()
	wg.Wait()
	stopProgress()

	h := hdrhistogram.New(1, 60_000_000_000, 3)
	for _, w := range workers {
		h.Merge(w.hist)
		s.Errors += w.errs
		if w.first != nil && s.FirstError == "" {
			s.FirstError = w.first.Error()
		}
	}
	s.Calls = h.TotalCount()
	s.Elapsed = window.Seconds()
	if end.Before(until) { // ctx ended (this ctx's own deadline is past until)
		s.Interrupted = true
		s.Elapsed = max(end.Sub(from), 0).Seconds()
	}
	if s.Elapsed > 0 {
		s.CallsPerSec = float64(s.Calls) / s.Elapsed
	}
	us := func(ns float64) float64 { return float64(int64(ns/10)) / 100 }
	s.Mean, s.P50, s.P99 = us(h.Mean()), us(float64(h.ValueAtQuantile(50))), us(float64(h.ValueAtQuantile(99)))
	s.P95 = us(float64(h.ValueAtQuantile(95)))
	s.P999, s.Max = us(float64(h.ValueAtQuantile(99.9))), us(float64(h.Max()))
	s.InProcess = !win.Remote
	if n := float64(s.Calls); n > 0 {
		s.ClientAlloc = float64(int64(float64(s1.alloc-s0.alloc)/n*10)) / 10
		s.ClientCPU = float64(int64((s1.cpu-s0.cpu)/n*1e7)) / 10
		if s0.ok && s1.ok && win.Remote {
			s.ServerAlloc = float64(int64(float64(s1.ps.TotalAlloc-s0.ps.TotalAlloc)/n*10)) / 10
			s.ServerCPU = float64(int64((s1.ps.CPU-s0.ps.CPU)/n*1e7)) / 10
		}
	}
	return s
}

// sleepUntil sleeps until t or until ctx ends (an interrupt).
func sleepUntil(ctx context.Context, t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// run calls until until, recording the calls that start inside the window.
func (w *worker) run(ctx context.Context, call Caller, from, until time.Time) {
	for ctx.Err() == nil {
		t0 := time.Now()
		if !t0.Before(until) {
			return
		}
		err := call(ctx)
		if err == nil {
			w.done.Add(1) // the progress line's count, warm-up included
		}
		if t0.Before(from) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return // interrupted: not the server's error
			}
			w.errs++
			if w.first == nil {
				w.first = err
			}
			continue
		}
		w.hist.RecordValue(int64(time.Since(t0)))
	}
}

// showProgress prints a line a second to w (the calls answered in the
// last second, in the warm-up too) and returns a function that stops it.
func showProgress(w io.Writer, label string, workers []*worker, start time.Time, warm, window time.Duration) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var last int64
		for {
			select {
			case <-done:
				return
			case <-t.C:
				var n int64
				for _, wk := range workers {
					n += wk.done.Load()
				}
				el := time.Since(start)
				phase := "warm-up"
				if el > warm {
					phase = "measuring"
				}
				fmt.Fprintf(w, "[%s] %s %.0f/%.0f s  %d calls/s\n", label, phase, el.Seconds(), (warm + window).Seconds(), n-last)
				last = n
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// WriteSummary prints the human-readable result block (headed by tool)
// and the SUMMARY line.
func WriteSummary(out io.Writer, tool string, s Summary, human bool) {
	if human {
		shape := fmt.Sprintf("%d conns × %d in flight", s.Conns, s.Inflight)
		if s.Direct {
			shape = fmt.Sprintf("direct, %d goroutines", s.Inflight)
		}
		fmt.Fprintf(out, "------- %s %s %s (%s) -------\n", tool, s.Impl, s.Call, shape)
		fmt.Fprintf(out, "calls       : %d in %.2f s (%.0f/s), %d errors\n", s.Calls, s.Elapsed, s.CallsPerSec, s.Errors)
		if s.Interrupted {
			fmt.Fprintf(out, "interrupted : after %.2f s of the window; the figures are of that time\n", s.Elapsed)
		}
		fmt.Fprintf(out, "latency µs  : mean=%.1f  P50=%.1f  P99=%.1f  P99.9=%.1f  max=%.1f\n", s.Mean, s.P50, s.P99, s.P999, s.Max)
		if s.InProcess {
			fmt.Fprintf(out, "process     : %.1f B/call allocated, %.2f µs CPU/call (client and server: one process)\n", s.ClientAlloc, s.ClientCPU)
		} else {
			fmt.Fprintf(out, "client      : %.1f B/call allocated, %.2f µs CPU/call\n", s.ClientAlloc, s.ClientCPU)
		}
		if s.ServerCPU >= 0 {
			fmt.Fprintf(out, "server      : %.1f B/call allocated, %.2f µs CPU/call\n", s.ServerAlloc, s.ServerCPU)
		}
		if s.FirstError != "" {
			fmt.Fprintf(out, "first error : %s\n", s.FirstError)
		}
	}
	js, _ := json.Marshal(s)
	fmt.Fprintf(out, "SUMMARY: %s\n", js)
}
