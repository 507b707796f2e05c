package matrix

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lifenet/lifenet/internal/rpcbench"
)

// schemaVersion is the layout of results.json: 3 added headline, the
// ratios' lifenet_does and baseline_does and the summary's label; 2 added
// schema_version, command, reproduce, ratios, summary and
// environment.commit_source (1, before it, had none of them and no
// schema_version).
const schemaVersion = 3

// Report is what results.json holds. Ratios and Summary are derived from
// Results (Write fills them), so that a dashboard reads the verdicts
// without re-implementing the pairing.
type Report struct {
	SchemaVersion int          `json:"schema_version"`
	Date          string       `json:"date"`
	Seconds       float64      `json:"seconds"`
	Warmup        float64      `json:"warmup"`
	Rounds        int          `json:"rounds"`
	Partial       string       `json:"partial,omitempty"`     // why some runs are missing (an interrupted matrix), or ""
	Command       string       `json:"command,omitempty"`     // the command line that made the report
	Reproduce     string       `json:"reproduce,omitempty"`   // a command line that runs it again on the commit measured
	Env           *Environment `json:"environment,omitempty"` // nil in reports made before it was recorded
	Headline      string       `json:"headline"`              // the report's first sentence: how every scenario run came out
	Ratios        []Ratio      `json:"ratios"`                // one per scenario, in the order run
	Summary       []Group      `json:"summary"`               // by kind of scenario, then "all" and the RPC rows
	Results       []Result     `json:"results"`
}

// Ratio is one scenario's lifenet/baseline ratio with its spread across
// the pairs and its verdict against 1.0 (results.json "ratios").
type Ratio struct {
	Scenario     string    `json:"scenario"`
	Group        string    `json:"group"`
	Baseline     string    `json:"baseline"`    // raw (std net) or netrpc; "" for the direct RPC path
	ComparedBy   string    `json:"compared_by"` // the rate the ratio is of
	Pairs        int       `json:"pairs"`       // rounds where both sides produced a rate
	Ratio        float64   `json:"ratio"`       // median of the pair ratios
	Min          float64   `json:"min"`         // the spread across pairs
	Max          float64   `json:"max"`
	PairRatios   []float64 `json:"pair_ratios"` // in round order
	Verdict      string    `json:"verdict"`     // better, worse, within noise, one pair, no ratio
	Lifenet      float64   `json:"lifenet"`     // the median lifenet run's rate
	BaselineRate float64   `json:"baseline_rate"`
	LifenetDoes  string    `json:"lifenet_does"`  // what lifenet's side does per message, in a phrase
	BaselineDoes string    `json:"baseline_does"` // what the baseline's side does
}

// derive fills the fields computed from the results.
func (rep *Report) derive() []pair {
	ps := pairs(rep.Results)
	rep.SchemaVersion = schemaVersion
	rep.Ratios = rep.Ratios[:0]
	for _, p := range ps {
		baseline := ""
		if impls := p.sc.impls(); len(impls) > 1 {
			baseline = impls[1]
		}
		lifenetDoes, baselineDoes := sides(p)
		rep.Ratios = append(rep.Ratios, Ratio{Scenario: p.sc.Name, Group: groupName(p.sc), Baseline: baseline, ComparedBy: comparedBy(p.sc),
			Pairs: p.rounds, Ratio: round3(p.ratio), Min: round3(p.lo), Max: round3(p.hi), PairRatios: roundAll(p.byRound), Verdict: p.verdict(),
			Lifenet: p.lifenet.rate(), BaselineRate: p.raw.rate(), LifenetDoes: lifenetDoes, BaselineDoes: baselineDoes})
	}
	rep.Summary = summarize(ps)
	rep.Headline = headline(ps, rep.Rounds)
	return ps
}

// comparedBy names the rate a scenario's ratio is of (Result.rate).
func comparedBy(sc Scenario) string {
	switch {
	case sc.Mode == "oneway":
		return "server packets/s"
	case sc.isRPC():
		return "calls/s"
	case sc.Mode == "roundtrip":
		return "round trips/s"
	}
	return "echoes/s"
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func roundAll(vs []float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = round3(v)
	}
	return out
}

// Read loads dir/results.json.
func Read(dir string) (Report, error) {
	var rep Report
	js, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		return rep, fmt.Errorf("%s: %w", filepath.Join(dir, "results.json"), err)
	}
	return rep, nil
}

// Write writes results.json, results.md and results.html into dir.
func Write(dir string, rep Report) error {
	rep.derive()
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), js, 0o644); err != nil {
		return err
	}
	var md strings.Builder
	writeMarkdown(&md, rep)
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	var h strings.Builder
	writeHTML(&h, rep)
	return os.WriteFile(filepath.Join(dir, "results.html"), []byte(h.String()), 0o644)
}

func (r *Result) pktps() float64 {
	if r == nil || r.Server == nil {
		return 0
	}
	return r.Server.PktPerSec
}

func (r *Result) clientRate() float64 {
	if r == nil || r.Client == nil {
		return 0
	}
	return r.Client.MsgsPerSec
}

func (r *Result) callRate() float64 {
	if r == nil || r.RPC == nil {
		return 0
	}
	return r.RPC.CallsPerSec
}

func rate(v float64) string {
	switch {
	case v <= 0:
		return "–"
	case v >= 1e6:
		return fmt.Sprintf("%.2f M", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f k", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func serverField(r *Result, f func(*Result) float64, format string) string {
	if r == nil || r.Server == nil {
		return "–"
	}
	return fmt.Sprintf(format, f(r))
}

func writeMarkdown(w io.Writer, rep Report) {
	fmt.Fprintln(w, "# lifenet socket matrix")
	fmt.Fprintln(w)
	ps := pairs(rep.Results)
	writeHeadline(w, ps, rep.Rounds)
	writeHeader(w, rep)
	writeVerdict(w, ps)
	writeTables(w, rep)
	writeEnvironment(w, rep)
	writeHowToRead(w, rep)
}

// writeHeadline writes the report's first sentence (headline), bold.
func writeHeadline(w io.Writer, ps []pair, rounds int) {
	fmt.Fprintf(w, "**%s**\n\n", headline(ps, max(rounds, 1)))
}

// writeHeader writes what comes before the verdict: the run's settings,
// whether it is partial, the commit measured and the command that
// reproduces it.
func writeHeader(w io.Writer, rep Report) {
	fmt.Fprintf(w, "%s · measured window %g s per run, after a warm-up of %g s that no figure includes · %s\n\n", rep.Date, rep.Seconds, rep.Warmup, rep.method())
	if rep.Partial != "" {
		fmt.Fprintf(w, "**Partial report: %s.** Only the runs that finished are below.\n\n", rep.Partial)
	}
	commit := "not recorded"
	if rep.Env != nil {
		commit = "`" + rep.Env.Commit + "`"
		if rep.Env.CommitSource != "" {
			commit += " (" + rep.Env.CommitSource + ")"
		}
	}
	fmt.Fprintf(w, "- commit measured: %s\n", commit)
	if rep.Reproduce != "" {
		fmt.Fprintf(w, "- reproduce: `%s`\n", rep.Reproduce)
	} else if rep.Command != "" {
		fmt.Fprintf(w, "- command: `%s`\n", rep.Command)
	}
	fmt.Fprintln(w)
}

// writeVerdict writes the summary by kind of scenario and each scenario's
// ratio with its spread across pairs, its verdict, and what each side
// does.
func writeVerdict(w io.Writer, ps []pair) {
	gs := summarize(ps)
	if len(gs) == 0 {
		return
	}
	fmt.Fprintln(w, "## Verdict")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| group | scenarios | lifenet/baseline: median of the scenario ratios (their range) | verdicts (by the spread across pairs) |")
	fmt.Fprintln(w, "|---|---:|---:|---|")
	for _, g := range gs {
		fmt.Fprintf(w, "| %s | %d | %s | %s |\n", g.Label, g.Scenarios, g.ratioText(), g.verdictCounts())
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | lifenet does | baseline does | compared by | pairs | **lifenet/baseline** | spread across pairs | verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---:|---:|---:|---|")
	for _, p := range ps {
		if p.rounds == 0 {
			continue
		}
		l, b := sides(p)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d | **%.2f×** | %s | %s |\n", p.sc.Name, l, b, comparedBy(p.sc), p.rounds, p.ratio, p.spreadText(), p.verdict())
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, rangesLegend)
	fmt.Fprintln(w)
}

// rangesLegend says in one line what the verdict's ranges are.
const rangesLegend = "A scenario's ratio is the median of its pair ratios and its spread across pairs their lowest and highest; " +
	"a group's range is the lowest and highest of its scenarios' ratios (one scenario: its ratio alone)."

// writeTables writes the summary, the tables with their notes, and the
// lists of failed and faulty runs.
func writeTables(w io.Writer, rep Report) {
	ps := pairs(rep.Results)
	bad := troubled(rep.Results)
	section := func(mode string) []pair {
		var out []pair
		for _, p := range ps {
			if p.sc.Mode == mode {
				out = append(out, p)
			}
		}
		return out
	}
	if sec := section("oneway"); len(sec) > 0 {
		fmt.Fprintln(w, "## 1. Throughput (one-way: the server only counts)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| scenario | proto | size | clients | Gbps lifenet / raw | lifenet pkt/s | raw pkt/s | **lifenet/raw** | arrived lifenet / raw | server CPU s/M msg lifenet / raw | server B/msg lifenet |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, p := range sec {
			gbps := func(r *Result) float64 { return r.Server.Gbps }
			fmt.Fprintf(w, "| %s | %s | %d | %d | %s / %s | %s | %s | **%s** | %s / %s | %s / %s | %s |\n", p.sc.Name, p.sc.Proto, p.sc.Size, p.sc.Clients,
				serverField(p.lifenet, gbps, "%.2f"), serverField(p.raw, gbps, "%.2f"),
				rate(p.lifenet.pktps()), rate(p.raw.pktps()), p.ratioText(),
				arrivedText(p.lifenet), arrivedText(p.raw),
				serverField(p.lifenet, func(r *Result) float64 { return r.Server.CPUPerMsg }, "%.2f"),
				serverField(p.raw, func(r *Result) float64 { return r.Server.CPUPerMsg }, "%.2f"),
				serverField(p.lifenet, func(r *Result) float64 { return r.Server.AllocPerMsg }, "%.2f"))
		}
		writeNotes(w, sec, bad)
		fmt.Fprintln(w)
	}
	if sec := section("pipeline"); len(sec) > 0 {
		fmt.Fprintln(w, "## 2. Echo pipeline")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| scenario | size | clients | receive | lifenet msg/s | raw msg/s | **lifenet/raw** | integrity diff lifenet |")
		fmt.Fprintln(w, "|---|---:|---:|---|---:|---:|---:|---:|")
		for _, p := range sec {
			diff := "–"
			if p.lifenet != nil && p.lifenet.Client != nil && p.lifenet.Client.IntegrityDiff != nil {
				diff = fmt.Sprint(*p.lifenet.Client.IntegrityDiff)
			}
			fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | **%s** | %s |\n", p.sc.Name, p.sc.Size, p.sc.Clients, p.sc.RecvMode,
				rate(p.lifenet.clientRate()), rate(p.raw.clientRate()), p.ratioText(), diff)
		}
		writeNotes(w, sec, bad)
		fmt.Fprintln(w)
	}
	if sec := section("roundtrip"); len(sec) > 0 {
		fmt.Fprintln(w, "## 3. Round-trip latency (µs, client-observed)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| scenario | proto | size | clients | receive | P50 lifenet / raw | P99 lifenet / raw | P95 / P99.9 / max lifenet | lifenet rt/s | raw rt/s | **lifenet/raw** |")
		fmt.Fprintln(w, "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
		for _, p := range sec {
			l, r := clientOf(p.lifenet), clientOf(p.raw)
			pct := func(c *latencies, f func(*latencies) float64) string {
				if c == nil {
					return "–"
				}
				return fmt.Sprintf("%.0f", f(c))
			}
			p50 := func(c *latencies) float64 { return c.P50 }
			p99 := func(c *latencies) float64 { return c.P99 }
			tail := "–"
			if l != nil {
				tail = fmt.Sprintf("%.0f / %.0f / %.0f", l.P95, l.P999, l.Max)
			}
			fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s / %s | %s / %s | %s | %s | %s | **%s** |\n", p.sc.Name, p.sc.Proto, p.sc.Size, p.sc.Clients, p.sc.RecvMode,
				pct(l, p50), pct(r, p50), pct(l, p99), pct(r, p99), tail, rate(p.lifenet.clientRate()), rate(p.raw.clientRate()), p.ratioText())
		}
		writeNotes(w, sec, bad)
		fmt.Fprintln(w)
	}
	writeRPC(w, ps, bad)
	var failed []string
	for _, r := range rep.Results {
		if r.Error != "" {
			failed = append(failed, fmt.Sprintf("- %s (%s): %s", r.Name, r.Impl, strings.ReplaceAll(r.Error, "\n", "; ")))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "## Failed runs\n\n%s\n\n", strings.Join(failed, "\n"))
	}
	if faults := faultyRuns(rep.Results); len(faults) > 0 {
		fmt.Fprintf(w, "## Runs with lost TCP echoes, failed connections or calls, slow drains, or heavy UDP loss\n\n%s\n\n", strings.Join(faults, "\n"))
	}
}

// rpcField formats one figure of an RPC run's summary, "–" when the run
// has none or the figure is unknown (negative).
func rpcField(r *Result, f func(*rpcbench.Summary) float64, format string) string {
	if r == nil || r.RPC == nil || f(r.RPC) < 0 {
		return "–"
	}
	return fmt.Sprintf(format, f(r.RPC))
}

func rpcP50(s *rpcbench.Summary) float64         { return s.P50 }
func rpcServerCPU(s *rpcbench.Summary) float64   { return s.ServerCPU }
func rpcServerAlloc(s *rpcbench.Summary) float64 { return s.ServerAlloc }
func rpcClientAlloc(s *rpcbench.Summary) float64 { return s.ClientAlloc }
func rpcClientCPU(s *rpcbench.Summary) float64   { return s.ClientCPU }

// writeRPC writes the RPC section, when the matrix had RPC rows:
// the pairs against net/rpc, then the direct path.
func writeRPC(w io.Writer, ps []pair, bad map[string]bool) {
	var paired, direct []pair
	for _, p := range ps {
		switch {
		case p.sc.isRPC() && p.sc.Direct:
			direct = append(direct, p)
		case p.sc.isRPC():
			paired = append(paired, p)
		}
	}
	if len(paired)+len(direct) == 0 {
		return
	}
	fmt.Fprintln(w, "## 4. RPC: lifenet vs net/rpc")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "`lifenet serve` beside `lifenet serve --impl netrpc` (Go's net/rpc), one `lifenet rpcload` process each; "+
		"conns×inflight = connections × calls in flight on each. Server CPU and bytes per call are the server process's "+
		"counters over the window (– when unknown); latencies are the client's.")
	if len(paired) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| scenario | call | conns×inflight | lifenet calls/s | net/rpc calls/s | **lifenet/net/rpc** | P50 µs lifenet / net/rpc | server CPU µs/call lifenet / net/rpc | server B/call lifenet / net/rpc | client B/call lifenet / net/rpc |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, p := range paired {
			fmt.Fprintf(w, "| %s | %s | %d×%d | %s | %s | **%s** | %s / %s | %s / %s | %s / %s | %s / %s |\n", p.sc.Name, p.sc.Call,
				p.sc.Clients, max(p.sc.Inflight, 1), rate(p.lifenet.callRate()), rate(p.raw.callRate()), p.ratioText(),
				rpcField(p.lifenet, rpcP50, "%.1f"), rpcField(p.raw, rpcP50, "%.1f"),
				rpcField(p.lifenet, rpcServerCPU, "%.2f"), rpcField(p.raw, rpcServerCPU, "%.2f"),
				rpcField(p.lifenet, rpcServerAlloc, "%.0f"), rpcField(p.raw, rpcServerAlloc, "%.0f"),
				rpcField(p.lifenet, rpcClientAlloc, "%.0f"), rpcField(p.raw, rpcClientAlloc, "%.0f"))
		}
		writeNotes(w, paired, bad)
	}
	if len(direct) > 0 {
		fmt.Fprintln(w, "\nDirect path: `Server.Process` called in one process, no sockets (lifenet only, no baseline).")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| scenario | call | goroutines | lifenet calls/s | P50 µs | CPU µs/call | B/call |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
		for _, p := range direct {
			g := "GOMAXPROCS"
			if p.lifenet != nil && p.lifenet.RPC != nil {
				g = fmt.Sprint(p.lifenet.RPC.Inflight)
			} else if p.sc.Clients > 0 {
				g = fmt.Sprint(p.sc.Clients)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", p.sc.Name, p.sc.Call, g, rate(p.lifenet.callRate()),
				rpcField(p.lifenet, rpcP50, "%.2f"), rpcField(p.lifenet, rpcClientCPU, "%.2f"), rpcField(p.lifenet, rpcClientAlloc, "%.0f"))
		}
		writeNotes(w, direct, bad)
	}
	fmt.Fprintln(w)
}

// slowDrain is how long a pipeline's last echoes may take after sending
// ends before the run is listed: at the measured rates everything in
// flight comes back in well under 100 ms, so a second means the kernel or
// the implementation held a connection back.
const slowDrain = 1.0

// faultyRuns lists runs that completed but lost TCP echoes (TCP delivers
// everything or fails, so any shortfall is a fault), lost connections,
// took long to drain, or lost more than 5 % of their UDP echoes, one-way
// TCP runs whose server received less than was sent (onewayLost), and RPC
// runs with failed calls.
func faultyRuns(rs []Result) []string {
	var out []string
	for _, r := range rs {
		if s := r.RPC; s != nil && s.Errors > 0 {
			out = append(out, fmt.Sprintf("- %s (%s, round %d): %d calls failed (first: %s)", r.Name, r.Impl, r.Round, s.Errors, firstLine(s.FirstError)))
		}
		c := r.Client
		if c == nil {
			continue
		}
		var why []string
		if c.IntegrityDiff != nil && *c.IntegrityDiff != 0 && r.Proto == "tcp" {
			why = append(why, fmt.Sprintf("%d messages short", *c.IntegrityDiff))
		}
		if c.ConnErrors > 0 {
			why = append(why, fmt.Sprintf("%d connections failed (first: %s)", c.ConnErrors, firstLine(c.FirstError)))
		}
		if c.DrainSeconds >= slowDrain {
			why = append(why, fmt.Sprintf("the last echoes took %.1f s", c.DrainSeconds))
		}
		if c.Warning != "" {
			why = append(why, c.Warning)
		}
		if lost, ok := onewayLost(r); ok {
			why = append(why, lost)
		}
		if len(why) > 0 {
			out = append(out, fmt.Sprintf("- %s (%s, round %d): %s", r.Name, r.Impl, r.Round, strings.Join(why, "; ")))
		}
	}
	return out
}

// onewayLost says what a one-way TCP run's server never received of what
// its client sent: any byte short is a fault (TCP delivers everything or
// fails). The server counts the client's priming too, which its SentBytes
// leaves out, so a shortfall is a loss at least that large. A UDP flood's
// loss is no fault (its rate is what the receiver keeps up with): the
// throughput table shows it (arrivedText).
func onewayLost(r Result) (string, bool) {
	c, st := r.Client, r.Server
	if r.Mode != "oneway" || r.Proto != "tcp" || c == nil || st == nil || st.Received >= c.SentBytes {
		return "", false
	}
	short := c.SentBytes - st.Received
	return fmt.Sprintf("the server received %d bytes fewer than the client sent (%.3g %%)", short, 100*float64(short)/float64(c.SentBytes)), true
}

// arrivedText is the share of what a one-way run's client sent in its
// window that its server received, or "–": the warm-up's priming is left
// out where the server told it apart (Steady.WarmupBytes), else counted
// too, so at most 100 %.
func arrivedText(r *Result) string {
	if r == nil || r.Client == nil || r.Server == nil || r.Client.SentBytes == 0 {
		return "–"
	}
	got := r.Server.Received - min(r.Server.WarmupBytes, r.Server.Received)
	return fmt.Sprintf("%.0f %%", min(100, 100*float64(got)/float64(r.Client.SentBytes)))
}

// firstLine keeps a multi-line error (a stalled drain's socket list) on
// one report line; the client log has the rest.
func firstLine(s string) string {
	first, _, more := strings.Cut(s, "\n")
	if more {
		return first + " …"
	}
	return first
}

// latencies are a round-trip run's client-observed percentiles, µs.
type latencies struct{ P50, P95, P99, P999, Max float64 }

func clientOf(r *Result) *latencies {
	if r == nil || r.Client == nil || r.Client.LatencyCount == 0 {
		return nil
	}
	c := r.Client
	return &latencies{c.P50, c.P95, c.P99, c.P999, c.Max}
}

// niceTicks returns axis ticks from 0 at a round step (1, 2 or 5 × 10^k,
// the smallest giving at most 5 steps) up to the first tick at or above
// peak, and the decimals the step needs: 3.7 gives 0, 1, 2, 3, 4; 0.37
// gives 0, 0.1, 0.2, 0.3, 0.4.
func niceTicks(peak float64) ([]float64, int) {
	if peak <= 0 || math.IsNaN(peak) || math.IsInf(peak, 0) {
		return []float64{0, 1}, 0
	}
	k := int(math.Floor(math.Log10(peak / 5)))
	var m int
	for {
		for _, m = range []int{1, 2, 5} {
			if pow10(m, k) >= peak/5 {
				break
			}
		}
		if pow10(m, k) >= peak/5 {
			break
		}
		k++
	}
	n := int(math.Ceil(peak / pow10(m, k)))
	for n > 0 && pow10(m*(n-1), k) >= peak { // float error in the division
		n--
	}
	ticks := make([]float64, n+1)
	for i := range ticks {
		ticks[i] = pow10(m*i, k)
	}
	return ticks, max(0, -k)
}

// pow10 is m × 10^k, computed so that 3 × 10^-1 is exactly the float 0.3.
func pow10(m, k int) float64 {
	if k < 0 {
		return float64(m) / math.Pow10(-k)
	}
	return float64(m) * math.Pow10(k)
}

// markdownHTML turns the markdown the report writes into HTML: headings,
// tables (as <table>, right-aligned where the markdown says so), lists
// and paragraphs, with **bold** and `code`. It knows only that subset.
func markdownHTML(md string) string {
	var b strings.Builder
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "## "):
			fmt.Fprintf(&b, "<h2>%s</h2>\n", inlineHTML(line[3:]))
		case strings.HasPrefix(line, "# "):
			fmt.Fprintf(&b, "<h1>%s</h1>\n", inlineHTML(line[2:]))
		case strings.HasPrefix(line, "|"):
			j := i
			for j < len(lines) && strings.HasPrefix(lines[j], "|") {
				j++
			}
			b.WriteString(tableHTML(lines[i:j]))
			i = j - 1
		case strings.HasPrefix(line, "- "):
			b.WriteString("<ul>\n")
			for ; i < len(lines) && strings.HasPrefix(lines[i], "- "); i++ {
				fmt.Fprintf(&b, "<li>%s</li>\n", inlineHTML(lines[i][2:]))
			}
			b.WriteString("</ul>\n")
			i--
		default:
			fmt.Fprintf(&b, "<p>%s</p>\n", inlineHTML(line))
		}
	}
	return b.String()
}

// tableHTML renders markdown table lines: a header row, the |---| row
// (---: right-aligns a column), then the body rows.
func tableHTML(rows []string) string {
	cells := func(row string) []string {
		row = strings.TrimSpace(row)
		row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
		out := strings.Split(row, "|")
		for i := range out {
			out[i] = strings.TrimSpace(out[i])
		}
		return out
	}
	var right []bool
	if len(rows) > 1 {
		for _, c := range cells(rows[1]) {
			right = append(right, strings.HasSuffix(c, ":"))
		}
	}
	class := func(i int) string {
		if i < len(right) && right[i] {
			return ` class="num"`
		}
		return ""
	}
	var b strings.Builder
	b.WriteString("<div class=\"table\"><table>\n<tr>")
	for i, c := range cells(rows[0]) {
		fmt.Fprintf(&b, "<th%s>%s</th>", class(i), inlineHTML(c))
	}
	b.WriteString("</tr>\n")
	for _, row := range rows[min(2, len(rows)):] {
		b.WriteString("<tr>")
		for i, c := range cells(row) {
			fmt.Fprintf(&b, "<td%s>%s</td>", class(i), inlineHTML(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table></div>\n")
	return b.String()
}

// inlineHTML escapes text and turns **bold** into <b> and `code` into
// <code>.
func inlineHTML(s string) string {
	s = html.EscapeString(s)
	for _, m := range []struct{ mark, open, close string }{{"**", "<b>", "</b>"}, {"`", "<code>", "</code>"}} {
		var b strings.Builder
		for n := 0; ; n++ {
			before, after, ok := strings.Cut(s, m.mark)
			b.WriteString(before)
			if !ok {
				break
			}
			if n%2 == 0 && !strings.Contains(after, m.mark) {
				b.WriteString(m.mark) // unpaired: leave it
				b.WriteString(after)
				break
			}
			if n%2 == 0 {
				b.WriteString(m.open)
			} else {
				b.WriteString(m.close)
			}
			s = after
		}
		s = b.String()
	}
	return s
}

// NewReport stamps a report: the date, the run's settings, the
// environment (opts.Env, or gathered now), the command line and the one
// that reproduces it.
func NewReport(opts Options, results []Result) Report {
	env := opts.Env
	if env == nil {
		e := gatherEnvironment()
		env = &e
	}
	rep := Report{SchemaVersion: schemaVersion, Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Seconds: opts.Seconds, Warmup: opts.Warmup,
		Rounds: max(opts.Rounds, 1), Env: env, Results: results}
	if opts.Args != nil {
		rep.Command, rep.Reproduce = commandLines(opts.Exe, opts.Args, env.Commit)
	}
	return rep
}

// commandLines are the matrix's command line as it was run (exe is the
// binary: one `go run` built in a temporary directory is shown as `go run
// ./cmd/lifenet`) and one that reproduces the report from a clone: a
// checkout of the commit measured, then `go run ./cmd/lifenet` with the
// same arguments. A dirty or unknown commit cannot be checked out: the
// reproduction says so.
func commandLines(exe string, args []string, commit string) (command, reproduce string) {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	rest := strings.Join(append([]string{"matrix"}, quoted...), " ")
	prog := filepath.Base(exe)
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		prog = "go run ./cmd/lifenet"
	}
	command = prog + " " + rest
	switch {
	case commit == "" || commit == "unknown":
		reproduce = "go run ./cmd/lifenet " + rest + "  # commit unknown"
	case strings.HasSuffix(commit, "-dirty"):
		reproduce = "git checkout " + strings.TrimSuffix(commit, "-dirty") + " && go run ./cmd/lifenet " + rest + "  # the tree measured had uncommitted changes"
	default:
		reproduce = "git checkout " + commit + " && go run ./cmd/lifenet " + rest
	}
	return command, reproduce
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// method says how the numbers were taken.
func (rep Report) method() string {
	how := "every scenario runs once with lifenet (server and client) and once with `raw` (the plain std-net loop): one pair, no spread; separate server and client processes. Ratio = lifenet / raw."
	if rep.Rounds > 1 {
		how = fmt.Sprintf("every scenario runs %d pairs of lifenet (server and client) beside `raw` (the plain std-net loop), the two back to back, taking turns going first; separate server and client processes. Rates and latencies are the median pair's (the pair whose ratio is the median one; for an even count the lower middle); ratio = median of the pair ratios, spread = their range.", rep.Rounds)
	}
	for _, r := range rep.Results {
		if r.isRPC() {
			return how + " The RPC rows (rpc-*) have Go's net/rpc as the baseline instead of `raw`, and the direct path none."
		}
	}
	return how
}
