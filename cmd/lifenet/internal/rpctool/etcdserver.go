package rpctool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdReadyTimeout bounds the embedded etcd's start (its one member
// elects itself leader within about a second).
const etcdReadyTimeout = 30 * time.Second

// Etcd runs `lifenet etcd`: a one-member etcd embedded in the process
// (go.etcd.io/etcd/server/v3/embed), for trying lifenet's registration and
// resolution on one machine. It prints READY and its address once etcd
// serves, runs until ctx ends (SIGINT or SIGTERM), then stops etcd and
// removes its data dir if it made one. 0 when it stopped that way, 1 when
// etcd failed, 2 for a bad flag.
func Etcd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cliflag.New("etcd", "", "  A one-member etcd in this process, to try lifenet serve --register and call/rpcload etcd://… on one\n"+
		"  machine (a deployment runs an etcd cluster of its own: the lifenet commands and the etcd module speak to\n"+
		"  any). It prints READY etcd://HOST:PORT once it serves and stops on SIGINT or SIGTERM. Its data is in a\n"+
		"  temporary dir removed on exit, unless --data names one (kept).")
	listen := fs.String("listen", "127.0.0.1:2379", "the client address (HOST:PORT; port 0 picks a free one)")
	data := fs.String("data", "", "the data dir, created if need be and kept on exit (empty: a temporary dir, removed on exit)")
	verbose := fs.Bool("verbose", false, "etcd's own log at info level on stderr (without: errors only)")
	if code, done := fs.Parse(args, stdout, stderr); done {
		return code
	}
	host, port, err := net.SplitHostPort(*listen)
	if err == nil {
		p, perr := strconv.Atoi(port)
		err = errors.Join(
			cliflag.Check(perr == nil && p >= 0 && p <= 65535, "--listen %q: want HOST:PORT, PORT between 0 and 65535", *listen),
			cliflag.Check(net.ParseIP(host) != nil, "--listen %q: HOST must be an IP address", *listen),
		)
	} else {
		err = fmt.Errorf("--listen %q: want HOST:PORT", *listen)
	}
	if err != nil {
		return cliflag.UsageError(stderr, "etcd", err)
	}
	if err := runEtcd(ctx, *listen, *data, *verbose, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "lifenet etcd: %v\n", err)
		return cliflag.ExitFail
	}
	return cliflag.ExitOK
}

// runEtcd serves etcd on listen until ctx ends.
func runEtcd(ctx context.Context, listen, data string, verbose bool, stdout, stderr io.Writer) (err error) {
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
	e, err := startEmbeddedEtcd(listen, dir, level, stderr)
	if err != nil {
		return err
	}
	defer func() {
		// etcd logs its closed listeners as errors: not news at a stop.
		level.SetLevel(max(level.Level(), zapcore.DPanicLevel))
		e.Close()
	}()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return fmt.Errorf("etcd failed while starting: %w", err)
	case <-ctx.Done():
		return nil
	case <-time.After(etcdReadyTimeout):
		return fmt.Errorf("etcd not ready after %v", etcdReadyTimeout)
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
	fmt.Fprintln(stderr, "lifenet etcd: stopping")
	return nil
}

// startEmbeddedEtcd starts a one-member etcd serving clients on listen,
// with its data in dir. Its peer address is a free loopback port: a
// member alone has no peer to talk to.
func startEmbeddedEtcd(listen, dir string, level zap.AtomicLevel, stderr io.Writer) (*embed.Etcd, error) {
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
