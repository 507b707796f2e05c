// Command lifenet-etcd is a one-member etcd in one process
// (go.etcd.io/etcd/server/v3/embed), to try lifenet's registration and
// resolution on one machine: `lifenet serve --register etcd://…` and
// `lifenet call`/`lifenet rpcload` with etcd:// addresses. A deployment
// runs an etcd cluster of its own; the lifenet commands and the etcd
// module speak to any.
//
// It is a command and a module of its own, not a `lifenet` subcommand, so
// that the lifenet command compiles no etcd server (136 of the 595
// packages it took).
//
// Usage:
//
//	lifenet-etcd [--listen HOST:PORT] [--data DIR] [--verbose]
//
// It prints READY etcd://HOST:PORT once etcd serves and stops on SIGINT or
// SIGTERM. Exit codes: 0 stopped that way, 1 etcd failed, 2 a bad command
// line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// The exit codes, those of the lifenet command.
const (
	exitOK    = 0 // stopped by SIGINT or SIGTERM
	exitFail  = 1 // etcd failed
	exitUsage = 2 // a bad command line
)

// readyTimeout bounds the embedded etcd's start (its one member elects
// itself leader within about a second).
const readyTimeout = 30 * time.Second

const about = `usage: lifenet-etcd [flags]
  A one-member etcd in this process, to try lifenet serve --register and lifenet call/rpcload etcd://…
  on one machine (a deployment runs an etcd cluster of its own: the lifenet commands and the etcd module
  speak to any). It prints READY etcd://HOST:PORT once it serves and stops on SIGINT or SIGTERM. Its data
  is in a temporary dir removed on exit, unless --data names one (kept).
  Exit codes: 0 stopped by SIGINT or SIGTERM; 1 etcd failed; 2 a bad command line.`

func main() {
	// SIGINT and SIGTERM both stop etcd gracefully; a second signal is
	// not caught (the process ends at once).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs lifenet-etcd with args until ctx ends and returns its exit
// code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lifenet-etcd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	listen := fs.String("listen", "127.0.0.1:2379", "the client address (HOST:PORT, HOST an IP address; port 0 picks a free one)")
	data := fs.String("data", "", "the data dir, created if need be and kept on exit (empty: a temporary dir, removed on exit)")
	verbose := fs.Bool("verbose", false, "etcd's own log at info level on stderr (without: errors only)")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, about)
		fmt.Fprintln(stdout, "\nflags:")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return exitOK
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err == nil {
		err = checkListen(*listen)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lifenet-etcd: %v\n", err)
		return exitUsage
	}
	if err := serve(ctx, *listen, *data, *verbose, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "lifenet-etcd: %v\n", err)
		return exitFail
	}
	return exitOK
}

// checkListen checks --listen: an IP address and a port from 0 to 65535.
func checkListen(listen string) error {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT", listen)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("--listen %q: want HOST:PORT, PORT between 0 and 65535", listen)
	}
	if net.ParseIP(host) == nil {
		return fmt.Errorf("--listen %q: HOST must be an IP address", listen)
	}
	return nil
}

// serve serves etcd on listen until ctx ends. Its data is in data, or in
// a temporary dir removed on return when data is "".
func serve(ctx context.Context, listen, data string, verbose bool, stdout, stderr io.Writer) (err error) {
	dir, kept := data, data != ""
	if kept {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	} else {
		if dir, err = os.MkdirTemp("", "lifenet-etcd-"); err != nil {
			return err
		}
		defer func() {
			if rerr := os.RemoveAll(dir); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}()
	}
	level := zap.NewAtomicLevelAt(zapcore.ErrorLevel)
	if verbose {
		level.SetLevel(zapcore.InfoLevel)
	}
	e, err := start(listen, dir, level, stderr)
	if err != nil {
		return err
	}
	defer func() {
		// etcd logs its closed listeners as errors: not news at a stop.
		level.SetLevel(max(level.Level(), zapcore.DPanicLevel))
		e.Close()
	}()
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return fmt.Errorf("etcd failed while starting: %w", err)
	case <-ctx.Done():
		return nil
	case <-t.C:
		return fmt.Errorf("etcd not ready after %v", readyTimeout)
	}
	where := "data in " + dir + ", removed on exit"
	if kept {
		where = "data in " + dir
	}
	fmt.Fprintf(stdout, "READY etcd://%s (a one-member etcd; %s)\n", e.Clients[0].Addr(), where)
	select {
	case <-ctx.Done():
	case err := <-e.Err():
		return fmt.Errorf("etcd failed: %w", err)
	}
	fmt.Fprintln(stderr, "lifenet-etcd: stopping")
	return nil
}

// start starts a one-member etcd serving clients on listen, with its data
// in dir. Its peer address is a free loopback port: a member alone has no
// peer to talk to.
func start(listen, dir string, level zap.AtomicLevel, stderr io.Writer) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "lifenet"
	cfg.Dir = dir
	client := url.URL{Scheme: "http", Host: listen}
	advertise := client
	if host, port, _ := net.SplitHostPort(listen); net.ParseIP(host).IsUnspecified() {
		advertise.Host = net.JoinHostPort("127.0.0.1", port)
	}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{advertise}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(zapcore.AddSync(stderr)), level)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(core))
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd on %s: %w", listen, err)
	}
	return e, nil
}
