package matrix

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/loadtest"
	"github.com/lifenet/lifenet/cmd/lifenet/internal/rpctool"
)

// The matrix re-executes its own binary as `lifenet load`; in tests that
// binary is the test binary, which plays the CLI when asked to.
func TestMain(m *testing.M) {
	if os.Getenv("LIFENET_TEST_AS_CLI") == "1" && len(os.Args) > 1 {
		// As cmd/lifenet: an interrupt cancels the command's context.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) int{
			"load": loadtest.Main, "serve": rpctool.Serve, "rpcload": rpctool.Load,
		}
		if run, ok := cmds[os.Args[1]]; ok {
			if os.Getenv("LIFENET_TEST_FAIL") == os.Args[1] { // a command that fails at once
				fmt.Fprintln(os.Stderr, "failing as asked")
				os.Exit(1)
			}
			code := run(ctx, os.Args[2:], os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		}
		stop()
	}
	os.Exit(m.Run())
}

func tinyRun(t *testing.T) (string, []Result) {
	t.Helper()
	t.Setenv("LIFENET_TEST_AS_CLI", "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := Options{Exe: exe, Out: dir, Seconds: 0.6, Warmup: 0, IdleExit: 0.5, ClientProcs: 1, BasePort: 17900}
	list := []Scenario{
		oneway("tcp", 1024, 2, ""),
		{Name: "tcp-1KB-rt", Mode: "roundtrip", Proto: "tcp", Size: 1024, Clients: 2, RecvMode: "sync"},
	}
	results := Run(context.Background(), opts, list)
	if err := Write(dir, NewReport(opts, results)); err != nil {
		t.Fatal(err)
	}
	return dir, results
}

func TestMatrixRunsAndReports(t *testing.T) {
	dir, results := tinyRun(t)
	if len(results) != 4 {
		t.Fatalf("%d results, want 4 (2 scenarios × lifenet, raw)", len(results))
	}
	for _, r := range results {
		if r.Error != "" || r.Server == nil || r.Client == nil || r.Client.MsgsPerSec <= 0 {
			t.Fatalf("%s/%s: %+v", r.Name, r.Impl, r)
		}
	}
	var rep Report
	js, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if err := json.Unmarshal(js, &rep); err != nil || len(rep.Results) != 4 {
		t.Fatalf("results.json: %v", err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "results.md"))
	for _, want := range []string{"## 1. Throughput", "| tcp-1KB |", "## 3. Round-trip", "| tcp-1KB-rt |", "×"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q", want)
		}
	}
	if rep.SchemaVersion != schemaVersion || len(rep.Ratios) != 2 || len(rep.Summary) == 0 || rep.Env == nil || rep.Env.Commit == "" {
		t.Errorf("results.json: schema %d, %d ratios, summary %v, environment %+v", rep.SchemaVersion, len(rep.Ratios), rep.Summary, rep.Env)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "results.html"))
	verdict, chart := strings.Index(string(page), "<h2>Verdict</h2>"), strings.Index(string(page), `<div class="chart">`)
	if strings.Count(string(page), `<div class="chart">`) != 3 || verdict < 0 || verdict > chart ||
		strings.Contains(string(page), "http://") && !strings.Contains(string(page), "http://www.w3.org/2000/svg") {
		t.Errorf("results.html: %d charts, verdict at %d, first chart at %d", strings.Count(string(page), `<div class="chart">`), verdict, chart)
	}
	chromiumRenders(t, filepath.Join(dir, "results.html"))
}

// chromiumRenders opens the page in headless Chromium, if the machine has
// it, and checks the charts' bars are in the rendered DOM.
func chromiumRenders(t *testing.T, page string) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Log("chromium not installed: skipping the browser check")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+page).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if strings.Count(string(out), `class="bar"`) < 4 {
		t.Fatalf("rendered page has %d bars", strings.Count(string(out), `class="bar"`))
	}
}

func TestFilterAndLists(t *testing.T) {
	if _, err := Filter(Full(), "["); err == nil {
		t.Error("bad regexp accepted")
	}
	if _, err := Filter(Full(), "nothing-matches"); err == nil {
		t.Error("empty selection accepted")
	}
	l, err := Filter(Full(), "^udp-.*-rt-")
	if err != nil || len(l) != 4 {
		t.Errorf("udp round trips: %d, %v", len(l), err)
	}
	if len(Full()) < 50 || len(Quick()) != 8 {
		t.Errorf("full %d, quick %d", len(Full()), len(Quick()))
	}
	// --quick: one or two scenarios of each kind but UDP round trips and
	// UDP codec rows, so that QuickRounds pairs of each fit in about three
	// minutes.
	kinds := map[string]int{}
	for _, s := range Quick() {
		kinds[groupName(s)]++
	}
	for _, k := range []string{"TCP one-way", "UDP one-way", "TCP echo pipeline", "TCP round trip", "codec echo, serial requests", "codec echo, windowed", rpcGroup} {
		if kinds[k] == 0 || kinds[k] > 2 {
			t.Errorf("quick has %d %s rows", kinds[k], k)
		}
	}
	seen := map[string]bool{}
	for _, s := range Full() {
		if seen[s.Name] {
			t.Errorf("duplicate scenario %s", s.Name)
		}
		seen[s.Name] = true
	}
}

// Over several rounds a scenario reports its median round and the median
// of the per-round ratios with their range; a failed round is left out.
func TestPairsTakeMedians(t *testing.T) {
	sc := oneway("tcp", 1024, 4, "")
	run := func(impl string, round int, pktps float64) Result {
		r := Result{Scenario: sc, Impl: impl, Round: round}
		if pktps > 0 {
			r.Server = &loadtest.Steady{PktPerSec: pktps}
		} else {
			r.Error = "failed"
		}
		return r
	}
	ps := pairs([]Result{
		run("lifenet", 1, 100), run("raw", 1, 100), // 1.0
		run("raw", 2, 100), run("lifenet", 2, 120), // 1.2
		run("lifenet", 3, 90), run("raw", 3, 100), // 0.9
		run("raw", 4, 50), run("lifenet", 4, 0), // failed: no ratio
	})
	if len(ps) != 1 {
		t.Fatalf("%d pairs", len(ps))
	}
	p := ps[0]
	if p.rounds != 3 || p.ratio != 1.0 || p.lo != 0.9 || p.hi != 1.2 {
		t.Fatalf("rounds %d ratio %v range %v–%v, want 3, 1.0, 0.9–1.2", p.rounds, p.ratio, p.lo, p.hi)
	}
	if p.lifenet.Round != 1 || p.raw.pktps() != 100 {
		t.Fatalf("median runs: lifenet round %d, raw %v pkt/s", p.lifenet.Round, p.raw.pktps())
	}
	if got := p.ratioText(); got != "1.00× (0.90–1.20, 3)" {
		t.Fatalf("ratio cell %q", got)
	}
	// The rates shown are the median pair's, not each side's median run:
	// here lifenet's median run is round 2's (100) and raw's round 1's
	// (100), a quotient of 1.0 no pair had; the median pair is round 3.
	p = pairs([]Result{
		run("lifenet", 1, 90), run("raw", 1, 100), // 0.90
		run("lifenet", 2, 100), run("raw", 2, 80), // 1.25
		run("lifenet", 3, 110), run("raw", 3, 105), // 1.05
	})[0]
	if p.ratio != 110.0/105 || p.lifenet.Round != 3 || p.raw.Round != 3 {
		t.Fatalf("ratio %v from lifenet round %d and raw round %d, want %v from round 3 for both", p.ratio, p.lifenet.Round, p.raw.Round, 110.0/105)
	}
}

func TestMainRejectsBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "0"}, "--rounds"}, {[]string{"--rounds", "26"}, "--rounds"},
		{[]string{"--clientprocs", "0"}, "--clientprocs"}, {[]string{"--clientprocs", "17"}, "--clientprocs"},
		{[]string{"--seconds", "0"}, "--seconds"}, {[]string{"--seconds", "-1"}, "--seconds"},
		{[]string{"--quick", "--seconds", "0"}, "--seconds"}, {[]string{"--seconds", "601"}, "--seconds"},
		{[]string{"--warmup", "-1"}, "--warmup"}, {[]string{"--warmup", "61"}, "--warmup"},
		{[]string{"--only", "["}, "--only"}, {[]string{"--only", "nothing-matches"}, "--only"},
		{[]string{"--from", ""}, "--from"}, {[]string{"--from", "x", "--quick"}, "--from"},
		{[]string{"--rounds", "x"}, "-rounds"}, {[]string{"--bogus"}, "-bogus"}, {[]string{"extra"}, "extra"},
	} {
		var stderr strings.Builder
		if code := Main(context.Background(), c.args, io.Discard, &stderr); code != 2 ||
			strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line naming %s", c.args, code, stderr.String(), c.want)
		}
	}
	var help strings.Builder
	if code := Main(context.Background(), []string{"-h"}, &help, io.Discard); code != 0 ||
		strings.Contains(help.String(), "(default -1)") || strings.Count(help.String(), "default 2") != 1 {
		t.Errorf("help: exit %d, %q: want each default once", code, help.String())
	}
}

// cancelOn cancels a context when the matrix's progress reaches a line
// containing mark.
type cancelOn struct {
	mark   string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.mark) {
		c.cancel()
	}
	return len(p), nil
}

// A matrix whose runs failed writes its report, listing them, and exits 1.
func TestMatrixWithFailedRunsExits1(t *testing.T) {
	t.Setenv("LIFENET_TEST_AS_CLI", "1")
	t.Setenv("LIFENET_TEST_FAIL", "load")
	dir := t.TempDir()
	name := oneway("tcp", 1024, 2, "").Name
	var stdout strings.Builder
	code := Main(context.Background(), []string{"--only", "^" + name + "$", "--seconds", "0.5", "--warmup", "0", "--out", dir}, &stdout, io.Discard)
	if code != 1 || !strings.Contains(stdout.String(), "2 of 2 runs failed") {
		t.Fatalf("exit %d, stdout %q; want 1 and both runs failed", code, stdout.String())
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "results.md")); !strings.Contains(string(md), "## Failed runs") {
		t.Errorf("results.md lists no failed runs")
	}
}

// An interrupted matrix writes its report from the runs that finished,
// says it is partial, and exits 1.
func TestInterruptedMatrixWritesPartialReport(t *testing.T) {
	t.Setenv("LIFENET_TEST_AS_CLI", "1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	name := oneway("tcp", 1024, 2, "").Name
	var stdout strings.Builder
	args := []string{"--only", "^" + name + "$", "--seconds", "0.5", "--warmup", "0", "--out", dir}
	code := Main(ctx, args, &stdout, cancelOn{"] 1/2", cancel})
	if code != 1 || !strings.Contains(stdout.String(), "interrupted after 1 of 2 runs; partial report") {
		t.Fatalf("exit %d, stdout %q", code, stdout.String())
	}
	rep, err := Read(dir)
	if err != nil || len(rep.Results) != 1 || rep.Results[0].Error != "" || rep.Partial == "" {
		t.Fatalf("results.json: %v, %+v", err, rep)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "results.md"))
	page, _ := os.ReadFile(filepath.Join(dir, "results.html"))
	if !strings.Contains(string(md), "**Partial report: interrupted after 1 of 2 runs.**") || !strings.Contains(string(page), "Partial report") {
		t.Errorf("the reports do not say they are partial:\n%s", md)
	}
}

// Completed runs that lost TCP echoes or connections are listed; UDP loss
// is not a fault, but more than 5 % of it is listed with its warning.
func TestFaultyRunsListed(t *testing.T) {
	short, none := int64(3), int64(0)
	rs := []Result{
		{Scenario: Scenario{Name: "tcp-short", Proto: "tcp"}, Impl: "lifenet", Round: 2, Client: &loadtest.Summary{IntegrityDiff: &short}},
		{Scenario: Scenario{Name: "tcp-ok", Proto: "tcp"}, Impl: "raw", Round: 1, Client: &loadtest.Summary{IntegrityDiff: &none}},
		{Scenario: Scenario{Name: "udp-loss", Proto: "udp"}, Impl: "lifenet", Round: 1, Client: &loadtest.Summary{IntegrityDiff: &short}},
		{Scenario: Scenario{Name: "tcp-err", Proto: "tcp"}, Impl: "raw", Round: 3, Client: &loadtest.Summary{ConnErrors: 1, FirstError: "receive: EOF"}},
		{Scenario: Scenario{Name: "tcp-quick", Proto: "tcp"}, Impl: "raw", Round: 1, Client: &loadtest.Summary{DrainSeconds: 0.2}},
		{Scenario: Scenario{Name: "udp-heavy", Proto: "udp"}, Impl: "raw", Round: 1, Client: &loadtest.Summary{LossPct: 40, Warning: "40 % lost"}},
		{Scenario: Scenario{Name: "tcp-stall", Proto: "tcp"}, Impl: "lifenet", Round: 1, Client: &loadtest.Summary{
			IntegrityDiff: &short, DrainSeconds: 15.2, ConnErrors: 1, FirstError: "drain: 3 bytes missing\nclient a\nserver b"}},
		// One-way: the client cannot see loss; the server's count shows it.
		// A UDP flood's loss is no fault (the throughput table shows it).
		{Scenario: Scenario{Name: "udp-1w-lossy", Proto: "udp", Mode: "oneway"}, Impl: "raw", Round: 1,
			Client: &loadtest.Summary{SentBytes: 1000}, Server: &loadtest.Steady{Received: 800}},
		{Scenario: Scenario{Name: "udp-1w-ok", Proto: "udp", Mode: "oneway"}, Impl: "raw", Round: 1,
			Client: &loadtest.Summary{SentBytes: 1000}, Server: &loadtest.Steady{Received: 970}},
		{Scenario: Scenario{Name: "tcp-1w-short", Proto: "tcp", Mode: "oneway"}, Impl: "lifenet", Round: 1,
			Client: &loadtest.Summary{SentBytes: 1000}, Server: &loadtest.Steady{Received: 999}},
		{Scenario: Scenario{Name: "tcp-1w-ok", Proto: "tcp", Mode: "oneway"}, Impl: "lifenet", Round: 1, // the priming counted too
			Client: &loadtest.Summary{SentBytes: 1000}, Server: &loadtest.Steady{Received: 1500}},
	}
	got := strings.Join(faultyRuns(rs), "\n")
	want := "- tcp-short (lifenet, round 2): 3 messages short\n- tcp-err (raw, round 3): 1 connections failed (first: receive: EOF)\n" +
		"- udp-heavy (raw, round 1): 40 % lost\n" +
		"- tcp-stall (lifenet, round 1): 3 messages short; 1 connections failed (first: drain: 3 bytes missing …); the last echoes took 15.2 s\n" +
		"- tcp-1w-short (lifenet, round 1): the server received 1 bytes fewer than the client sent (0.1 %)"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if a, b := arrivedText(&rs[7]), arrivedText(&rs[10]); a != "80 %" || b != "100 %" {
		t.Errorf("arrived: %q and %q, want 80 %% and 100 %% (the priming counted, capped)", a, b)
	}
	warm := Result{Scenario: Scenario{Name: "udp-1w", Proto: "udp", Mode: "oneway"}, Impl: "raw", Round: 1,
		Client: &loadtest.Summary{SentBytes: 1000}, Server: &loadtest.Steady{Received: 1500, WarmupBytes: 600}}
	if a := arrivedText(&warm); a != "90 %" {
		t.Errorf("arrived with 600 bytes of warm-up told apart: %q, want 90 %% (900 of the window's 1000)", a)
	}
}

// The summary groups scenarios by kind, in order of first appearance; a
// group of one scenario shows its ratio alone (no "0.92–0.92×" range),
// the "all" row says what it covers of the scenarios run, and scenarios
// without a ratio are left out of the groups but counted as run.
func TestSummaryGroups(t *testing.T) {
	serial := roundtrip("tcp", 32, 1, "sync")
	serial.Codec = "srmp"
	window := Scenario{Name: "w", Mode: "pipeline", Proto: "tcp", Codec: "srmp", Window: 255}
	ps := []pair{
		{sc: oneway("tcp", 1024, 4, ""), rounds: 3, ratio: 1.10, lo: 1.05, hi: 1.2},
		{sc: oneway("udp", 1024, 4, ""), rounds: 3, ratio: 0.92, lo: 0.8, hi: 1.1},
		{sc: oneway("tcp", 32, 4, ""), rounds: 3, ratio: 0.94, lo: 0.9, hi: 0.98},
		{sc: oneway("tcp", 64, 4, ""), rounds: 0}, // no ratio
		{sc: roundtrip("udp", 32, 1, "sync"), rounds: 1, ratio: 0.80, lo: 0.8, hi: 0.8},
		{sc: serial, rounds: 3, ratio: 0.96, lo: 0.9, hi: 1.01},
		{sc: window, rounds: 3, ratio: 0.85, lo: 0.8, hi: 0.9},
		{sc: udpCodecScenarios()[0], rounds: 3, ratio: 1.05, lo: 1.0, hi: 1.1},
		{sc: rpcScenario("rpc-noarg-c1", "noarg", 1, 1), rounds: 3, ratio: 1.9, lo: 1.8, hi: 2.0},
	}
	var b strings.Builder
	writeVerdict(&b, ps)
	want := []string{
		"| TCP one-way | 2 | **1.02×** (0.94–1.10×) | 1 better · 1 worse |",
		"| UDP one-way | 1 | **0.92×** | 1 within noise |",
		"| UDP round trip | 1 | **0.80×** | 1 one pair |",
		"| codec echo, serial requests | 1 | **0.96×** | 1 within noise |",
		"| codec echo, windowed | 1 | **0.85×** | 1 worse |",
		"| UDP codec echo, serial requests | 1 | **1.05×** | 1 within noise |",
		"| all vs std net: 7 of the 9 scenarios run | 7 | **0.94×** (0.80–1.10×) | 1 better · 3 within noise · 2 worse · 1 one pair |",
		"| RPC vs net/rpc | 1 | **1.90×** | 1 better |",
		"| tcp-1KB | transport client sends; server counts bytes | std conn writes; std loop counts each read | server packets/s | 3 | **1.10×** | 1.05–1.20× | better |",
		"| udp-1KB | transport client sends; server counts bytes (4 MiB receive buffers) | std conn writes; std loop counts each read (4 MiB receive buffers) | server packets/s | 3 | **0.92×** | 0.80–1.10× | within noise |",
		"| tcp-32B | ",
		"| server packets/s | 3 | **0.94×** | 0.90–0.98× | worse |",
		"| udp-32B-rt-sync-1C | ",
		"| round trips/s | 1 | **0.80×** | – | one pair |",
		"| w | codec client, 255 requests in flight, matches each reply by sequence number to its caller; codec server echoes | " +
			"std client, 255 requests in flight, matches each reply by sequence number to its caller; std frame loop echoes | echoes/s |",
		rangesLegend,
	}
	got := b.String()
	last := -1
	for _, w := range want {
		i := strings.Index(got, w)
		if i < 0 || i < last {
			t.Fatalf("verdict lacks (or misorders) %q:\n%s", w, got)
		}
		last = i
	}
	if strings.Contains(got, "tcp-64B") {
		t.Errorf("a scenario without a ratio in the verdict:\n%s", got)
	}
	for _, m := range regexp.MustCompile(`(\d\.\d\d)–(\d\.\d\d)×`).FindAllStringSubmatch(got, -1) {
		if m[1] == m[2] {
			t.Errorf("a range of one value: %q", m[0])
		}
	}
	if strings.Contains(got, "≥ 0.95") || strings.Contains(got, "| all |") {
		t.Errorf("an unexplained column or an unlabelled all row:\n%s", got)
	}
}

// The headline is one sentence that counts every scenario run: each
// verdict, single pairs, failed ones and the direct path without a
// baseline; it names what the figures are.
func TestHeadline(t *testing.T) {
	direct := Scenario{Name: "rpc-direct-noarg", Mode: rpcMode, Call: "noarg", Direct: true}
	ps := []pair{
		{sc: oneway("tcp", 1024, 4, ""), rounds: 3, ratio: 1.10, lo: 1.05, hi: 1.2},
		{sc: oneway("udp", 1024, 4, ""), rounds: 3, ratio: 0.92, lo: 0.8, hi: 1.1},
		{sc: oneway("tcp", 32, 4, ""), rounds: 3, ratio: 0.94, lo: 0.9, hi: 0.98},
		{sc: rpcScenario("rpc-noarg-c1", "noarg", 1, 1), rounds: 3, ratio: 1.9, lo: 1.8, hi: 2.0},
	}
	if got, want := headline(ps, 3), "lifenet was better in 2, within noise in 1, worse in 1 of the 4 scenarios run (medians of 3 alternating pairs)."; got != want {
		t.Errorf("headline\n got %q\nwant %q", got, want)
	}
	ps = append(ps, pair{sc: oneway("tcp", 64, 4, "")}, pair{sc: direct}, pair{sc: roundtrip("udp", 32, 1, "sync"), rounds: 1, ratio: 0.8, lo: 0.8, hi: 0.8})
	want := "lifenet was better in 2, within noise in 1, worse in 1 of the 7 scenarios run (medians of 3 alternating pairs; " +
		"1 with a single pair, no spread to judge by; 1 without a ratio, a run having failed; 1 without a baseline (the direct RPC path))."
	if got := headline(ps, 3); got != want {
		t.Errorf("headline\n got %q\nwant %q", got, want)
	}
	if got := headline(ps[:2], 1); got != "lifenet was better in 1, within noise in 1, worse in 0 of the 2 scenarios run (one pair each)." {
		t.Errorf("one round: %q", got)
	}
	// The report opens with it, and results.json carries it.
	rep := Report{Rounds: 3, Results: []Result{
		{Scenario: oneway("tcp", 1024, 4, ""), Impl: "lifenet", Round: 1, Server: &loadtest.Steady{PktPerSec: 90}},
		{Scenario: oneway("tcp", 1024, 4, ""), Impl: "raw", Round: 1, Server: &loadtest.Steady{PktPerSec: 100}},
	}}
	var md strings.Builder
	writeMarkdown(&md, rep)
	first := "# lifenet socket matrix\n\n**lifenet was better in 0, within noise in 0, worse in 0 of the 1 scenarios run (medians of 3 alternating pairs; 1 with a single pair, no spread to judge by).**\n\n"
	if !strings.HasPrefix(md.String(), first) {
		t.Errorf("results.md does not open with the headline:\n%s", md.String())
	}
	rep.derive()
	if rep.Headline != strings.Trim(strings.Split(first, "\n")[2], "*") {
		t.Errorf("results.json headline %q", rep.Headline)
	}
}

// A ratio is better or worse only when every pair agrees; a spread that
// crosses 1.0 is within noise, and one pair has no spread.
func TestVerdicts(t *testing.T) {
	for _, c := range []struct {
		p    pair
		want string
	}{
		{pair{rounds: 3, ratio: 1.1, lo: 1.01, hi: 1.3}, verdictBetter},
		{pair{rounds: 3, ratio: 0.7, lo: 0.6, hi: 0.99}, verdictWorse},
		{pair{rounds: 3, ratio: 0.7, lo: 0.6, hi: 1.05}, verdictNoise},
		{pair{rounds: 2, ratio: 1.0, lo: 1.0, hi: 1.0}, verdictNoise},
		{pair{rounds: 1, ratio: 0.5, lo: 0.5, hi: 0.5}, verdictOnePair},
		{pair{rounds: 0}, verdictNone},
	} {
		if got := c.p.verdict(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}

// One-way scenarios compare the servers' packet rates: a one-way client
// reports only what it sent (it cannot know what arrived, so no received
// bytes), and its rates do not enter the ratio.
func TestOneWayRateIsTheServers(t *testing.T) {
	sc := oneway("tcp", 32, 4, "")
	ps := pairs([]Result{
		{Scenario: sc, Impl: "lifenet", Round: 1, Server: &loadtest.Steady{PktPerSec: 90},
			Client: &loadtest.Summary{Mode: "oneway", SentBytes: 1 << 30, MsgsPerSec: 1e9}},
		{Scenario: sc, Impl: "raw", Round: 1, Server: &loadtest.Steady{PktPerSec: 100},
			Client: &loadtest.Summary{Mode: "oneway", SentBytes: 1 << 10, MsgsPerSec: 1}},
	})
	if len(ps) != 1 || ps[0].rounds != 1 || ps[0].ratio != 0.9 {
		t.Fatalf("pairs %+v: want one round at 0.9 (server pkt/s 90 / 100)", ps)
	}
}

// Client processes' summaries merge with every process's faults kept:
// a later process's errors, messages short and loss count too.
func TestMergeSummaryKeepsEveryProcesssFaults(t *testing.T) {
	short := int64(3)
	m := &loadtest.Summary{MsgsPerSec: 100, SentBytes: 1000, LossPct: 0, P99: 7}
	mergeSummary(m, &loadtest.Summary{MsgsPerSec: 50, SentBytes: 3000, LossPct: 20, ConnErrors: 2,
		FirstError: "send: reset", IntegrityDiff: &short, Warning: "loss", Interrupted: true, P99: 9})
	want := loadtest.Summary{MsgsPerSec: 150, SentBytes: 4000, LossPct: 15, ConnErrors: 2, FirstError: "send: reset",
		Warning: "loss", Interrupted: true, P99: 7}
	if m.IntegrityDiff == nil || *m.IntegrityDiff != 3 {
		t.Fatalf("integrityDiff %v, want 3", m.IntegrityDiff)
	}
	m.IntegrityDiff = nil
	if *m != want {
		t.Fatalf("merged %+v\nwant   %+v", *m, want)
	}
}
