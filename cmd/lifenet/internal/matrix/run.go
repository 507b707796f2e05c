package matrix

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/loadtest"
	"github.com/lifenet/lifenet/internal/rpcbench"
)

// Options configure a matrix run.
type Options struct {
	Exe         string  // the lifenet binary to run (os.Executable)
	Out         string  // output directory
	Seconds     float64 // measurement window per run
	Warmup      float64
	IdleExit    float64 // server: idle seconds before STEADY
	ClientProcs int     // client processes per scenario (their rates add up)
	Rounds      int     // lifenet/raw pairs per scenario (medians are reported)
	Pin         bool    // pin the server to CPU 0 and clients to CPU 1 (taskset)
	Progress    io.Writer
	BasePort    int
	Env         *Environment // gathered before the runs (nil: when the report is made)
	Args        []string     // the matrix's command-line arguments, for the report's command lines (nil: none recorded)
}

// Result is one scenario run with one implementation.
type Result struct {
	Scenario
	Impl   string            `json:"impl"`
	Round  int               `json:"round"`
	Server *loadtest.Steady  `json:"server,omitempty"`
	Client *loadtest.Summary `json:"client,omitempty"`
	RPC    *rpcbench.Summary `json:"rpc,omitempty"` // RPC rows: rpcload's summary (server figures included)
	Error  string            `json:"error,omitempty"`
}

// Filter keeps the scenarios whose name matches only (all if empty).
func Filter(list []Scenario, only string) ([]Scenario, error) {
	if only == "" {
		return list, nil
	}
	re, err := regexp.Compile(only)
	if err != nil {
		return nil, fmt.Errorf("--only: %w", err)
	}
	var out []Scenario
	for _, s := range list {
		if re.MatchString(s.Name) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--only %q matches no scenario", only)
	}
	return out, nil
}

// Run runs every scenario opts.Rounds times with lifenet and with its
// baseline (raw std net; net/rpc for the RPC rows; none for the direct
// path), and returns the results in order. The two runs of a round are
// back to back and take turns going first, so drift in the machine's load
// favours neither. A failed run is recorded in its Result and the matrix
// goes on. When ctx ends, Run returns the runs that finished before it
// (the one it cut short is left out).
func Run(ctx context.Context, opts Options, list []Scenario) []Result {
	var results []Result
	rounds := max(opts.Rounds, 1)
	total := 0
	for _, sc := range list {
		total += rounds * len(sc.impls())
	}
	start := time.Now()
	port := opts.BasePort
	for _, sc := range list {
		for round := 1; round <= rounds; round++ {
			order := sc.impls()
			if round%2 == 0 && len(order) == 2 {
				order[0], order[1] = order[1], order[0]
			}
			for _, impl := range order {
				label := sc.Name + " " + impl
				if rounds > 1 {
					label += fmt.Sprintf(" #%d", round)
				}
				opts.progress(len(results), total, start, label)
				port++
				r := Result{Scenario: sc, Impl: impl, Round: round}
				var err error
				if sc.isRPC() {
					r.RPC, err = runRPC(ctx, opts, sc, impl, &port)
				} else {
					r.Server, r.Client, err = runOne(ctx, opts, sc, impl, &port)
				}
				if ctx.Err() != nil {
					return results // this run was cut short: the report keeps the finished ones
				}
				if err != nil {
					r.Error = err.Error()
				}
				results = append(results, r)
			}
		}
	}
	opts.progress(total, total, start, "done")
	if opts.Progress != nil {
		fmt.Fprintln(opts.Progress)
	}
	return results
}

// progress draws "[####....] 3/16  scenario  ETA 1m20s" on one line.
func (o Options) progress(done, total int, start time.Time, what string) {
	if o.Progress == nil {
		return
	}
	const width = 24
	filled := width * done / max(total, 1)
	eta := "?"
	if done > 0 {
		left := time.Duration(float64(time.Since(start)) / float64(done) * float64(total-done))
		eta = left.Round(time.Second).String()
	}
	fmt.Fprintf(o.Progress, "\r\033[K[%s%s] %d/%d  %-32s ETA %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total, what, eta)
}

// runOne starts the server process, waits for READY (three ports at most),
// runs the client processes, waits for the server's STEADY, and parses both.
func runOne(ctx context.Context, opts Options, sc Scenario, impl string, port *int) (*loadtest.Steady, *loadtest.Summary, error) {
	srv, lines, logf, serveP, err := startOnFreePort(ctx, opts, sc, impl, port, func(p int) []string {
		return append([]string{"load", "--server", "--impl", impl, "--port", strconv.Itoa(p),
			"--idle-exit", strconv.FormatFloat(opts.IdleExit, 'f', -1, 64),
			"--first-client", strconv.FormatFloat(firstClient(opts), 'f', -1, 64)}, sc.commonArgs()...)
	})
	if err != nil {
		return nil, nil, err
	}
	defer logf.Close()
	sum, cerr := runClients(ctx, opts, sc, impl, serveP)
	steady, serr := waitSteady(srv, lines, 30*time.Second)
	return steady, sum, errors.Join(cerr, serr)
}

// startOnFreePort starts a server process with args(port) and waits for
// its READY, trying the next port when one is taken (three ports at most).
func startOnFreePort(ctx context.Context, opts Options, sc Scenario, impl string, port *int, args func(int) []string) (*exec.Cmd, <-chan string, *os.File, int, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		p := *port
		srv, lines, logf, serr := startServer(ctx, opts, sc, impl, p, args(p))
		if serr == nil {
			return srv, lines, logf, p, nil
		}
		err = serr
		*port++
	}
	return nil, nil, nil, 0, err
}

// firstClient is how long a load server waits for its clients' first
// traffic (after their warm-up) before it gives up: shorter than
// waitSteady's bound, so that a run whose clients failed ends with the
// server's own "no client" error.
func firstClient(opts Options) float64 { return math.Ceil(opts.Warmup) + 20 }

func (o Options) command(ctx context.Context, cpu string, args ...string) *exec.Cmd {
	if o.Pin {
		return exec.CommandContext(ctx, "taskset", append([]string{"-c", cpu, o.Exe}, args...)...)
	}
	return exec.CommandContext(ctx, o.Exe, args...)
}

// startServer starts a server process with args and waits for the READY
// line it prints first.
func startServer(ctx context.Context, opts Options, sc Scenario, impl string, port int, args []string) (*exec.Cmd, <-chan string, *os.File, error) {
	cmd := opts.command(ctx, "0", args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	logf, err := os.Create(filepath.Join(opts.Out, fmt.Sprintf("%s.%s.server.log", sc.Name, impl)))
	if err != nil {
		return nil, nil, nil, err
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, nil, err
	}
	lines := make(chan string, 1024) // one line a second: never fills in a run
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			lines <- sc.Text()
		}
	}()
	select {
	case l, ok := <-lines:
		if ok && strings.HasPrefix(l, "READY ") {
			return cmd, lines, logf, nil
		}
	case <-time.After(10 * time.Second):
	}
	cmd.Process.Kill()
	cmd.Wait()
	logf.Close()
	return nil, nil, nil, fmt.Errorf("server on port %d did not report READY", port)
}

// clientBound is how long a client process may run before it is killed:
// its warm-up and window, and a minute for the rest (a drain, a stuck
// send cut, the summary).
func clientBound(opts Options) time.Duration {
	return time.Duration((math.Ceil(opts.Warmup+opts.Seconds) + 60) * float64(time.Second))
}

// boundErr names a client process killed at clientBound.
func boundErr(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("did not end within its bound, killed: %w", err)
	}
	return err
}

// runClients runs opts.ClientProcs client processes and merges their
// summaries (rates add up; the first one's latencies are kept).
func runClients(ctx context.Context, opts Options, sc Scenario, impl string, port int) (*loadtest.Summary, error) {
	args := append([]string{"load", "--remote", fmt.Sprintf("127.0.0.1:%d", port), "--impl", impl, "--json",
		"--seconds", strconv.FormatFloat(opts.Seconds, 'f', -1, 64), "--warmup", strconv.FormatFloat(opts.Warmup, 'f', -1, 64)}, sc.clientArgs()...)
	procs := max(opts.ClientProcs, 1)
	type res struct {
		s   *loadtest.Summary
		err error
	}
	ch := make(chan res, procs)
	cctx, cancel := context.WithTimeout(ctx, clientBound(opts))
	defer cancel()
	for p := range procs {
		go func() {
			cmd := opts.command(cctx, "1", args...)
			out, err := cmd.Output()
			os.WriteFile(filepath.Join(opts.Out, fmt.Sprintf("%s.%s.client%d.log", sc.Name, impl, p)), out, 0o644)
			if err != nil {
				ch <- res{err: fmt.Errorf("client: %w", boundErr(cctx, err))}
				return
			}
			s, err := parseSummary(out)
			ch <- res{s, err}
		}()
	}
	var merged *loadtest.Summary
	var errs []error
	for range procs {
		r := <-ch
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		if merged == nil {
			merged = r.s
			continue
		}
		mergeSummary(merged, r.s)
	}
	return merged, errors.Join(errs...)
}

// mergeSummary adds s, another client process's summary of the same run,
// to m: rates and counts add up, the faults of every process are kept (the
// first error, every connection error, messages short, the loss over all
// the datagrams sent), and m's latencies stay the first process's.
func mergeSummary(m, s *loadtest.Summary) {
	if m.SentBytes+s.SentBytes > 0 {
		m.LossPct = (m.LossPct*float64(m.SentBytes) + s.LossPct*float64(s.SentBytes)) / float64(m.SentBytes+s.SentBytes)
	}
	m.MsgsPerSec += s.MsgsPerSec
	m.MBps += s.MBps
	m.FramesPerSec += s.FramesPerSec
	m.SentBytes += s.SentBytes
	m.RecvBytes += s.RecvBytes
	m.LatencyCount += s.LatencyCount
	m.ConnErrors += s.ConnErrors
	m.Unanswered += s.Unanswered
	m.Interrupted = m.Interrupted || s.Interrupted
	m.Elapsed = max(m.Elapsed, s.Elapsed)
	m.DrainSeconds = max(m.DrainSeconds, s.DrainSeconds)
	if m.FirstError == "" {
		m.FirstError = s.FirstError
	}
	if m.Warning == "" {
		m.Warning = s.Warning
	}
	if s.IntegrityDiff != nil {
		d := *s.IntegrityDiff
		if m.IntegrityDiff != nil {
			d += *m.IntegrityDiff
		}
		m.IntegrityDiff = &d
	}
}

func parseSummary(out []byte) (*loadtest.Summary, error) {
	return parseSummaryLine[loadtest.Summary](out, "client")
}

// parseSummaryLine decodes the SUMMARY line a client printed.
func parseSummaryLine[T any](out []byte, who string) (*T, error) {
	for _, l := range strings.Split(string(out), "\n") {
		if js, ok := strings.CutPrefix(l, "SUMMARY: "); ok {
			var s T
			if err := json.Unmarshal([]byte(js), &s); err != nil {
				return nil, fmt.Errorf("%s SUMMARY: %w", who, err)
			}
			return &s, nil
		}
	}
	return nil, fmt.Errorf("%s printed no SUMMARY line", who)
}

// waitSteady reads the server's lines until STEADY-JSON and the process
// exits, killing it after timeout.
func waitSteady(cmd *exec.Cmd, lines <-chan string, timeout time.Duration) (*loadtest.Steady, error) {
	deadline := time.After(timeout)
	var steady *loadtest.Steady
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				err := cmd.Wait()
				if steady == nil {
					return nil, errors.Join(errors.New("server printed no STEADY line"), err)
				}
				return steady, err
			}
			if js, ok := strings.CutPrefix(l, "STEADY-JSON "); ok {
				var s loadtest.Steady
				if err := json.Unmarshal([]byte(js), &s); err == nil {
					steady = &s
				}
			}
		case <-deadline:
			cmd.Process.Kill()
			cmd.Wait()
			return steady, errors.New("server did not exit in time (killed)")
		}
	}
}

// runRPC runs an RPC row: `lifenet serve` (none for the direct path),
// waits for READY (three ports at most), runs one `lifenet rpcload`
// process (its connections and callers are the concurrency; the server's
// CPU and bytes per call are its view of the one server) and stops the
// server.
func runRPC(ctx context.Context, opts Options, sc Scenario, impl string, port *int) (*rpcbench.Summary, error) {
	if sc.Direct {
		return runRPCLoad(ctx, opts, sc, impl, 0)
	}
	// The server exits by itself after this should the matrix die without
	// stopping it; rpcload gives up on a stuck call 20 s after its window.
	bound := math.Ceil(opts.Warmup+opts.Seconds) + 60
	srv, lines, logf, serveP, err := startOnFreePort(ctx, opts, sc, impl, port, func(p int) []string {
		return sc.serveArgs(impl, p, bound)
	})
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	sum, cerr := runRPCLoad(ctx, opts, sc, impl, serveP)
	return sum, errors.Join(cerr, stopServer(srv, lines, 10*time.Second))
}

// runRPCLoad runs one rpcload process and parses its SUMMARY line; a
// summary printed by a run that then failed (no call completed) is kept.
func runRPCLoad(ctx context.Context, opts Options, sc Scenario, impl string, port int) (*rpcbench.Summary, error) {
	ctx, cancel := context.WithTimeout(ctx, clientBound(opts))
	defer cancel()
	cmd := opts.command(ctx, "1", sc.rpcloadArgs(impl, port, opts.Seconds, opts.Warmup)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	os.WriteFile(filepath.Join(opts.Out, fmt.Sprintf("%s.%s.client0.log", sc.Name, impl)), []byte(string(out)+stderr.String()), 0o644)
	sum, perr := parseRPCSummary(out)
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return sum, fmt.Errorf("rpcload: %w", boundErr(ctx, err))
	}
	return sum, perr
}

func parseRPCSummary(out []byte) (*rpcbench.Summary, error) {
	return parseSummaryLine[rpcbench.Summary](out, "rpcload")
}

// stopServer interrupts a `lifenet serve` (it shuts down gracefully and
// exits 0), kills it if it has not exited within grace, and waits for it.
func stopServer(cmd *exec.Cmd, lines <-chan string, grace time.Duration) error {
	cmd.Process.Signal(os.Interrupt) // an error: it has exited already
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-lines:
			if ok {
				continue
			}
			if err := cmd.Wait(); err != nil {
				return fmt.Errorf("server: %w", err)
			}
			return nil
		case <-timer.C:
			cmd.Process.Kill()
			for range lines {
			}
			cmd.Wait()
			return errors.New("server did not stop on interrupt (killed)")
		}
	}
}
