package soak

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
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
	)
	fs := flag.NewFlagSet("lifenet soak", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Float64Var(&minutes, "minutes", 2, "length of the load phase in minutes")
	fs.Float64Var(&seconds, "seconds", 0, "length of the load phase in seconds, for short runs (instead of --minutes)")
	fs.IntVar(&o.Conns, "conns", DefaultConns, "client connections, half rpc.Client and half codec.Client")
	fs.DurationVar(&o.Interval, "interval", DefaultInterval, "pacing: each connection starts one operation per interval")
	fs.DurationVar(&o.SampleEvery, "sample", DefaultSampleEvery, "time between samples")
	fs.Uint64Var(&seed, "seed", 1, "seed of the operations' random choices")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fmt.Fprintln(stdout, "usage: lifenet soak [flags]   (exit 1 if a resource trends upward, does not return to baseline, or an error is not an injected fault)")
		fs.PrintDefaults()
		return 0
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err == nil {
		err = checkFlags(minutes, seconds, set, &o)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lifenet soak: %v\n", err)
		return 2
	}
	if set["seconds"] {
		o.Duration = time.Duration(seconds * float64(time.Second))
	} else {
		o.Duration = time.Duration(minutes * float64(time.Minute))
	}
	o.Seed = seed

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
	switch {
	case set["minutes"] && set["seconds"]:
		return errors.New("--minutes and --seconds exclude each other")
	case !(minutes > 0 && minutes <= maxMinutes):
		return fmt.Errorf("--minutes %g: want more than 0, at most %d", minutes, maxMinutes)
	case set["seconds"] && !(seconds > 0 && seconds <= maxMinutes*60):
		return fmt.Errorf("--seconds %g: want more than 0, at most %d", seconds, maxMinutes*60)
	case o.Conns < 2 || o.Conns > maxConns:
		return fmt.Errorf("--conns %d: want 2 to %d", o.Conns, maxConns)
	case o.Interval < time.Millisecond || o.Interval > time.Minute:
		return fmt.Errorf("--interval %v: want 1ms to 1m", o.Interval)
	case o.SampleEvery < 100*time.Millisecond || o.SampleEvery > 10*time.Minute:
		return fmt.Errorf("--sample %v: want 100ms to 10m", o.SampleEvery)
	}
	return nil
}
