package rpctool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	netrpc "net/rpc"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lifenet/lifenet/internal/tool/cpustat"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

type loadConfig struct {
	remote     string
	impl       string
	conns      int
	inflight   int
	seconds    float64
	warmup     float64
	call       string
	direct     bool
	goroutines int
	json       bool
	recvMode   string
	cpuProfile string
}

// Summary is rpcload's result, printed as the SUMMARY line.
type Summary struct {
	Impl        string  `json:"impl"`
	Call        string  `json:"call"`
	Direct      bool    `json:"direct,omitempty"`
	Conns       int     `json:"conns"`
	Inflight    int     `json:"inflight"`
	Calls       int64   `json:"calls"`
	Errors      int64   `json:"errors"`
	FirstError  string  `json:"firstError,omitempty"`
	Elapsed     float64 `json:"elapsed"`
	CallsPerSec float64 `json:"callsPerSec"`
	Mean        float64 `json:"meanUs"`
	P50         float64 `json:"p50Us"`
	P99         float64 `json:"p99Us"`
	P999        float64 `json:"p999Us"`
	Max         float64 `json:"maxUs"`
	ClientAlloc float64 `json:"clientBytesPerCall"`
	ClientCPU   float64 `json:"clientCpuUsPerCall"`
	ServerAlloc float64 `json:"serverBytesPerCall"` // -1: not measured
	ServerCPU   float64 `json:"serverCpuUsPerCall"` // -1: not measured
}

// Limits that keep a typo from starting a runaway test.
const (
	maxConns   = 4096
	maxCallers = 100_000
	maxSeconds = 3600
)

// Load runs `lifenet rpcload`.
func Load(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c loadConfig
	fs := newFlags("rpcload")
	fs.StringVar(&c.remote, "remote", "", "server address (host:port; empty: a server in this process)")
	fs.StringVar(&c.impl, "impl", "lifenet", "lifenet or netrpc (Go's net/rpc; --remote must be a `lifenet serve --impl netrpc`)")
	fs.IntVar(&c.conns, "conns", 1, "connections")
	fs.IntVar(&c.inflight, "inflight", 1, "concurrent callers per connection")
	fs.Float64Var(&c.seconds, "seconds", 5, "measured window in seconds")
	fs.Float64Var(&c.warmup, "warmup", 1, "seconds of calls before the window")
	fs.StringVar(&c.call, "call", "noarg", "call shape: "+strings.Join(Shapes, "|"))
	fs.BoolVar(&c.direct, "direct", false, "call Server.Process in this process, no sockets (NewLife's direct benchmark)")
	fs.IntVar(&c.goroutines, "goroutines", runtime.GOMAXPROCS(0), "--direct: calling goroutines")
	fs.BoolVar(&c.json, "json", false, "print only the SUMMARY line")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write this process's CPU profile here")
	fs.StringVar(&c.recvMode, "recvmode", "event", "lifenet client: event (a receive goroutine per connection) or sync (waiting callers take turns reading)")
	if code, done := parse(fs, args, stdout, stderr); done {
		return code
	}
	err := errors.Join(
		check(c.impl == "lifenet" || c.impl == "netrpc", "--impl %q: want lifenet or netrpc", c.impl),
		check(slices.Contains(Shapes, c.call), "--call %q: want one of %s", c.call, strings.Join(Shapes, ", ")),
		check(c.conns >= 1 && c.conns <= maxConns, "--conns %d: want 1 to %d", c.conns, maxConns),
		check(c.inflight >= 1 && c.conns*c.inflight <= maxCallers, "--inflight %d: want ≥ 1 and conns×inflight ≤ %d", c.inflight, maxCallers),
		check(c.seconds > 0 && c.seconds <= maxSeconds, "--seconds %g: want more than 0, at most %d", c.seconds, maxSeconds),
		check(c.warmup >= 0 && c.warmup <= maxSeconds, "--warmup %g: want 0 to %d", c.warmup, maxSeconds),
		check(c.goroutines >= 1 && c.goroutines <= maxCallers, "--goroutines %d: want 1 to %d", c.goroutines, maxCallers),
		check(!c.direct || c.impl == "lifenet", "--direct measures lifenet's Server.Process only"),
		check(c.recvMode == "event" || c.recvMode == "sync", "--recvmode %q: want event or sync", c.recvMode),
	)
	if err != nil {
		return usageError(stderr, "rpcload", err)
	}
	stop, err := cpustat.StartProfile(c.cpuProfile)
	if err != nil {
		return usageError(stderr, "rpcload", err)
	}
	s, err := runLoad(ctx, c, stderr)
	stop()
	if err != nil {
		fmt.Fprintf(stderr, "lifenet rpcload: %v\n", err)
		return 1
	}
	WriteSummary(stdout, "rpcload", s, !c.json)
	if s.Calls == 0 {
		fmt.Fprintf(stderr, "lifenet rpcload: no call completed (first error: %s)\n", s.FirstError)
		return 1
	}
	return 0
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

func runLoad(ctx context.Context, c loadConfig, progress io.Writer) (Summary, error) {
	s := Summary{Impl: c.impl, Call: c.call, Direct: c.direct, Conns: c.conns, Inflight: c.inflight, ServerAlloc: -1, ServerCPU: -1}
	var t *Target
	var err error
	switch {
	case c.direct:
		s.Conns, s.Inflight = 0, c.goroutines
		t, err = directTarget(c)
	case c.impl == "netrpc":
		t, err = netrpcTarget(ctx, c)
	default:
		t, err = lifenetTarget(ctx, c)
	}
	if err != nil {
		return s, err
	}
	defer t.Close()
	return Measure(ctx, Window{Warmup: c.warmup, Seconds: c.seconds, Remote: c.remote != "", Label: "rpcload"}, t, s, progress), nil
}

func lifenetTarget(ctx context.Context, c loadConfig) (*Target, error) {
	addr, stopServer, err := localServer(ctx, c.remote)
	if err != nil {
		return nil, err
	}
	var clients []*rpc.Client
	t := &Target{Close: func() {
		for _, cl := range clients {
			cl.Close()
		}
		stopServer()
	}}
	sh := ShapeOf(c.call)
	for range c.conns {
		cfg := rpc.ClientConfig{}
		if c.recvMode == "sync" {
			cfg.Transport.Mode = transport.ReceiveSync
		}
		cl, err := rpc.Dial(ctx, addr, cfg)
		if err != nil {
			t.Close()
			return nil, err
		}
		clients = append(clients, cl)
		for range c.inflight {
			t.Callers = append(t.Callers, lifenetCaller(cl, sh))
		}
	}
	t.Stats = func(ctx context.Context) (ProcStats, bool) {
		ps, err := rpc.Call[ProcStats](ctx, clients[0], "Bench/ServerStats", nil)
		return ps, err == nil
	}
	return t, nil
}

// localServer returns remote, or starts a lifenet server in this process
// when remote is empty.
func localServer(ctx context.Context, remote string) (string, func(), error) {
	if remote != "" {
		return remote, func() {}, nil
	}
	srv, err := rpc.NewServer(rpc.Config{})
	if err == nil {
		err = RegisterBench(srv, true)
	}
	if err != nil {
		return "", nil, err
	}
	a, err := srv.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	return a.String(), func() { srv.Close() }, nil
}

func netrpcTarget(ctx context.Context, c loadConfig) (*Target, error) {
	if c.remote == "" {
		return nil, errors.New("--impl netrpc needs --remote (start `lifenet serve --impl netrpc`)")
	}
	var clients []*netrpc.Client
	t := &Target{Close: func() {
		for _, cl := range clients {
			cl.Close()
		}
	}}
	sh := ShapeOf(c.call)
	d := net.Dialer{Timeout: 3 * time.Second}
	for range c.conns {
		nc, err := d.DialContext(ctx, "tcp", strings.TrimPrefix(c.remote, "tcp://"))
		if err != nil {
			t.Close()
			return nil, err
		}
		cl := netrpc.NewClient(nc)
		clients = append(clients, cl)
		for range c.inflight {
			t.Callers = append(t.Callers, netrpcCaller(cl, sh))
		}
	}
	t.Stats = func(context.Context) (ProcStats, bool) {
		var ps ProcStats
		return ps, clients[0].Call("Bench.ServerStats", struct{}{}, &ps) == nil
	}
	return t, nil
}

func directTarget(c loadConfig) (*Target, error) {
	srv, err := rpc.NewServer(rpc.Config{})
	if err == nil {
		err = RegisterBench(srv, true)
	}
	if err != nil {
		return nil, err
	}
	sh := ShapeOf(c.call)
	var args any
	switch {
	case sh.Bytes != nil:
		args = sh.Bytes
	case sh.Str != "":
		args = StringArgs{Input: sh.Str}
	case sh.Action == "Bench/MultiArgs":
		args = multiArgs
	}
	body, err := rpc.AppendRequest(nil, sh.Action, args)
	if err != nil {
		return nil, err
	}
	t := &Target{Close: func() { srv.Close() }, Stats: func(context.Context) (ProcStats, bool) { return ProcStats{}, false }}
	for range c.goroutines {
		dst := make([]byte, 0, 4096)
		t.Callers = append(t.Callers, func(ctx context.Context) error {
			out, isErr, ok := srv.Process(ctx, body, dst[:0])
			if !ok || isErr {
				return fmt.Errorf("process: no reply or an error reply (% x)", out)
			}
			return nil
		})
	}
	return t, nil
}

// worker is one calling goroutine's own counters (no sharing while calls
// run: the progress line reads done, which only its goroutine writes).
type worker struct {
	done  atomic.Int64
	errs  int64
	first error
	hist  *hdrhistogram.Histogram
	_     [64]byte // keep neighbours' counters off this cache line
}

// Measure runs t's callers for the warm-up and the window and sums up: the
// calls started inside the window, their latencies (HDR histograms, one
// per goroutine), and the client's and server's CPU and bytes per call.
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
	s.CallsPerSec = float64(s.Calls) / s.Elapsed
	us := func(ns float64) float64 { return float64(int64(ns/10)) / 100 }
	s.Mean, s.P50, s.P99 = us(h.Mean()), us(float64(h.ValueAtQuantile(50))), us(float64(h.ValueAtQuantile(99)))
	s.P999, s.Max = us(float64(h.ValueAtQuantile(99.9))), us(float64(h.Max()))
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
		w.done.Add(1)
	}
}

// showProgress prints a line a second to w (the calls of the last second)
// and returns a function that stops it.
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
		fmt.Fprintf(out, "latency µs  : mean=%.1f  P50=%.1f  P99=%.1f  P99.9=%.1f  max=%.1f\n", s.Mean, s.P50, s.P99, s.P999, s.Max)
		fmt.Fprintf(out, "client      : %.1f B/call allocated, %.2f µs CPU/call\n", s.ClientAlloc, s.ClientCPU)
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
