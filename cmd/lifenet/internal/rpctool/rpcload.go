package rpctool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	netrpc "net/rpc"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"github.com/lifenet/lifenet/internal/cpustat"
	"github.com/lifenet/lifenet/internal/rpcbench"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

type loadConfig struct {
	timeout    time.Duration // --timeout: ClientConfig.Timeout; 0 its default
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
	// Through etcd (--remote etcd://…): the cluster client's settings.
	balancer string
	stagger  time.Duration
	attempts int
}

// loadGrace is how long after the window's end rpcload waits for the
// calls still out (their latencies are the window's): a server that stops
// answering holds the run at most this long past its window, not a call's
// whole timeout (15 s). A call cut by it is neither a call nor an error of
// the window.
const loadGrace = 1500 * time.Millisecond

// Limits that keep a typo from starting a runaway test.
const (
	maxConns   = 4096
	maxCallers = 100_000
	maxSeconds = 3600
)

// Load runs `lifenet rpcload`: 0 when the window ran and calls completed,
// 1 when no call completed, the run failed or it was interrupted (SIGINT
// or SIGTERM: the summary is of the part of the window that ran, and says
// so), 2 for a bad command line.
func Load(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c loadConfig
	fs := cliflag.New("rpcload", "", "  NewLife.Remoting's RPC benchmark: calls/s, latency, and the client's and server's bytes and CPU per call,\n"+
		"  against a server in this process, a lifenet serve (--remote), or Go's net/rpc (lifenet serve --impl netrpc,\n"+
		"  then rpcload --impl netrpc --remote ADDR). Interrupted, it reports the time that ran and exits 1.\n"+
		"  --remote "+etcdSynopsis+" spreads the calls over the servers registered in etcd (lifenet serve --register)\n"+
		"  with --balancer, and the summary adds each endpoint's attempts (the server figures are then not measured).")
	fs.StringVar(&c.remote, "remote", "", "server address (host:port, or "+etcdSynopsis+"; empty: a server in this process)")
	fs.StringVar(&c.impl, "impl", "lifenet", "client and server: lifenet or netrpc (Go's net/rpc; --remote must then be a server started with lifenet serve --impl netrpc)")
	fs.IntVar(&c.conns, "conns", 1, "connections")
	fs.IntVar(&c.inflight, "inflight", 1, "concurrent callers per connection")
	fs.Float64Var(&c.seconds, "seconds", 5, "measured window in seconds")
	fs.Float64Var(&c.warmup, "warmup", 1, "seconds of calls before the window")
	fs.StringVar(&c.call, "call", "noarg", "call shape: "+strings.Join(rpcbench.LoadShapes, "|"))
	fs.BoolVar(&c.direct, "direct", false, "call Server.Process in this process, no sockets (NewLife's direct benchmark)")
	fs.IntVar(&c.goroutines, "goroutines", runtime.GOMAXPROCS(0), "--direct: calling goroutines")
	fs.BoolVar(&c.json, "json", false, "print only the SUMMARY line")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write this process's CPU profile here")
	fs.StringVar(&c.recvMode, "recvmode", "default", "lifenet client: default (rpc.ClientConfig's: on plain TCP the waiting callers read their replies), event (a receive goroutine per connection) or sync (waiting callers take turns reading, over any socket)")
	fs.StringVar(&c.balancer, "balancer", "round-robin", "--remote etcd://…: how calls are spread: "+strings.Join(balancerNames(), ", "))
	fs.DurationVar(&c.stagger, "stagger", 20*time.Millisecond, "--balancer race: the wait for an answer before each further attempt")
	fs.DurationVar(&c.timeout, "timeout", 0, "lifenet client: each call's timeout (ClientConfig.Timeout; 0: its default, 15 s)")
	fs.IntVar(&c.attempts, "attempts", 3, "--remote etcd://…: attempts per call; a retry goes only to calls that were never sent")
	if code, done := fs.Parse(args, stdout, stderr); done {
		return code
	}
	viaEtcd := isEtcd(c.remote)
	set := fs.Set()
	_, knownMode := recvModes[c.recvMode]
	err := errors.Join(
		cliflag.Check(c.impl == "lifenet" || c.impl == "netrpc", "--impl %q: want lifenet or netrpc", c.impl),
		cliflag.Check(slices.Contains(rpcbench.LoadShapes, c.call), "--call %q: want one of %s", c.call, strings.Join(rpcbench.LoadShapes, ", ")),
		cliflag.Between("conns", c.conns, 1, maxConns),
		cliflag.Between("inflight", c.inflight, 1, maxCallers/max(c.conns, 1)),
		cliflag.Between("seconds", c.seconds, 0.1, maxSeconds),
		cliflag.Between("warmup", c.warmup, 0, maxSeconds),
		cliflag.Between("goroutines", c.goroutines, 1, maxCallers),
		cliflag.Between("timeout", c.timeout, 0, 10*time.Minute),
		cliflag.Check(!c.direct || c.impl == "lifenet", "--direct measures lifenet's Server.Process only"),
		cliflag.Check(c.impl != "netrpc" || c.remote != "", "--impl netrpc needs --remote (start lifenet serve --impl netrpc)"),
		checkRemote(c.remote, c.impl, viaEtcd),
		cliflag.Check(knownMode, "--recvmode %q: want default, event or sync", c.recvMode),
		checkEtcdLoad(c, viaEtcd, set),
	)
	if err != nil {
		return cliflag.UsageError(stderr, "rpcload", err)
	}
	stop, err := cpustat.StartProfile(c.cpuProfile)
	if err != nil {
		return cliflag.UsageError(stderr, "rpcload", err)
	}
	stderr = &lockedWriter{w: stderr} // progress and the cluster client's log lines
	s, err := runLoad(ctx, c, stderr)
	stop()
	switch {
	case errors.Is(err, rpc.ErrAddress):
		return cliflag.UsageError(stderr, "rpcload", fmt.Errorf("--remote: %w", err))
	case err != nil && ctx.Err() != nil:
		fmt.Fprintf(stderr, "lifenet rpcload: interrupted before the window began (%v)\n", err)
		return cliflag.ExitFail
	case err != nil:
		fmt.Fprintf(stderr, "lifenet rpcload: %v\n", err)
		return cliflag.ExitFail
	}
	writeLoadSummary(stdout, s, !c.json)
	if s.Interrupted {
		fmt.Fprintf(stderr, "lifenet rpcload: interrupted after %.2f s of the %g s window: the figures are of that time\n", s.Elapsed, c.seconds)
		return cliflag.ExitFail
	}
	if s.Calls == 0 {
		first := s.FirstError
		if first == "" { // no call of the window failed either: they all still waited at its end
			first = fmt.Sprintf("none: no call started in the window was answered or failed by %.1f s after its end (a server that stopped answering?)", loadGrace.Seconds())
		}
		fmt.Fprintf(stderr, "lifenet rpcload: no call completed (first error: %s)\n", first)
		return cliflag.ExitFail
	}
	return cliflag.ExitOK
}

// checkRemote checks --remote, a server address list as rpc.Dial takes
// it (net/rpc: one tcp address), or an etcd address (checkEtcdLoad's).
func checkRemote(remote, impl string, viaEtcd bool) error {
	if remote == "" || viaEtcd {
		return nil
	}
	if impl == "netrpc" && strings.Contains(remote, ",") {
		return fmt.Errorf("--remote %q: --impl netrpc takes one address", remote)
	}
	return checkServers("--remote", remote, impl == "netrpc")
}

func runLoad(ctx context.Context, c loadConfig, progress io.Writer) (loadSummary, error) {
	s := loadSummary{Summary: rpcbench.Summary{Impl: c.impl, Call: c.call, Direct: c.direct, Conns: c.conns, Inflight: c.inflight, ServerAlloc: -1, ServerCPU: -1}}
	var t *rpcbench.Target
	var counts *countingBalancer
	var err error
	switch {
	case c.direct:
		s.Conns, s.Inflight = 0, c.goroutines
		t, err = directTarget(c)
	case c.impl == "netrpc":
		t, err = netrpcTarget(ctx, c)
	case isEtcd(c.remote):
		s.Balancer = c.balancer
		t, counts, err = etcdTarget(ctx, c, progress)
	default:
		t, err = lifenetTarget(ctx, c)
	}
	if err != nil {
		return s, err
	}
	closeOnce := sync.OnceFunc(t.Close)
	defer closeOnce()
	win := rpcbench.Window{Warmup: c.warmup, Seconds: c.seconds, Remote: c.remote != "", Label: "rpcload"}
	// The window Measure is about to time (it reads the clock a moment
	// later), and the end of the run: the calls still out at the window's
	// end get loadGrace to finish, then their context ends (net/rpc's
	// calls, which take none, end with their connections).
	from := time.Now().Add(time.Duration(c.warmup * float64(time.Second)))
	until := from.Add(time.Duration(c.seconds * float64(time.Second)))
	if counts != nil {
		counts.window(from, until)
	}
	mctx, cancel := context.WithDeadline(ctx, until.Add(loadGrace))
	defer cancel()
	if c.impl == "netrpc" {
		defer context.AfterFunc(mctx, closeOnce)()
	}
	s.Summary = rpcbench.Measure(mctx, win, t, s.Summary, progress)
	if counts != nil {
		s.Endpoints = counts.snapshot()
	}
	return s, nil
}

func lifenetTarget(ctx context.Context, c loadConfig) (*rpcbench.Target, error) {
	addr, stopServer, err := localServer(ctx, c.remote)
	if err != nil {
		return nil, err
	}
	var clients []*rpc.Client
	t := &rpcbench.Target{Close: func() {
		for _, cl := range clients {
			cl.Close()
		}
		stopServer()
	}}
	sh := rpcbench.ShapeOf(c.call)
	for range c.conns {
		cfg := rpc.ClientConfig{Timeout: c.timeout}
		cfg.Transport.Mode = recvModes[c.recvMode]
		cl, err := rpc.Dial(ctx, addr, cfg)
		if err != nil {
			t.Close()
			return nil, err
		}
		clients = append(clients, cl)
		if !overHTTP(addr) {
			if err := probe(ctx, cl, silenceLimit, time.Now()); err != nil {
				t.Close()
				return nil, fmt.Errorf("%s: %w", addr, err)
			}
		}
		for range c.inflight {
			t.Callers = append(t.Callers, rpcbench.LifenetCaller(cl, sh))
		}
	}
	t.Stats = func(ctx context.Context) (rpcbench.ProcStats, bool) {
		ps, err := rpc.Call[rpcbench.ProcStats](ctx, clients[0], "Bench/ServerStats", nil)
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
		err = rpcbench.RegisterBench(srv, true)
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

func netrpcTarget(ctx context.Context, c loadConfig) (*rpcbench.Target, error) {
	var clients []*netrpc.Client
	t := &rpcbench.Target{Close: func() {
		for _, cl := range clients {
			cl.Close()
		}
	}}
	sh := rpcbench.ShapeOf(c.call)
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
			t.Callers = append(t.Callers, rpcbench.NetRPCCaller(cl, sh))
		}
	}
	t.Stats = func(context.Context) (rpcbench.ProcStats, bool) {
		var ps rpcbench.ProcStats
		return ps, clients[0].Call("Bench.ServerStats", struct{}{}, &ps) == nil
	}
	return t, nil
}

func directTarget(c loadConfig) (*rpcbench.Target, error) {
	srv, err := rpc.NewServer(rpc.Config{})
	if err == nil {
		err = rpcbench.RegisterBench(srv, true)
	}
	if err != nil {
		return nil, err
	}
	sh := rpcbench.ShapeOf(c.call)
	body, err := rpc.AppendRequest(nil, sh.Action, sh.Args())
	if err != nil {
		return nil, err
	}
	t := &rpcbench.Target{Close: func() { srv.Close() }, Stats: func(context.Context) (rpcbench.ProcStats, bool) { return rpcbench.ProcStats{}, false }}
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

// recvModes are --recvmode's values and the client modes they name. The
// zero mode (ReceiveEvent) is rpc's default, which reads on the callers'
// goroutines where it can; ReceivePull keeps a receive goroutine on every
// connection.
var recvModes = map[string]transport.ReceiveMode{
	"default": transport.ReceiveEvent,
	"event":   transport.ReceivePull,
	"sync":    transport.ReceiveSync,
}
