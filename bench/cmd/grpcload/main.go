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
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/lifenet/lifenet/bench/internal/grpcbench"
	"github.com/lifenet/lifenet/internal/rpcbench"
)

// Limits that keep a typo from starting a runaway test (rpcload's).
const (
	maxConns     = 4096
	maxCallers   = 100_000
	maxSeconds   = 3600
	maxServeSecs = 86400
	defaultSecs  = 5
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
	fs.StringVar(&c.call, "call", "noarg", "call shape: "+strings.Join(rpcbench.Shapes, "|"))
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
	rpcbench.WriteSummary(stdout, "grpcload", s, !c.json)
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
			check(slices.Contains(rpcbench.Shapes, c.call), "--call %q: want one of %s", c.call, strings.Join(rpcbench.Shapes, ", ")),
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

func load(ctx context.Context, c config, progress io.Writer) (rpcbench.Summary, error) {
	s := rpcbench.Summary{Impl: "grpc", Call: c.call, Conns: c.conns, Inflight: c.inflight, ServerAlloc: -1, ServerCPU: -1}
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
	t := &rpcbench.Target{Close: func() {
		for _, cc := range conns {
			cc.Close()
		}
		stopServer()
	}}
	defer t.Close()
	sh := rpcbench.ShapeOf(c.call)
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
			t.Callers = append(t.Callers, grpcbench.NewCaller(cl, sh))
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
	t.Stats = func(ctx context.Context) (rpcbench.ProcStats, bool) {
		cpu, alloc, err := stub.ServerStats(ctx)
		return rpcbench.ProcStats{CPU: cpu, TotalAlloc: alloc}, err == nil
	}
	return rpcbench.Measure(ctx, rpcbench.Window{Warmup: c.warmup, Seconds: c.seconds, Remote: c.remote != "", Label: "grpcload"}, t, s, progress), nil
}
