package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
	"github.com/lifenet/lifenet/internal/cpustat"
)

// ErrInterrupted is the error of a run that ctx ended (SIGINT, SIGTERM)
// before it finished; what it measured until then has been printed.
var ErrInterrupted = errors.New("interrupted")

// Main runs `lifenet load` with args and returns the process exit code:
// 0 on success, 2 for bad flags, 1 when the run fails or is interrupted
// (its result, of the time that ran, is printed and says so). Errors are
// one line on stderr; so is the warning of a UDP run that lost more than
// 5 % of its datagrams (it still exits 0).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		Usage(stdout)
		return cliflag.ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "lifenet load: %v\n", err)
		return cliflag.ExitUsage
	}
	if !cfg.Server && !cfg.JSON {
		cfg.progressW = stderr // a line a second: redrawn in place on a terminal
		if f, ok := stderr.(*os.File); ok && isTerminal(f) {
			cfg.progressTTY = true
		}
	}
	stop, err := cpustat.StartProfile(cfg.CPUProfile)
	if err != nil {
		fmt.Fprintf(stderr, "lifenet load: %v\n", err)
		return cliflag.ExitUsage
	}
	defer stop()
	s, err := run1(ctx, cfg, stdout)
	if s != nil && s.Warning != "" {
		fmt.Fprintf(stderr, "lifenet load: WARNING: %s\n", s.Warning)
	}
	switch {
	case s != nil && s.Interrupted:
		fmt.Fprintf(stderr, "lifenet load: interrupted after %.2f s of the %g s window: the figures are of that time\n", s.Elapsed, cfg.Seconds)
		return cliflag.ExitFail
	case err != nil && ctx.Err() != nil && !errors.Is(err, ErrInterrupted):
		fmt.Fprintf(stderr, "lifenet load: interrupted before the window began (%v)\n", err)
		return cliflag.ExitFail
	case err != nil:
		fmt.Fprintf(stderr, "lifenet load: %v\n", err)
		return cliflag.ExitFail
	}
	return cliflag.ExitOK
}

// run1 runs the server or the client; the client's summary, when it ran,
// is returned beside the error.
func run1(ctx context.Context, cfg Config, out io.Writer) (*Summary, error) {
	if cfg.Server {
		return nil, RunServer(ctx, cfg, out)
	}
	addr := cfg.Remote
	if addr == "" { // both sides in this process
		srv, err := startServer(&cfg, cfg.listenAddr(0))
		if err != nil {
			return nil, err
		}
		defer srv.close()
		addr = dialAddr(srv.addr)
	}
	if !cfg.JSON {
		impl := cfg.Impl
		if cfg.rawClient() && impl != "raw" {
			impl += " (raw client)"
		}
		fmt.Fprintf(out, "=== lifenet load: %s %s, %d clients × %d B, recv %s, impl %s, warmup %gs, window %gs ===\n",
			cfg.protocol(), cfg.modeName(), cfg.Clients, cfg.Size, cfg.RecvMode, impl, cfg.Warmup, cfg.Seconds)
	}
	s, err := RunClient(ctx, cfg, addr, out)
	if err != nil {
		return nil, err
	}
	s.InProcess = cfg.Remote == ""
	WriteSummary(out, s, !cfg.JSON)
	return &s, nil
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
