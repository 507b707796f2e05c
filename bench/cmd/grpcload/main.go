// Command grpcload is `lifenet rpcload` for grpc-go: NewLife's RPC
// benchmark call shapes against the bench.Bench gRPC service
// (internal/grpcbench), in separate processes.
//
//	grpcload --server [--host 127.0.0.1] [--port 5502] [--seconds S]
//	grpcload [--remote host:port] [--conns N] [--inflight K] [--seconds S]
//	         [--warmup W] [--call noarg|echo16|echo2000|string16|string2000|multi] [--json]
//
// The server prints "READY tcp://host:port" and serves until interrupted
// (or for --seconds). The client opens N grpc.ClientConns (insecure
// credentials, one HTTP/2 connection each), runs K calling goroutines on
// each, and prints the same report and "SUMMARY: {json}" line as
// `lifenet rpcload` (impl "grpc"), with the server's CPU and bytes
// allocated per call read through bench.Bench/ServerStats. Without
// --remote the server runs in the client's process (server figures -1).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/lifenet/lifenet/bench/internal/grpcbench"
	"github.com/lifenet/lifenet/internal/cpustat"
	"github.com/lifenet/lifenet/internal/rpctool"
)

// Limits that keep a typo from starting a runaway test (rpcload's).
const (
	maxConns      = 4096
	maxCallers    = 100_000
	maxSeconds    = 3600
	maxServeSecs  = 86400
	defaultSecs   = 5
	histMaxNanos  = 60_000_000_000
	stuckCallWait = 20 * time.Second
)

type config struct {
	server   bool
	host     string
	port     int
	remote   string
	conns    int
	inflight int
	seconds  float64
	warmup   float64
	call     string
	json     bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c config
	fs := flag.NewFlagSet("grpcload", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&c.server, "server", false, "serve bench.Bench instead of calling it")
	fs.StringVar(&c.host, "host", "127.0.0.1", "--server: address to listen on")
	fs.IntVar(&c.port, "port", 5502, "--server: port (0 picks a free one)")
	fs.StringVar(&c.remote, "remote", "", "server address (host:port or tcp://host:port; empty: a server in this process)")
	fs.IntVar(&c.conns, "conns", 1, "connections (grpc.ClientConns)")
	fs.IntVar(&c.inflight, "inflight", 1, "concurrent callers per connection")
	fs.Float64Var(&c.seconds, "seconds", defaultSecs, "measured window in seconds (--server: exit after this many, default 0: until interrupted)")
	fs.Float64Var(&c.warmup, "warmup", 1, "seconds of calls before the window")
	fs.StringVar(&c.call, "call", "noarg", "call shape: "+strings.Join(grpcbench.Shapes, "|"))
	fs.BoolVar(&c.json, "json", false, "print only the SUMMARY line")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fmt.Fprintln(stdout, "usage: grpcload [flags]")
		fs.PrintDefaults()
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "grpcload: %v\n", err)
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.server && !set["seconds"] {
		c.seconds = 0
	}
	if err := validate(c, set, fs.Args()); err != nil {
		fmt.Fprintf(stderr, "grpcload: %v\n", err)
		return 2
	}
	if c.server {
		if err := serve(ctx, c, stdout); err != nil {
			fmt.Fprintf(stderr, "grpcload: %v\n", err)
			return 1
		}
		return 0
	}
	s, err := load(ctx, c, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "grpcload: %v\n", err)
		return 1
	}
	writeSummary(stdout, s, !c.json)
	if s.Calls == 0 {
		fmt.Fprintf(stderr, "grpcload: no call completed (first error: %s)\n", s.FirstError)
		return 1
	}
	return 0
}

// validate returns the first bad flag (one line).
func validate(c config, set map[string]bool, rest []string) error {
	check := func(ok bool, format string, args ...any) error {
		if ok {
			return nil
		}
		return fmt.Errorf(format, args...)
	}
	errs := []error{check(len(rest) == 0, "unexpected argument %q (all settings are flags)", strings.Join(rest, " "))}
	if c.server {
		for _, f := range []string{"remote", "conns", "inflight", "warmup", "call", "json"} {
			errs = append(errs, check(!set[f], "--%s is a client flag; not with --server", f))
		}
		errs = append(errs,
			check(c.port >= 0 && c.port <= 65535, "--port %d: want 0 to 65535", c.port),
			check(net.ParseIP(c.host) != nil || c.host == "localhost", "--host %q: want an IP address", c.host),
			check(c.seconds >= 0 && c.seconds <= maxServeSecs, "--seconds %g: want 0 to %d", c.seconds, maxServeSecs),
		)
	} else {
		for _, f := range []string{"host", "port"} {
			errs = append(errs, check(!set[f], "--%s is a server flag; use it with --server (the client takes --remote)", f))
		}
		_, _, addrErr := net.SplitHostPort(strings.TrimPrefix(c.remote, "tcp://"))
		errs = append(errs,
			check(c.remote == "" || addrErr == nil, "--remote %q: want host:port or tcp://host:port", c.remote),
			check(slices.Contains(grpcbench.Shapes, c.call), "--call %q: want one of %s", c.call, strings.Join(grpcbench.Shapes, ", ")),
			check(c.conns >= 1 && c.conns <= maxConns, "--conns %d: want 1 to %d", c.conns, maxConns),
			check(c.inflight >= 1 && c.conns*c.inflight <= maxCallers, "--inflight %d: want ≥ 1 and conns×inflight ≤ %d", c.inflight, maxCallers),
			check(c.seconds > 0 && c.seconds <= maxSeconds, "--seconds %g: want more than 0, at most %d", c.seconds, maxSeconds),
			check(c.warmup >= 0 && c.warmup <= maxSeconds, "--warmup %g: want 0 to %d", c.warmup, maxSeconds),
		)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// listen starts a gRPC server with the bench.Bench service on addr.
func listen(addr string) (*grpc.Server, net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	gs := grpc.NewServer()
	grpcbench.Register(gs, grpcbench.Server{})
	go gs.Serve(ln)
	return gs, ln.Addr(), nil
}

func serve(ctx context.Context, c config, stdout io.Writer) error {
	if c.seconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(c.seconds*float64(time.Second)))
		defer cancel()
	}
	gs, a, err := listen(net.JoinHostPort(c.host, strconv.Itoa(c.port)))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "READY tcp://%s\n", a)
	<-ctx.Done()
	// Graceful stop, bounded: a client that keeps its connection open
	// would hold GracefulStop forever.
	done := make(chan struct{})
	go func() { gs.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		gs.Stop()
	}
	return nil
}

// target is what the callers call.
type target struct {
	callers []grpcbench.Caller
	stats   func(ctx context.Context) (rpctool.ProcStats, bool)
	close   func()
}

func load(ctx context.Context, c config, progress io.Writer) (rpctool.Summary, error) {
	s := rpctool.Summary{Impl: "grpc", Call: c.call, Conns: c.conns, Inflight: c.inflight, ServerAlloc: -1, ServerCPU: -1}
	addr := strings.TrimPrefix(c.remote, "tcp://")
	stopServer := func() {}
	if addr == "" {
		gs, a, err := listen("127.0.0.1:0")
		if err != nil {
			return s, err
		}
		addr, stopServer = a.String(), gs.Stop
	}
	var conns []*grpc.ClientConn
	t := &target{close: func() {
		for _, cc := range conns {
			cc.Close()
		}
		stopServer()
	}}
	defer t.close()
	sh := grpcbench.ShapeOf(c.call)
	for range c.conns {
		// "passthrough:" dials addr as given (no DNS resolver): one
		// connection per ClientConn, as rpcload's one socket per conn.
		cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return s, err
		}
		conns = append(conns, cc)
		cl := grpcbench.NewClient(cc)
		for range c.inflight {
			t.callers = append(t.callers, grpcbench.NewCaller(cl, sh))
		}
	}
	// Connect every ClientConn before the clock starts (rpc.Dial and
	// net.Dial connect too); a server that is not there fails here.
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for _, cc := range conns {
		if _, err := grpcbench.NewClient(cc).NoArg(dctx, &emptypb.Empty{}, grpc.WaitForReady(true)); err != nil {
			return s, fmt.Errorf("connect %s: %w", addr, err)
		}
	}
	stub := grpcbench.NewClient(conns[0])
	t.stats = func(ctx context.Context) (rpctool.ProcStats, bool) {
		cpu, alloc, err := stub.ServerStats(ctx)
		return rpctool.ProcStats{CPU: cpu, TotalAlloc: alloc}, err == nil
	}
	return measure(ctx, c, t, s, progress), nil
}

// worker is one calling goroutine's own counters.
type worker struct {
	done  atomic.Int64
	errs  int64
	first error
	hist  *hdrhistogram.Histogram
	_     [64]byte // keep neighbours' counters off this cache line
}

// measure runs the callers for the warm-up and the window and sums up, as
// rpcload's measure does.
func measure(ctx context.Context, c config, t *target, s rpctool.Summary, progress io.Writer) rpctool.Summary {
	warm := time.Duration(c.warmup * float64(time.Second))
	window := time.Duration(c.seconds * float64(time.Second))
	start := time.Now()
	from, until := start.Add(warm), start.Add(warm+window)
	ctx, cancel := context.WithDeadline(ctx, until.Add(stuckCallWait)) // a stuck call cannot hold the run
	defer cancel()

	workers := make([]*worker, len(t.callers))
	var wg sync.WaitGroup
	for i, call := range t.callers {
		w := &worker{hist: hdrhistogram.New(1, histMaxNanos, 3)}
		workers[i] = w
		wg.Go(func() { w.run(ctx, call, from, until) })
	}
	type sample struct {
		ps    rpctool.ProcStats
		ok    bool
		alloc uint64
		cpu   float64
	}
	take := func() sample {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		ps, ok := t.stats(ctx)
		return sample{ps, ok, ms.TotalAlloc, cpustat.Seconds()}
	}
	stopProgress := showProgress(progress, workers, start, warm, window)
	sleepUntil(ctx, from)
	s0 := take()
	sleepUntil(ctx, until)
	s1 := take()
	wg.Wait()
	stopProgress()

	h := hdrhistogram.New(1, histMaxNanos, 3)
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
		if s0.ok && s1.ok && c.remote != "" {
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
func (w *worker) run(ctx context.Context, call grpcbench.Caller, from, until time.Time) {
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
func showProgress(w io.Writer, workers []*worker, start time.Time, warm, window time.Duration) func() {
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
				fmt.Fprintf(w, "[grpcload] %s %.0f/%.0f s  %d calls/s\n", phase, el.Seconds(), (warm + window).Seconds(), n-last)
				last = n
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func writeSummary(out io.Writer, s rpctool.Summary, human bool) {
	if human {
		fmt.Fprintf(out, "------- grpcload %s %s (%d conns × %d in flight) -------\n", s.Impl, s.Call, s.Conns, s.Inflight)
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
