package matrix

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lifenet/lifenet/internal/rpcbench"
)

// Report is what results.json holds.
type Report struct {
	Date    string       `json:"date"`
	Seconds float64      `json:"seconds"`
	Warmup  float64      `json:"warmup"`
	Rounds  int          `json:"rounds"`
	Partial string       `json:"partial,omitempty"`     // why some runs are missing (an interrupted matrix), or ""
	Env     *Environment `json:"environment,omitempty"` // nil in reports made before it was recorded
	Results []Result     `json:"results"`
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
	writeHeader(w, rep)
	writeTables(w, rep)
}

// writeHeader writes what comes before the tables (and, in results.html,
// the charts): the run's settings, the environment, how to read it.
func writeHeader(w io.Writer, rep Report) {
	fmt.Fprintf(w, "%s · window %g s · warm-up %g s · %s\n\n", rep.Date, rep.Seconds, rep.Warmup, rep.method())
	if rep.Partial != "" {
		fmt.Fprintf(w, "**Partial report: %s.** Only the runs that finished are below.\n\n", rep.Partial)
	}
	writeEnvironment(w, rep)
	writeHowToRead(w, rep)
}

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
	writeSummary(w, ps)
	fmt.Fprintln(w, "## 1. Throughput (one-way: the server only counts)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | proto | size | clients | lifenet Gbps | lifenet pkt/s | raw pkt/s | **lifenet/raw** | server CPU s/M msg lifenet / raw | server B/msg lifenet |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	sec := section("oneway")
	for _, p := range sec {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %s | **%s** | %s / %s | %s |\n", p.sc.Name, p.sc.Proto, p.sc.Size, p.sc.Clients,
			serverField(p.lifenet, func(r *Result) float64 { return r.Server.Gbps }, "%.2f"),
			rate(p.lifenet.pktps()), rate(p.raw.pktps()), p.ratioText(),
			serverField(p.lifenet, func(r *Result) float64 { return r.Server.CPUPerMsg }, "%.2f"),
			serverField(p.raw, func(r *Result) float64 { return r.Server.CPUPerMsg }, "%.2f"),
			serverField(p.lifenet, func(r *Result) float64 { return r.Server.AllocPerMsg }, "%.2f"))
	}
	writeNotes(w, sec, bad)
	fmt.Fprintln(w, "\n## 2. Echo pipeline")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | size | clients | receive | lifenet msg/s | raw msg/s | **lifenet/raw** | integrity diff lifenet |")
	fmt.Fprintln(w, "|---|---:|---:|---|---:|---:|---:|---:|")
	sec = section("pipeline")
	for _, p := range sec {
		diff := "–"
		if p.lifenet != nil && p.lifenet.Client != nil && p.lifenet.Client.IntegrityDiff != nil {
			diff = fmt.Sprint(*p.lifenet.Client.IntegrityDiff)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | **%s** | %s |\n", p.sc.Name, p.sc.Size, p.sc.Clients, p.sc.RecvMode,
			rate(p.lifenet.clientRate()), rate(p.raw.clientRate()), p.ratioText(), diff)
	}
	writeNotes(w, sec, bad)
	fmt.Fprintln(w, "\n## 3. Round-trip latency (µs, client-observed)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | proto | size | clients | receive | lifenet P50 / P95 / P99 / P99.9 / max | raw P50 / P99 | lifenet rt/s | raw rt/s | **lifenet/raw** |")
	fmt.Fprintln(w, "|---|---|---:|---:|---|---:|---:|---:|---:|---:|")
	sec = section("roundtrip")
	for _, p := range sec {
		lat, rawLat := "–", "–"
		if c := clientOf(p.lifenet); c != nil {
			lat = fmt.Sprintf("%.0f / %.0f / %.0f / %.0f / %.0f", c.P50, c.P95, c.P99, c.P999, c.Max)
		}
		if c := clientOf(p.raw); c != nil {
			rawLat = fmt.Sprintf("%.0f / %.0f", c.P50, c.P99)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %s | %s | %s | **%s** |\n", p.sc.Name, p.sc.Proto, p.sc.Size, p.sc.Clients, p.sc.RecvMode,
			lat, rawLat, rate(p.lifenet.clientRate()), rate(p.raw.clientRate()), p.ratioText())
	}
	writeNotes(w, sec, bad)
	writeRPC(w, ps, bad)
	var failed []string
	for _, r := range rep.Results {
		if r.Error != "" {
			failed = append(failed, fmt.Sprintf("- %s (%s): %s", r.Name, r.Impl, strings.ReplaceAll(r.Error, "\n", "; ")))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\n## Failed runs\n\n%s\n", strings.Join(failed, "\n"))
	}
	if faults := faultyRuns(rep.Results); len(faults) > 0 {
		fmt.Fprintf(w, "\n## Runs with lost TCP echoes, failed connections or calls, slow drains, or heavy UDP loss\n\n%s\n", strings.Join(faults, "\n"))
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
	fmt.Fprintln(w, "\n## 4. RPC: lifenet vs net/rpc")
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
}

// slowDrain is how long a pipeline's last echoes may take after sending
// ends before the run is listed: at the measured rates everything in
// flight comes back in well under 100 ms, so a second means the kernel or
// the implementation held a connection back.
const slowDrain = 1.0

// faultyRuns lists runs that completed but lost TCP echoes (TCP delivers
// everything or fails, so any shortfall is a fault), lost connections,
// took long to drain, or lost more than 5 % of their UDP datagrams, and
// RPC runs with failed calls.
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
		if len(why) > 0 {
			out = append(out, fmt.Sprintf("- %s (%s, round %d): %s", r.Name, r.Impl, r.Round, strings.Join(why, "; ")))
		}
	}
	return out
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

func clientOf(r *Result) *struct{ P50, P95, P99, P999, Max float64 } {
	if r == nil || r.Client == nil || r.Client.LatencyCount == 0 {
		return nil
	}
	c := r.Client
	return &struct{ P50, P95, P99, P999, Max float64 }{c.P50, c.P95, c.P99, c.P999, c.Max}
}

// series is one named set of bars in a chart.
type series struct {
	name   string
	color  string
	values []float64
}

// barChart draws grouped bars as inline SVG: no scripts, no network. A
// ref above zero draws a dashed reference line at that value (1.0 on
// ratio charts).
func barChart(title, unit string, labels []string, ss []series, ref float64) string {
	const h, left, bottom, top = 360, 70, 150, 30
	// Wide enough that rotated labels do not overlap; the page scrolls it.
	w := max(720, left+10+len(labels)*max(20, 12*len(ss)))
	var peak float64
	for _, s := range ss {
		for _, v := range s.values {
			peak = max(peak, v)
		}
	}
	if peak == 0 || len(labels) == 0 {
		return fmt.Sprintf("<h2>%s</h2><p>no data</p>", html.EscapeString(title))
	}
	ticks, decimals := niceTicks(max(peak, ref))
	scale := ticks[len(ticks)-1]
	small := scale < 10 // ratios and Gbps: decimals; rates: k and M
	label := func(v float64) string {
		if small {
			return strconv.FormatFloat(v, 'f', decimals, 64)
		}
		if v == 0 {
			return "0"
		}
		return rate(v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<h2>%s</h2><div class="chart"><svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">`, html.EscapeString(title), w, h, html.EscapeString(title))
	plotW, plotH := float64(w-left-10), float64(h-bottom-top)
	y := func(v float64) float64 { return float64(h-bottom) - plotH*v/scale }
	group := plotW / float64(len(labels))
	bar := group * 0.8 / float64(len(ss))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`, left, h-bottom, w-10, h-bottom)
	for _, t := range ticks[1:] {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`, left, y(t), w-10, y(t))
	}
	for _, t := range ticks {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="11" text-anchor="end">%s</text>`, left-4, y(t)+4, html.EscapeString(label(t)))
	}
	for gi, l := range labels {
		x0 := float64(left) + group*float64(gi) + group*0.1
		for si, s := range ss {
			if gi >= len(s.values) || s.values[gi] <= 0 {
				continue // missing or zero: no bar, no "0 Gbps" tooltip
			}
			v := s.values[gi]
			value := strconv.FormatFloat(v, 'f', 2, 64)
			if !small {
				value = rate(v)
			}
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s %s</title></rect>`,
				x0+bar*float64(si), y(v), bar-1, plotH*v/scale, s.color, html.EscapeString(s.name), html.EscapeString(l), value, html.EscapeString(unit))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="end" transform="rotate(-60 %.1f %d)">%s</text>`,
			x0+group*0.4, h-bottom+14, x0+group*0.4, h-bottom+14, html.EscapeString(l))
	}
	if ref > 0 {
		fmt.Fprintf(&b, `<line class="ref" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#c0392b" stroke-width="1.5" stroke-dasharray="6 4"/>`+
			`<text x="%d" y="%.1f" font-size="11" text-anchor="end" fill="#c0392b">%s× parity</text>`,
			left, y(ref), w-10, y(ref), w-12, y(ref)-4, strconv.FormatFloat(ref, 'f', 1, 64))
	}
	for si, s := range ss {
		fmt.Fprintf(&b, `<rect x="%d" y="8" width="12" height="12" fill="%s"/><text x="%d" y="18" font-size="12">%s</text>`, left+si*140, s.color, left+si*140+16, html.EscapeString(s.name))
	}
	fmt.Fprintf(&b, `<text x="12" y="%d" font-size="11" transform="rotate(-90 12 %d)">%s</text></svg></div>`, h/2, h/2, html.EscapeString(unit))
	return b.String()
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

const (
	colorLifenet = "#2b7bb9"
	colorRaw     = "#b9b9b9"
)

func writeHTML(w io.Writer, rep Report) {
	ps := pairs(rep.Results)
	pick := func(keep func(Scenario) bool, val func(*Result) float64) ([]string, []series) {
		var labels []string
		l := series{name: "lifenet", color: colorLifenet}
		r := series{name: "raw (std net)", color: colorRaw}
		for _, p := range ps {
			if keep(p.sc) {
				labels = append(labels, p.sc.Name)
				l.values = append(l.values, val(p.lifenet))
				r.values = append(r.values, val(p.raw))
			}
		}
		return labels, []series{l, r}
	}
	gbps := func(r *Result) float64 {
		if r == nil || r.Server == nil {
			return 0
		}
		return r.Server.Gbps
	}
	var body strings.Builder
	labels, ss := pick(func(s Scenario) bool {
		return s.Mode == "oneway" && s.Frame == 0 && !strings.Contains(s.Name, "-c") && !s.UDPConnect
	}, gbps)
	body.WriteString(barChart("Bandwidth vs packet size (one-way)", "Gbps", labels, ss, 0))
	labels, ss = pick(func(s Scenario) bool {
		return s.Mode == "oneway" && (strings.Contains(s.Name, "-c") || s.Clients != 8 && s.Proto == "tcp")
	}, (*Result).pktps)
	body.WriteString(barChart("Packet rate vs concurrency (one-way)", "packets/s", labels, ss, 0))
	var lat []string
	p50 := series{name: "lifenet P50", color: colorLifenet}
	p99 := series{name: "lifenet P99", color: "#8e44ad"}
	raw50 := series{name: "raw P50", color: colorRaw}
	for _, p := range ps {
		if p.sc.Mode != "roundtrip" {
			continue
		}
		lat = append(lat, p.sc.Name)
		var a, b, c float64
		if x := clientOf(p.lifenet); x != nil {
			a, b = x.P50, x.P99
		}
		if x := clientOf(p.raw); x != nil {
			c = x.P50
		}
		p50.values, p99.values, raw50.values = append(p50.values, a), append(p99.values, b), append(raw50.values, c)
	}
	body.WriteString(barChart("Round-trip latency percentiles vs concurrency", "µs", lat, []series{p50, p99, raw50}, 0))
	var calls []string
	lc := series{name: "lifenet", color: colorLifenet}
	nc := series{name: "net/rpc", color: colorRaw}
	for _, p := range ps {
		if p.sc.isRPC() && !p.sc.Direct {
			calls = append(calls, p.sc.Name)
			lc.values, nc.values = append(lc.values, p.lifenet.callRate()), append(nc.values, p.raw.callRate())
		}
	}
	if len(calls) > 0 {
		body.WriteString(barChart("RPC calls/s: lifenet vs net/rpc", "calls/s", calls, []series{lc, nc}, 0))
	}
	var all []string
	rat := series{name: "lifenet / raw", color: colorLifenet}
	for _, p := range ps {
		if p.rounds > 0 {
			all = append(all, p.sc.Name)
			rat.values = append(rat.values, p.ratio)
		}
	}
	ratTitle := "lifenet vs raw (throughput ratio; 1.0 = parity)"
	if len(calls) > 0 {
		rat.name = "lifenet / baseline"
		ratTitle = "lifenet vs baseline (throughput ratio; 1.0 = parity; raw std net, net/rpc for the rpc-* rows)"
	}
	body.WriteString(barChart(ratTitle, "ratio", all, []series{rat}, 1))
	var head, tables strings.Builder
	writeHeader(&head, rep)
	writeTables(&tables, rep)
	fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>lifenet matrix %s</title>
<style>body{font-family:system-ui,sans-serif;max-width:900px;margin:2em auto;padding:0 1em}h2{font-size:1.1em;margin-top:2em}.chart{overflow-x:auto}`+
		`.table{overflow-x:auto}table{border-collapse:collapse;font-size:12px;margin:1em 0}th,td{border:1px solid #ddd;padding:2px 6px;text-align:left}th{background:#f6f6f6}.num{text-align:right}code{background:#f6f6f6}</style>
</head><body><h1>lifenet socket matrix</h1>
%s%s
%s</body></html>
`, html.EscapeString(rep.Date), markdownHTML(head.String()), body.String(), markdownHTML(tables.String()))
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

// NewReport stamps a report.
func NewReport(opts Options, results []Result) Report {
	env := gatherEnvironment()
	return Report{Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Seconds: opts.Seconds, Warmup: opts.Warmup,
		Rounds: max(opts.Rounds, 1), Env: &env, Results: results}
}

// method says how the numbers were taken.
func (rep Report) method() string {
	how := "every scenario runs twice: lifenet (server and client) and `raw` (the plain std-net loop); separate server and client processes. Ratio = lifenet / raw."
	if rep.Rounds > 1 {
		how = fmt.Sprintf("every scenario runs %d rounds of lifenet (server and client) beside `raw` (the plain std-net loop), the pair back to back, taking turns going first; separate server and client processes. Rates and latencies are the median round's; ratio = median of the per-round lifenet/raw ratios, with their range.", rep.Rounds)
	}
	for _, r := range rep.Results {
		if r.isRPC() {
			return how + " The RPC rows (rpc-*) have Go's net/rpc as the baseline instead of `raw`, and the direct path none."
		}
	}
	return how
}
