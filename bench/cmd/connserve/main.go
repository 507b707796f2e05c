// Command connserve is one small TCP echo server with three
// implementations, for comparing what an idle and a busy connection costs
// each (bench/connscale.sh runs it beside the lifenet servers):
//
//   - std: the standard library as a typical server is written, a goroutine
//     per connection reading into its own 64 KiB buffer and writing each
//     read back;
//   - gnet: github.com/panjf2000/gnet/v2 as in its echo example (OnTraffic
//     writes c.Next(-1) back), multicore, so one event loop per CPU;
//   - nbio: github.com/lesismal/nbio as in its echo example (OnData writes a
//     copy of the bytes back), its default of one poller per CPU;
//   - lifenet: lifenet's transport echo (each read sent back), and
//     lifenet-codec its codec echo over SRMP frames, with no connection
//     limit and every other setting at its default.
//
// It prints "READY tcp://HOST:PORT pid=PID" on stdout once listening,
// echoes every byte back, and exits 0 after --seconds or on SIGTERM or
// SIGINT. gnet and nbio run on Linux only; elsewhere they fail with
// [errUnsupported]. --reuseport (SO_REUSEPORT) lets several processes share
// one --port; it is not supported on Windows. A bad flag is one line on
// stderr and exit code 2; a server that cannot start exits 1.
//
//	connserve [--impl std|gnet|nbio|lifenet|lifenet-codec] [--host 127.0.0.1] [--port 0] [--reuseport] [--seconds 600] [--memstats 5s]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"
)

// errUnsupported is what an implementation or option this OS lacks fails with.
var errUnsupported = errors.New("unsupported on this OS")

// config is what the flags say. Zero Seconds means the default (600).
type config struct {
	Impl      string
	Host      string
	Port      int
	ReusePort bool
	Seconds   float64
}

// servers maps --impl to its server: serve listens per cfg, calls ready
// with the address once listening, and echoes until ctx ends; it returns
// once its listener and connections are closed.
var servers = map[string]func(ctx context.Context, cfg config, ready func(addr string)) error{
	"std":  serveStd,
	"gnet": serveGnet,
	"nbio": serveNbio,
	// lifenet's own, for the same table: its transport echo, and its codec
	// echo over SRMP frames.
	"lifenet":       serveLifenet,
	"lifenet-codec": serveLifenetCodec,
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit: it returns the process's exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("connserve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.Impl, "impl", "std", "std, gnet, nbio, lifenet or lifenet-codec")
	fs.StringVar(&cfg.Host, "host", "127.0.0.1", "address to listen on")
	fs.IntVar(&cfg.Port, "port", 0, "port (0 picks a free one)")
	fs.BoolVar(&cfg.ReusePort, "reuseport", false, "listen with SO_REUSEPORT, so that several processes share one --port (not on Windows)")
	fs.Float64Var(&cfg.Seconds, "seconds", 600, "exit after this many seconds (at most 86400)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run here")
	memStats := fs.Duration("memstats", 0, "print the Go runtime's memory classes and the RSS to stderr this often (0: never)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	serve, ok := servers[cfg.Impl]
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "connserve: unexpected argument %q\n", fs.Arg(0))
		return 2
	case !ok:
		fmt.Fprintf(stderr, "connserve: --impl %q: want std, gnet, nbio, lifenet or lifenet-codec\n", cfg.Impl)
		return 2
	case cfg.Port < 0 || cfg.Port > 65535:
		fmt.Fprintf(stderr, "connserve: --port %d: want 0 to 65535\n", cfg.Port)
		return 2
	case !(cfg.Seconds >= 0 && cfg.Seconds <= 86400):
		fmt.Fprintf(stderr, "connserve: --seconds %v: want 0 to 86400 (0: the default, 600)\n", cfg.Seconds)
		return 2
	}
	if cfg.Seconds == 0 {
		cfg.Seconds = 600
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Duration(cfg.Seconds*float64(time.Second)))
	defer cancel()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "connserve: --cpuprofile: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "connserve: --cpuprofile: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if *memStats > 0 {
		mctx, mstop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { printMemStats(mctx, stderr, *memStats); close(done) }()
		defer func() { mstop(); <-done }()
	}
	pid := os.Getpid()
	err := serve(ctx, cfg, func(addr string) {
		fmt.Fprintf(stdout, "READY tcp://%s pid=%d\n", addr, pid)
	})
	if err != nil {
		fmt.Fprintf(stderr, "connserve: %s: %v\n", cfg.Impl, err)
		return 1
	}
	return 0
}
