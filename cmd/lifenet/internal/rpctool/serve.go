package rpctool

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	netrpc "net/rpc"
	"runtime"
	"strconv"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"github.com/lifenet/lifenet/internal/cpustat"
	"github.com/lifenet/lifenet/internal/rpcbench"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

type serveConfig struct {
	host       string
	port       int
	impl       string
	udp        bool
	serial     bool
	spawn      bool
	seconds    float64
	grace      time.Duration
	cpuProfile string
	maxConns   int           // --max-conns; 0: no limit
	maxPerIP   int           // --max-conns-per-ip; 0: no limit
	reusePort  bool          // --reuseport
	keepAlive  time.Duration // --keepalive; 0: off
	reg        registerConfig
	spans      spanOut // --traces-out, with hooks that trace
	spansSet   bool    // the command line set --traces-out
}

// Limits of serve's flags.
const (
	maxServeSeconds = 86400
	maxGrace        = 10 * time.Minute
	maxKeepAlive    = 24 * time.Hour
	maxSleep        = time.Minute // Bench/Sleep's longest hold
	maxServeConns   = 100_000_000 // --max-conns and --max-conns-per-ip
)

// errGraceOver is Serve's error when calls were still running when the
// grace period ended.
var errGraceOver = errors.New("calls still running when the grace period ended were cut short")

// Serve runs `lifenet serve`. It runs until ctx ends (SIGINT or SIGTERM:
// lifenet's main cancels ctx on both) or --seconds pass, then shuts down:
// new calls are refused, the calls in progress finish within --grace, and
// it returns 0; 1 when the grace period ended first (those calls are cut
// short) or the server failed, 2 for a bad flag.
func Serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return ServeWith(ctx, args, stdout, stderr, ServeHooks{})
}

// ServeHooks let the lifenet command add to `lifenet serve` what this
// package leaves to it (the otel module's metrics and tracing).
type ServeHooks struct {
	// Flags adds flags to serve's flag set.
	Flags func(fs *flag.FlagSet)
	// Check validates those flags once parsed: its error is a usage error
	// (exit 2), reported with serve's own.
	Check func() error
	// Config adjusts the lifenet server's config (its interceptors) once
	// the flags are parsed.
	Config func(cfg *rpc.Config) error
	// Started runs once the lifenet server listens, before READY is
	// printed; the stop it returns runs when the server has shut down.
	Started func(ctx context.Context, srv *rpc.Server, stdout io.Writer) (stop func(), err error)
	// Tracer returns, once Config ran, the provider of the server's spans
	// (nil when the flags asked for none). With it serve has --traces-out
	// and registers on it the span processor that writes the spans there;
	// serve shuts that processor down after the server, whether or not
	// Started's stop shut the provider down first.
	Tracer func() *sdktrace.TracerProvider
}

func (h ServeHooks) check() error {
	if h.Check == nil {
		return nil
	}
	return h.Check()
}

// ServeWith runs `lifenet serve` with hooks.
func ServeWith(ctx context.Context, args []string, stdout, stderr io.Writer, hooks ServeHooks) int {
	var c serveConfig
	fs := cliflag.New("serve", "", "  An RPC server with NewLife's benchmark controller (Bench/NoArg, EchoString, EchoPacket, MultiArgs,\n"+
		"  Add, ServerStats) and Bench/Sleep ms=N, which holds a call N ms (at most 60000), to try timeouts and --grace.\n"+
		"  It prints READY and its addresses, and on SIGINT or SIGTERM (or after --seconds) shuts down gracefully:\n"+
		"  exit 0 when every call in progress finished within --grace, 1 when some were cut short.\n"+
		"  --register "+etcdSynopsis+" registers the server in etcd under a lease (before READY), and\n"+
		"  deregisters it first thing at shutdown, so that clients (call and rpcload through etcd) stop choosing it.")
	fs.StringVar(&c.host, "host", "127.0.0.1", "address to listen on (0.0.0.0 or :: for all)")
	fs.IntVar(&c.port, "port", 5500, "port (0 picks a free one)")
	fs.StringVar(&c.impl, "impl", "lifenet", "server: lifenet or netrpc (Go's net/rpc, the baseline)")
	fs.BoolVar(&c.udp, "udp", true, "lifenet: also serve SRMP over UDP on the same port")
	fs.BoolVar(&c.serial, "serial", false, "lifenet: handle each connection's calls in order on its reading goroutine (NewLife Multiplex=false)")
	fs.BoolVar(&c.spawn, "spawn", false, "lifenet: run the benchmark actions on a goroutine per call (NewLife Multiplex) instead of inline on the reading goroutine")
	fs.Float64Var(&c.seconds, "seconds", 0, "shut down after this many seconds (0: run until SIGINT or SIGTERM)")
	fs.DurationVar(&c.grace, "grace", 10*time.Second, "on shutdown, how long the calls in progress may take to finish before they are cut short")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile here")
	fs.IntVar(&c.maxConns, "max-conns", transport.DefaultMaxConns,
		"lifenet: most live TCP connections (0: no limit); near it, addresses holding more than the others get no more (transport.Config.MaxConns)")
	fs.IntVar(&c.maxPerIP, "max-conns-per-ip", transport.DefaultMaxConnsPerIP, "lifenet: most live TCP connections from one remote address (0: no limit)")
	fs.DurationVar(&c.keepAlive, "keepalive", transport.DefaultKeepAlive, "lifenet: TCP keep-alive period of accepted connections (0: off). Devices that send heartbeats need none: "+
		"with a heartbeat a minute, 15 s costs the kernel 3 probes and 3 replies a connection between heartbeats (100,000 packets a second at a million)")
	fs.BoolVar(&c.reusePort, "reuseport", false, "lifenet: listen with SO_REUSEPORT, so that several serve processes share one --port (Linux spreads connections over them; not supported on Windows)")
	c.reg.flags(fs)
	if hooks.Tracer != nil {
		c.spans.flags(fs)
	}
	if hooks.Flags != nil {
		hooks.Flags(fs.FlagSet)
	}
	if code, done := fs.Parse(args, stdout, stderr); done {
		return code
	}
	err := errors.Join(
		cliflag.Check(c.impl == "lifenet" || c.impl == "netrpc", "--impl %q: want lifenet or netrpc", c.impl),
		cliflag.Between("port", c.port, 0, 65535),
		cliflag.Between("seconds", c.seconds, 0, maxServeSeconds),
		cliflag.Between("grace", c.grace, 0, maxGrace),
		cliflag.Check(net.ParseIP(c.host) != nil || c.host == "localhost", "--host %q: want an IP address", c.host),
		c.reg.check(c.impl, c.host, fs.Set()),
		cliflag.Check(!fs.Set()["traces-out"] || c.impl == "lifenet", "--traces-out: lifenet servers only"),
		cliflag.Between("max-conns", c.maxConns, 0, maxServeConns),
		cliflag.Between("max-conns-per-ip", c.maxPerIP, 0, maxServeConns),
		cliflag.Between("keepalive", c.keepAlive, 0, maxKeepAlive),
		cliflag.Check(c.impl == "lifenet" || !(fs.Set()["max-conns"] || fs.Set()["max-conns-per-ip"] || c.reusePort || fs.Set()["keepalive"]),
			"--max-conns, --max-conns-per-ip, --keepalive and --reuseport: lifenet servers only"),
		cliflag.Check(!c.reusePort || transport.ReusePortSupported, "--reuseport: not supported on %s", runtime.GOOS),
		hooks.check(),
	)
	c.spansSet = fs.Set()["traces-out"]
	if err != nil {
		return cliflag.UsageError(stderr, "serve", err)
	}
	if c.seconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(c.seconds*float64(time.Second)))
		defer cancel()
	}
	stop, err := cpustat.StartProfile(c.cpuProfile)
	if err != nil {
		return cliflag.UsageError(stderr, "serve", err)
	}
	defer stop()
	addr := net.JoinHostPort(c.host, strconv.Itoa(c.port))
	if c.impl == "netrpc" {
		err = serveNetRPC(ctx, addr, c.grace, stdout)
	} else {
		err = serveLifenet(ctx, c, addr, stdout, stderr, hooks)
	}
	var usage errUsage
	if errors.As(err, &usage) {
		return cliflag.UsageError(stderr, "serve", usage.error)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lifenet serve: %v\n", err)
		return cliflag.ExitFail
	}
	return cliflag.ExitOK
}

// sleepArgs are Bench/Sleep's arguments.
type sleepArgs struct {
	Ms int `json:"ms"`
}

// sleep is Bench/Sleep: it holds the call args.Ms milliseconds (at most
// maxSleep) or until the call is cancelled, and returns the milliseconds.
func sleep(ctx context.Context, a sleepArgs) (int, error) {
	d := min(time.Duration(max(a.Ms, 0))*time.Millisecond, maxSleep)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return int(d / time.Millisecond), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// keepAliveOf is --keepalive as the transport takes it: 0 (off) is its
// negative period.
func keepAliveOf(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func serveLifenet(ctx context.Context, c serveConfig, addr string, stdout, stderr io.Writer, hooks ServeHooks) (err error) {
	cfg := rpc.Config{Serial: c.serial}
	cfg.Transport.MaxConns, cfg.Transport.MaxConnsPerIP = connLimit(c.maxConns), connLimit(c.maxPerIP)
	cfg.Transport.ReusePort = c.reusePort
	cfg.Transport.KeepAlive = keepAliveOf(c.keepAlive)
	if hooks.Config != nil {
		if err := hooks.Config(&cfg); err != nil {
			return err
		}
	}
	var tp *sdktrace.TracerProvider
	if hooks.Tracer != nil {
		tp = hooks.Tracer()
	}
	stopSpans, err := c.spans.start(tp, c.spansSet, stdout)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopSpans()) }() // after Started's stop: the server is down, every span ended
	srv, err := rpc.NewServer(cfg)
	if err != nil {
		return err
	}
	if err := errors.Join(rpcbench.RegisterBench(srv, !c.spawn), rpc.Handle(srv, "Bench/Sleep", sleep)); err != nil {
		srv.Close()
		return err
	}
	if c.udp && c.port == 0 {
		if addr, err = freeForBoth(c.host); err != nil {
			srv.Close()
			return err
		}
	}
	a, err := srv.Listen(ctx, "tcp", addr)
	if err != nil {
		srv.Close()
		return err
	}
	hp := a.String()
	ready := "READY tcp://" + hp
	if c.udp {
		if _, err := srv.Listen(ctx, "udp", hp); err != nil {
			srv.Close()
			return err
		}
		ready += " udp://" + hp
	}
	if hooks.Started != nil {
		stop, err := hooks.Started(ctx, srv, stdout)
		if err != nil {
			srv.Close()
			return err
		}
		defer stop()
	}
	reg, err := c.reg.register(ctx, hp, stderr)
	if err != nil {
		srv.Close()
		return err
	}
	fmt.Fprintf(stdout, "%s http://%s ws://%s\n", ready, hp, hp)
	<-ctx.Done()
	reg.close() // first: clients stop choosing this server while it still answers
	sctx, cancel := context.WithTimeout(context.Background(), c.grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		if sctx.Err() != nil {
			return fmt.Errorf("%w (--grace %v)", errGraceOver, c.grace)
		}
		return err
	}
	return nil
}

// connLimit maps --max-conns and --max-conns-per-ip to the transport's
// limit: the flag's 0 (no limit) is [transport.NoLimit], whereas a zero
// in transport.Config takes the default.
func connLimit(n int) int {
	if n == 0 {
		return transport.NoLimit
	}
	return n
}

// serveNetRPC serves net/rpc until ctx ends, then closes the listener and
// drains the connections within grace (drainNetRPC).
func serveNetRPC(ctx context.Context, addr string, grace time.Duration, stdout io.Writer) error {
	srv := netrpc.NewServer()
	if err := srv.RegisterName("Bench", rpcbench.NetRPCBench{}); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "READY tcp://%s\n", ln.Addr())
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var conns []net.Conn
	var wg sync.WaitGroup
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("accept: %w", err)
			} else {
				err = nil
			}
			return errors.Join(err, drainNetRPC(conns, &wg, grace))
		}
		conns = append(conns, c)
		wg.Go(func() { srv.ServeConn(c) })
	}
}

// drainNetRPC ends net/rpc's connections gracefully: a read deadline in
// the past ends each ServeConn's read loop, and ServeConn then writes the
// replies of the calls it had read before it closes the connection. What
// is still open when grace ends is closed.
func drainNetRPC(conns []net.Conn, wg *sync.WaitGroup, grace time.Duration) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for _, c := range conns {
		c.SetReadDeadline(time.Now())
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	var err error
	select {
	case <-done:
	case <-t.C:
		err = fmt.Errorf("%w (--grace %v)", errGraceOver, grace)
	}
	for _, c := range conns {
		c.Close()
	}
	<-done
	return err
}

// freeForBoth returns host with a port free for TCP and UDP alike, for
// --port 0 with UDP on the same port: the kernel's free TCP port may be a
// UDP socket's of another process, and the UDP listen on it then failed
// with "address already in use".
func freeForBoth(host string) (string, error) {
	const tries = 20
	for range tries {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return "", err
		}
		a := l.Addr().String()
		u, err := net.ListenPacket("udp", a)
		l.Close()
		if err == nil {
			u.Close()
			return a, nil
		}
	}
	return "", fmt.Errorf("no port on %s free for both TCP and UDP in %d tries", host, tries)
}
