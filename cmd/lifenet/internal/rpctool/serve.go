package rpctool

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	netrpc "net/rpc"
	"strconv"
	"time"

	"github.com/lifenet/lifenet/internal/cpustat"
	"github.com/lifenet/lifenet/internal/rpcbench"
	"github.com/lifenet/lifenet/rpc"
)

type serveConfig struct {
	host       string
	port       int
	impl       string
	udp        bool
	serial     bool
	spawn      bool
	seconds    float64
	cpuProfile string
}

// Serve runs `lifenet serve`.
func Serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c serveConfig
	fs := newFlags("serve")
	fs.StringVar(&c.host, "host", "127.0.0.1", "address to listen on (0.0.0.0 or :: for all)")
	fs.IntVar(&c.port, "port", 5500, "port (0 picks a free one)")
	fs.StringVar(&c.impl, "impl", "lifenet", "server: lifenet or netrpc (Go's net/rpc, the baseline)")
	fs.BoolVar(&c.udp, "udp", true, "lifenet: also serve SRMP over UDP on the same port")
	fs.BoolVar(&c.serial, "serial", false, "lifenet: handle each connection's calls in order on its reading goroutine (NewLife Multiplex=false)")
	fs.BoolVar(&c.spawn, "spawn", false, "lifenet: run the benchmark actions on a goroutine per call (NewLife Multiplex) instead of inline on the reading goroutine")
	fs.Float64Var(&c.seconds, "seconds", 0, "exit after this many seconds (0: run until interrupted)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile here")
	if code, done := parse(fs, args, stdout, stderr); done {
		return code
	}
	err := errors.Join(
		check(c.impl == "lifenet" || c.impl == "netrpc", "--impl %q: want lifenet or netrpc", c.impl),
		check(c.port >= 0 && c.port <= 65535, "--port %d: want 0 to 65535", c.port),
		check(c.seconds >= 0 && c.seconds <= 86400, "--seconds %g: want 0 to 86400", c.seconds),
		check(net.ParseIP(c.host) != nil || c.host == "localhost", "--host %q: want an IP address", c.host),
	)
	if err != nil {
		return usageError(stderr, "serve", err)
	}
	if c.seconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(c.seconds*float64(time.Second)))
		defer cancel()
	}
	if stop, err := cpustat.StartProfile(c.cpuProfile); err != nil {
		return usageError(stderr, "serve", err)
	} else {
		defer stop()
	}
	addr := net.JoinHostPort(c.host, strconv.Itoa(c.port))
	if c.impl == "netrpc" {
		err = serveNetRPC(ctx, addr, stdout)
	} else {
		err = serveLifenet(ctx, c, addr, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lifenet serve: %v\n", err)
		return 1
	}
	return 0
}

func serveLifenet(ctx context.Context, c serveConfig, addr string, stdout io.Writer) error {
	cfg := rpc.Config{Serial: c.serial}
	srv, err := rpc.NewServer(cfg)
	if err != nil {
		return err
	}
	if err := rpcbench.RegisterBench(srv, !c.spawn); err != nil {
		return err
	}
	a, err := srv.Listen(ctx, "tcp", addr)
	if err != nil {
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
	fmt.Fprintf(stdout, "%s http://%s ws://%s\n", ready, hp, hp)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

func serveNetRPC(ctx context.Context, addr string, stdout io.Writer) error {
	srv := netrpc.NewServer()
	if err := srv.RegisterName("Bench", rpcbench.NetRPCBench{}); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "READY tcp://%s\n", ln.Addr())
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		conns = append(conns, c)
		go srv.ServeConn(c)
	}
}

// newFlags returns a flag set whose errors parse reports (in one line).
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("lifenet "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses args; done says the command should exit with code (help
// printed, or a flag error reported).
func parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fmt.Fprintf(stdout, "usage: %s [flags]\n", fs.Name())
		fs.PrintDefaults()
		return 0, true
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 2, true
	}
	return 0, false
}

func check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// usageError reports a bad flag value in one line and returns exit code 2.
func usageError(stderr io.Writer, cmd string, err error) int {
	var first error = err
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		first = j.Unwrap()[0]
	}
	fmt.Fprintf(stderr, "lifenet %s: %v\n", cmd, first)
	return 2
}
