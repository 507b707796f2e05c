package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
)

// Limits on the flags, so that a typo cannot start a runaway run.
const (
	maxMinutes = 24 * 60
	maxConns   = 4096
)

// Main runs `lifenet soak`: exit 0 when the run passed, 1 when it found a
// leak, a trend or an unexplained error (one line each on stderr), 2 for a
// bad flag.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var (
		o       Options
		minutes float64
		seconds float64
		seed    uint64
		verbose bool
	)
	fs := cliflag.New("soak", "", "  A leak soak of an rpc and a codec server under churn and injected faults: exit 1 if a resource\n"+
		"  trends upward, does not return to baseline, or an error is not an injected fault, or when interrupted.")
	fs.Float64Var(&minutes, "minutes", 2, "length of the load phase in minutes")
	fs.Float64Var(&seconds, "seconds", 0, "length of the load phase in seconds, for short runs (instead of --minutes)")
	fs.IntVar(&o.Conns, "conns", DefaultConns, "client connections, half rpc.Client and half codec.Client")
	fs.DurationVar(&o.Interval, "interval", DefaultInterval, "pacing: each connection starts one operation per interval")
	fs.DurationVar(&o.SampleEvery, "sample", DefaultSampleEvery, "time between samples")
	fs.Uint64Var(&seed, "seed", 1, "seed of the operations' random choices")
	fs.BoolVar(&verbose, "verbose", false, "write the servers' log lines (a Warn line per injected fault's close) to stderr")
	if code, done := fs.Parse(args, stdout, stderr); done {
		return code
	}
	set := fs.Set()
	if err := checkFlags(minutes, seconds, set, &o); err != nil {
		return cliflag.UsageError(stderr, "soak", err)
	}
	if set["seconds"] {
		o.Duration = time.Duration(seconds * float64(time.Second))
	} else {
		o.Duration = time.Duration(minutes * float64(time.Minute))
	}
	o.Seed = seed
	if verbose {
		o.ServerLog = slog.New(slog.NewTextHandler(stderr, nil))
	}

	r, err := Run(ctx, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "lifenet soak: %v\n", err)
		return 1
	}
	WriteSummary(stdout, r)
	for _, f := range r.Failures {
		fmt.Fprintf(stderr, "lifenet soak: FAIL: %s\n", f)
	}
	if r.Interrupted {
		fmt.Fprintf(stderr, "lifenet soak: interrupted after %.0fs\n", r.Elapsed.Seconds())
	}
	if !r.Passed() {
		return 1
	}
	return 0
}

func checkFlags(minutes, seconds float64, set map[string]bool, o *Options) error {
	if set["minutes"] && set["seconds"] {
		return errors.New("--minutes and --seconds exclude each other")
	}
	var secondsOK error
	if set["seconds"] {
		secondsOK = cliflag.Between("seconds", seconds, 1, maxMinutes*60)
	}
	return cliflag.First(
		cliflag.Between("minutes", minutes, 0.1, maxMinutes),
		secondsOK,
		cliflag.Between("conns", o.Conns, 2, maxConns),
		cliflag.Between("interval", o.Interval, time.Millisecond, time.Minute),
		cliflag.Between("sample", o.SampleEvery, 100*time.Millisecond, 10*time.Minute),
	)
}
