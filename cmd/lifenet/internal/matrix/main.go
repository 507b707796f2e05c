package matrix

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/cliflag"
)

// Main runs `lifenet matrix` and returns the exit code: 0 when the report
// was written (even if some runs failed: they are listed in it), 2 for bad
// flags, 1 when the matrix could not run or was interrupted (Ctrl-C: the
// report is written from the runs that finished and says it is partial).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cliflag.New("matrix", "", "  Runs each scenario as separate server and client processes of this binary, lifenet beside its baseline\n"+
		"  (raw std net; net/rpc for the rpc-* rows), and writes results.md, results.json and results.html.\n"+
		"  Interrupted (SIGINT or SIGTERM), it writes a partial report of the runs that finished and exits 1.")
	quick := fs.Bool("quick", false, "short windows, 3 pairs each of a short scenario list, one or two per kind (about 3 minutes)")
	only := fs.String("only", "", "run only scenarios whose name matches this regexp")
	out := fs.String("out", "", "output directory (default results/<timestamp>)")
	procs := fs.Int("clientprocs", 1, "client processes per scenario, between 1 and 16")
	pin := fs.Bool("pin", false, "pin the server to CPU 0 and the clients to CPU 1 (taskset)")
	rounds := fs.Int("rounds", 1, "lifenet/baseline pairs per scenario, between 1 and 25 (raw std net; net/rpc for the rpc-* rows; default 1, with --quick 3); the report gives medians and the spread")
	from := fs.String("from", "", "run nothing: write the md/json/html reports again from DIR/results.json")
	// The window's and warm-up's defaults depend on --quick: the flags'
	// own defaults are 0 and only an explicit value counts.
	seconds := fs.Float64("seconds", 0, "measurement window per run in seconds, between 0.1 and 600 (default 10, with --quick 2)")
	warmup := fs.Float64("warmup", 0, "warm-up before each window in seconds, between 0 and 60 (default 2, with --quick 0.5)")
	if code, done := fs.Parse(args, stdout, stderr); done {
		return code
	}
	set := fs.Set()
	ifSet := func(name string, err error) error {
		if set[name] {
			return err
		}
		return nil
	}
	err := cliflag.First(
		cliflag.Between("clientprocs", *procs, 1, 16),
		cliflag.Between("rounds", *rounds, 1, 25),
		ifSet("seconds", cliflag.Between("seconds", *seconds, 0.1, 600)),
		ifSet("warmup", cliflag.Between("warmup", *warmup, 0, 60)),
		cliflag.Check(!set["from"] || *from != "", "--from wants a directory holding results.json"),
		cliflag.Check(*from == "" || !(set["quick"] || set["only"] || set["seconds"] || set["warmup"] || set["rounds"] || set["clientprocs"] || set["pin"] || set["out"]),
			"--from runs nothing: it takes no other flag"),
	)
	if err != nil {
		return cliflag.UsageError(stderr, "matrix", err)
	}
	if *from != "" {
		return rewrite(*from, stdout, stderr)
	}
	if *pin {
		if _, err := exec.LookPath("taskset"); err != nil {
			fmt.Fprintln(stderr, "lifenet matrix: --pin needs taskset (util-linux), which is not installed")
			return 2
		}
	}
	env := gatherEnvironment() // before the runs write into the work tree
	list := Full()
	opts := Options{Seconds: 10, Warmup: 2, IdleExit: 3, ClientProcs: *procs, Rounds: *rounds, Pin: *pin, BasePort: 7900, Env: &env, Args: args}
	if *quick {
		list, opts.Seconds, opts.Warmup, opts.IdleExit = Quick(), 2, 0.5, 1
		if !set["rounds"] {
			opts.Rounds = QuickRounds
		}
	}
	if set["seconds"] { // shorter windows: shorter idle wait before STEADY too
		opts.Seconds, opts.IdleExit = *seconds, min(3, max(1, *seconds/3))
	}
	if set["warmup"] {
		opts.Warmup = *warmup
	}
	list, err = Filter(list, *only)
	if err != nil {
		fmt.Fprintf(stderr, "lifenet matrix: %v\n", err)
		return 2
	}
	if opts.Exe, err = os.Executable(); err != nil {
		fmt.Fprintf(stderr, "lifenet matrix: %v\n", err)
		return 1
	}
	opts.Out = *out
	if opts.Out == "" {
		opts.Out = filepath.Join("results", time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		fmt.Fprintf(stderr, "lifenet matrix: %v\n", err)
		return 1
	}
	if f, ok := stderr.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			opts.Progress = stderr
		}
	}
	if opts.Progress == nil {
		opts.Progress = lineProgress{stderr}
	}
	runs := 0
	for _, sc := range list {
		runs += len(sc.impls()) * opts.Rounds
	}
	if runs == 2*opts.Rounds*len(list) {
		fmt.Fprintf(stdout, "lifenet matrix: %d scenarios × 2 implementations × %d rounds, window %g s, into %s\n", len(list), opts.Rounds, opts.Seconds, opts.Out)
	} else { // the direct RPC path has no baseline
		fmt.Fprintf(stdout, "lifenet matrix: %d scenarios × lifenet and its baseline × %d rounds (%d runs), window %g s, into %s\n", len(list), opts.Rounds, runs, opts.Seconds, opts.Out)
	}
	results := Run(ctx, opts, list)
	rep := NewReport(opts, results)
	if ctx.Err() != nil {
		rep.Partial = fmt.Sprintf("interrupted after %d of %d runs", len(results), runs)
	}
	if err := Write(opts.Out, rep); err != nil {
		fmt.Fprintf(stderr, "lifenet matrix: %v\n", err)
		return 1
	}
	failed := 0
	for _, r := range results {
		if r.Error != "" {
			failed++
		}
	}
	if rep.Partial != "" {
		fmt.Fprintf(stdout, "\nlifenet matrix: %s; partial report: %s (results.md, results.json, results.html); %d of them failed\n",
			rep.Partial, opts.Out, failed)
		return 1
	}
	fmt.Fprintf(stdout, "report: %s (results.md, results.json, results.html); %d of %d runs failed\n",
		opts.Out, failed, len(results))
	if failed > 0 {
		return 1 // the report is written, and lists them; a script gating on the exit code sees them too
	}
	return 0
}

// rewrite renders the reports in dir again from its results.json.
func rewrite(dir string, stdout, stderr io.Writer) int {
	rep, err := Read(dir)
	if err == nil {
		err = Write(dir, rep)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lifenet matrix: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "report: %s (results.md, results.json, results.html) rewritten\n", dir)
	return 0
}

// lineProgress turns the progress bar's redraws into plain lines when the
// output is not a terminal.
type lineProgress struct{ w io.Writer }

func (l lineProgress) Write(p []byte) (int, error) {
	s := string(p)
	if i := lastIndexCR(s); i >= 0 {
		s = s[i+1:]
	}
	s = strings.TrimPrefix(s, "\033[K")
	if s == "" || s == "\n" {
		return len(p), nil
	}
	_, err := fmt.Fprintln(l.w, s)
	return len(p), err
}

func lastIndexCR(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\r' {
			return i
		}
	}
	return -1
}
