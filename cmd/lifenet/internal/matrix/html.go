package matrix

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// writeHTML writes results.html: the header and the verdict first (the
// summary by kind, then each scenario's ratio against 1.0 with its spread
// across pairs drawn as a band), then the charts, then the tables, the
// environment and how to read them. One self-contained page: no scripts,
// no network.
func writeHTML(w io.Writer, rep Report) {
	ps := pairs(rep.Results)
	var head, tables, tail strings.Builder
	writeHeadline(&head, ps, rep.Rounds)
	writeHeader(&head, rep)
	writeTables(&tables, rep)
	writeEnvironment(&tail, rep)
	writeHowToRead(&tail, rep)
	fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>lifenet matrix %s</title>
<style>%s</style>
</head><body><h1>lifenet socket matrix</h1>
%s%s%s%s%s</body></html>
`, html.EscapeString(rep.Date), pageStyle, markdownHTML(head.String()), verdictHTML(ps), chartsHTML(ps), markdownHTML(tables.String()), markdownHTML(tail.String()))
}

const pageStyle = `body{font-family:system-ui,sans-serif;margin:1.5em 2em;font-size:14px;line-height:1.4}` +
	`h1{font-size:1.5em;margin:0 0 .5em}h2{font-size:1.15em;margin-top:1.8em}.chart,.table{overflow-x:auto}` +
	`table{border-collapse:collapse;font-size:12px;margin:.8em 0}th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:middle}` +
	`th{background:#f6f6f6}.num{text-align:right}td.num,td:first-child{white-space:nowrap}code{background:#f3f3f3;padding:0 3px}` +
	`table.verdict td.v{font-weight:600}tr.better td.v,span.better{color:#1e7a45}tr.worse td.v,span.worse{color:#b03a2e}` +
	`tr.noise td.v,span.noise{color:#5f6a6a}tr.onepair td.v{color:#5f6a6a;font-style:italic}` +
	`tr.better{background:#eaf7ef}tr.worse{background:#fcebea}tr.noise{background:#f5f6f6}` +
	`td.band{padding:0 4px}th.band{padding:0 4px;font-weight:normal}.legend{color:#444;font-size:12px}td.does{font-size:11px;color:#333;min-width:14em}`

// verdictClass is the CSS class of a verdict's row.
func verdictClass(v string) string {
	switch v {
	case verdictBetter:
		return "better"
	case verdictWorse:
		return "worse"
	case verdictNoise:
		return "noise"
	}
	return "onepair"
}

// verdictHTML is the verdict section: the summary by kind of scenario and
// the per-scenario table, each ratio against 1.0 with its noise band.
func verdictHTML(ps []pair) string {
	gs := summarize(ps)
	if len(gs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<h2>Verdict</h2>\n<div class=\"table\"><table class=\"verdict\">\n<tr><th>group</th><th class=\"num\">scenarios</th>" +
		"<th class=\"num\">lifenet/baseline: median of the scenario ratios (their range)</th><th>verdicts (by the spread across pairs)</th></tr>\n")
	for _, g := range gs {
		var counts []string
		for _, c := range []struct {
			n          int
			what, span string
		}{{g.Better, verdictBetter, "better"}, {g.WithinNoise, verdictNoise, "noise"}, {g.Worse, verdictWorse, "worse"}, {g.OnePair, "one pair", ""}} {
			if c.n > 0 {
				counts = append(counts, fmt.Sprintf(`<span class="%s">%d %s</span>`, c.span, c.n, c.what))
			}
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td class=\"num\">%d</td><td class=\"num\">%s</td><td>%s</td></tr>\n",
			html.EscapeString(g.Label), g.Scenarios, inlineHTML(g.ratioText()), strings.Join(counts, " · "))
	}
	b.WriteString("</table></div>\n")
	b.WriteString("<div class=\"table\"><table class=\"verdict\">\n<tr><th>scenario</th><th>lifenet does</th><th>baseline does</th><th>compared by</th><th class=\"num\">pairs</th>" +
		"<th class=\"num\">lifenet / baseline</th><th class=\"num\">spread across pairs</th><th class=\"band\">" + bandAxis() + "</th><th>verdict</th></tr>\n")
	for _, p := range ps {
		if p.rounds == 0 {
			continue
		}
		v := p.verdict()
		l, base := sides(p)
		fmt.Fprintf(&b, "<tr class=\"%s\"><td>%s</td><td class=\"does\">%s</td><td class=\"does\">%s</td><td>%s</td><td class=\"num\">%d</td><td class=\"num\"><b>%.2f×</b></td><td class=\"num\">%s</td><td class=\"band\">%s</td><td class=\"v\">%s</td></tr>\n",
			verdictClass(v), html.EscapeString(p.sc.Name), html.EscapeString(l), html.EscapeString(base), comparedBy(p.sc), p.rounds, p.ratio, p.spreadText(), band(p), v)
	}
	b.WriteString("</table></div>\n<p class=\"legend\">Each ratio is lifenet ÷ baseline (raw std net; net/rpc for the rpc-* rows), " +
		"the median over the pairs; the band is the spread across the pairs, the dot the median, the line 1.0×. " +
		"<span class=\"better\">Better</span> or <span class=\"worse\">worse</span> only when the whole spread is above or below 1.0×; " +
		"<span class=\"noise\">within noise</span> when it crosses 1.0×; a single pair has no spread to judge by. " + html.EscapeString(rangesLegend) + "</p>\n")
	return b.String()
}

// The noise band's geometry: a log₂ axis from bandLo to bandHi.
const (
	bandW, bandH   = 260, 18
	bandPad        = 10
	bandLo, bandHi = 0.25, 4.0
)

func bandX(v float64) float64 {
	v = min(max(v, bandLo), bandHi)
	return bandPad + (math.Log2(v)-math.Log2(bandLo))/(math.Log2(bandHi)-math.Log2(bandLo))*(bandW-2*bandPad)
}

// bandAxis is the band column's heading: the axis with its ticks.
func bandAxis() string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="ratio axis, log scale">`, bandW, bandH)
	for _, t := range []struct {
		v     float64
		label string
	}{{0.25, "0.25×"}, {0.5, "0.5×"}, {1, "1×"}, {2, "2×"}, {4, "4×"}} {
		anchor := "middle"
		switch t.v {
		case bandLo:
			anchor = "start"
		case bandHi:
			anchor = "end"
		}
		x := bandX(t.v)
		if anchor == "start" {
			x = 0
		} else if anchor == "end" {
			x = bandW
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="13" font-size="11" text-anchor="%s">%s</text>`, x, anchor, t.label)
	}
	b.WriteString("</svg>")
	return b.String()
}

// band draws a scenario's ratio on the log axis: the spread across pairs
// as a bar, the median as a dot, parity as a line; values outside the axis
// sit at its ends.
func band(p pair) string {
	color := map[string]string{verdictBetter: "#1e7a45", verdictWorse: "#b03a2e", verdictNoise: "#7f8c8d"}[p.verdict()]
	if color == "" {
		color = "#34495e"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s">`, bandW, bandH, html.EscapeString(bandTitle(p)))
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(bandTitle(p)))
	fmt.Fprintf(&b, `<line x1="%d" y1="9" x2="%d" y2="9" stroke="#ccc"/>`, bandPad, bandW-bandPad)
	for _, t := range []float64{0.5, 2} {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="6" x2="%.1f" y2="12" stroke="#bbb"/>`, bandX(t), bandX(t))
	}
	if p.rounds > 1 {
		x0, x1 := bandX(p.lo), bandX(p.hi)
		fmt.Fprintf(&b, `<rect x="%.1f" y="4" width="%.1f" height="10" rx="2" fill="%s" fill-opacity="0.35"/>`, x0, max(x1-x0, 1.5), color)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="1" x2="%.1f" y2="17" stroke="#333" stroke-width="1.2"/>`, bandX(1), bandX(1))
	fmt.Fprintf(&b, `<circle cx="%.1f" cy="9" r="4" fill="%s"/></svg>`, bandX(p.ratio), color)
	return b.String()
}

// bandTitle is a band's tooltip: ratio and spread, three significant
// digits.
func bandTitle(p pair) string {
	if p.rounds < 2 {
		return fmt.Sprintf("%s×, one pair: no spread", sig3(p.ratio))
	}
	return fmt.Sprintf("%s× (%s–%s× over %d pairs): %s", sig3(p.ratio), sig3(p.lo), sig3(p.hi), p.rounds, p.verdict())
}

// chartsHTML draws the charts, each like for like: lifenet beside its
// baseline, P50 beside P50 and P99 beside P99.
func chartsHTML(ps []pair) string {
	pick := func(keep func(Scenario) bool, val func(*Result) float64, base string) ([]string, []series) {
		var labels []string
		l := series{name: "lifenet", color: colorLifenet}
		r := series{name: base, color: colorRaw}
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
	var b strings.Builder
	if labels, ss := pick(func(s Scenario) bool {
		return s.Mode == "oneway" && s.Frame == 0 && !strings.Contains(s.Name, "-c") && !s.UDPConnect
	}, gbps, "raw (std net)"); len(labels) > 0 {
		b.WriteString(barChart("Bandwidth vs packet size (one-way)", "Gbps", labels, ss, 0))
	}
	if labels, ss := pick(func(s Scenario) bool {
		return s.Mode == "oneway" && (strings.Contains(s.Name, "-c") || s.Clients != 8 && s.Proto == "tcp")
	}, (*Result).pktps, "raw (std net)"); len(labels) > 0 {
		b.WriteString(barChart("Packet rate vs concurrency (one-way)", "packets/s", labels, ss, 0))
	}
	if labels, ss := pick(func(s Scenario) bool { return s.Mode == "pipeline" }, (*Result).clientRate, "raw (std net)"); len(labels) > 0 {
		b.WriteString(barChart("Echo pipeline: echoes per second", "echoes/s", labels, ss, 0))
	}
	var lat []string
	l50 := series{name: "lifenet P50", color: colorLifenet}
	r50 := series{name: "raw P50", color: colorRaw}
	l99 := series{name: "lifenet P99", color: colorLifenetP99}
	r99 := series{name: "raw P99", color: colorRawP99}
	for _, p := range ps {
		if p.sc.Mode != "roundtrip" {
			continue
		}
		lat = append(lat, p.sc.Name)
		var a, c latencies
		if x := clientOf(p.lifenet); x != nil {
			a = *x
		}
		if x := clientOf(p.raw); x != nil {
			c = *x
		}
		l50.values, r50.values = append(l50.values, a.P50), append(r50.values, c.P50)
		l99.values, r99.values = append(l99.values, a.P99), append(r99.values, c.P99)
	}
	if len(lat) > 0 {
		b.WriteString(barChart("Round-trip latency: P50 and P99, lifenet beside raw", "µs", lat, []series{l50, r50, l99, r99}, 0))
	}
	if labels, ss := pick(func(s Scenario) bool { return s.isRPC() && !s.Direct }, (*Result).callRate, "net/rpc"); len(labels) > 0 {
		b.WriteString(barChart("RPC calls/s: lifenet vs net/rpc", "calls/s", labels, ss, 0))
	}
	return b.String()
}
