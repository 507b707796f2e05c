package loadtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lifenet/lifenet/internal/cpustat"
)

// Main runs `lifenet load` with args and returns the process exit code:
// 0 on success, 2 for bad flags, 1 when the run fails. Errors are one line
// on stderr.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		Usage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "lifenet load: %v\n", err)
		return 2
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
		return 2
	}
	defer stop()
	if err := run1(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "lifenet load: %v\n", err)
		return 1
	}
	return 0
}

func run1(ctx context.Context, cfg Config, out io.Writer) error {
	if cfg.Server {
		return RunServer(ctx, cfg, out)
	}
	addr := cfg.Remote
	if addr == "" { // both sides in this process
		srv, err := startServer(&cfg, cfg.listenAddr(0))
		if err != nil {
			return err
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
		return err
	}
	WriteSummary(out, s, !cfg.JSON)
	return nil
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
