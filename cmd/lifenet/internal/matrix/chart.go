package matrix

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// The charts' colours: lifenet in blues, the baseline in greys, the P99
// bars a darker shade of their side's P50.
const (
	colorLifenet    = "#2b7bb9"
	colorLifenetP99 = "#17466e"
	colorRaw        = "#9a9a9a"
	colorRawP99     = "#555555"
)

// series is one named set of bars in a chart.
type series struct {
	name   string
	color  string
	values []float64 // one per label; 0 or less: no bar
}

// Chart geometry (SVG user units, about pixels at a 1400-pixel page).
const (
	chartWidth  = 1300 // at least: the page's width at 100 % (svg width 100 %)
	chartPlotH  = 260
	chartTop    = 34 // the legend's row
	chartRight  = 16
	fontSize    = 11
	charWidth   = 6.6 // an upper bound of a character's advance at fontSize in a sans-serif font
	labelAngle  = 60  // degrees the scenario labels are turned
	minBarGroup = 14  // narrowest group of bars per label
	logSpan     = 10  // a log scale when the largest value is this many times the smallest or more
	maxBar      = 56  // widest bar
)

// textWidth is an upper bound of the drawn width of s.
func textWidth(s string) float64 { return float64(len([]rune(s))) * charWidth }

// axis maps values to heights: linear from 0, or logarithmic between two
// powers of ten when the values span a decade or more (on a linear scale
// the small ones would not show).
type axis struct {
	log    bool
	lo, hi float64 // linear: 0 and the top tick; log: the exponents of the bottom and top ticks
	ticks  []float64
	format func(float64) string
}

func newAxis(values []float64, ref float64, format func(float64) string) axis {
	lo, hi := math.Inf(1), 0.0
	for _, v := range values {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if ref > 0 {
		lo, hi = min(lo, ref), max(hi, ref)
	}
	if hi > 0 && hi/lo >= logSpan {
		a := axis{log: true, lo: math.Floor(math.Log10(lo)), hi: math.Ceil(math.Log10(hi)), format: format}
		for k := a.lo; k <= a.hi; k++ {
			a.ticks = append(a.ticks, math.Pow10(int(k)))
		}
		return a
	}
	ticks, _ := niceTicks(hi)
	return axis{lo: 0, hi: ticks[len(ticks)-1], ticks: ticks, format: format}
}

// frac is v's height as a fraction of the plot's.
func (a axis) frac(v float64) float64 {
	if a.log {
		return (math.Log10(v) - a.lo) / (a.hi - a.lo)
	}
	return v / a.hi
}

// barChart draws grouped bars as inline SVG, no scripts, no network: the
// width of the page (at least chartWidth wide, scrolling beyond it), a
// log scale when the values span decades, labels measured so that none is
// clipped, and a tooltip with three significant digits on every bar. A
// ref above zero draws a dashed reference line at that value (1.0 on
// ratio charts).
func barChart(title, unit string, labels []string, ss []series, ref float64) string {
	var all []float64
	for _, s := range ss {
		all = append(all, s.values...)
	}
	ax := newAxis(all, ref, tickLabel)
	if ax.hi == 0 || len(labels) == 0 {
		return fmt.Sprintf("<h2>%s</h2><p>no data</p>", html.EscapeString(title))
	}
	if !ax.log && ax.hi < 10 { // Gbps, ratios: plain decimals on the axis
		_, decimals := niceTicks(ax.hi)
		ax.format = func(v float64) string { return strconv.FormatFloat(v, 'f', decimals, 64) }
	}
	// Margins: the left one holds the tick labels and the part of the first
	// scenario label that a turn to the left moves past the plot's edge;
	// the bottom one the longest turned label.
	sin, cos := math.Sin(labelAngle*math.Pi/180), math.Cos(labelAngle*math.Pi/180)
	longest := 0.0
	for _, l := range labels {
		longest = max(longest, textWidth(l))
	}
	tickW := 0.0
	for _, t := range ax.ticks {
		tickW = max(tickW, textWidth(ax.format(t)))
	}
	left := 28 + tickW + 8 // the unit's turned label, the ticks, a gap
	w := max(chartWidth, left+chartRight+float64(len(labels)*max(minBarGroup, 10*len(ss))))
	group := (w - left - chartRight) / float64(len(labels))
	for i, l := range labels { // a label's anchor is its group's centre; its text runs left from there
		left = max(left, textWidth(l)*cos-(float64(i)+0.5)*group+4)
	}
	group = (w - left - chartRight) / float64(len(labels))
	bottom := longest*sin + fontSize + 12
	base := float64(chartTop + chartPlotH) // the plot's bottom edge
	h := base + bottom
	y := func(v float64) float64 { return base - chartPlotH*min(max(ax.frac(v), 0), 1) }

	var b strings.Builder
	fmt.Fprintf(&b, `<h2>%s</h2><div class="chart"><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" width="100%%" style="min-width:%.0fpx" role="img" aria-label="%s">`,
		html.EscapeString(title), w, h, w*0.75, html.EscapeString(title))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, left, base, w-chartRight, base)
	for i, t := range ax.ticks {
		if i > 0 || ax.log {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, left, y(t), w-chartRight, y(t))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="%d" text-anchor="end">%s</text>`, left-6, y(t)+4, fontSize, html.EscapeString(ax.format(t)))
	}
	bar := min(group*0.8/float64(len(ss)), maxBar)
	for gi, l := range labels {
		x0 := left + group*(float64(gi)+0.5) - bar*float64(len(ss))/2 // the group's bars, centred on its label
		for si, s := range ss {
			if gi >= len(s.values) || s.values[gi] <= 0 {
				continue // missing or zero: no bar, no "0 Gbps" tooltip
			}
			v := s.values[gi]
			top := y(v)
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s · %s: %s %s</title></rect>`,
				x0+bar*float64(si), top, max(bar-1, 1), base-top, s.color, html.EscapeString(s.name), html.EscapeString(l), sig3(v), html.EscapeString(unit))
		}
		cx := left + group*(float64(gi)+0.5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="%d" text-anchor="end" transform="rotate(-%d %.1f %.1f)">%s</text>`,
			cx, base+fontSize+4, fontSize, labelAngle, cx, base+fontSize+4, html.EscapeString(l))
	}
	if ref > 0 {
		fmt.Fprintf(&b, `<line class="ref" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#c0392b" stroke-width="1.5" stroke-dasharray="6 4"/>`+
			`<text x="%.1f" y="%.1f" font-size="%d" text-anchor="end" fill="#c0392b">%s× parity</text>`,
			left, y(ref), w-chartRight, y(ref), w-chartRight-2, y(ref)-4, fontSize, strconv.FormatFloat(ref, 'f', 1, 64))
	}
	x := left
	for _, s := range ss {
		fmt.Fprintf(&b, `<rect x="%.1f" y="10" width="12" height="12" fill="%s"/><text x="%.1f" y="20" font-size="12">%s</text>`, x, s.color, x+16, html.EscapeString(s.name))
		x += 16 + textWidth(s.name)*12/fontSize + 24
	}
	scale := "linear scale"
	if ax.log {
		scale = "log scale"
	}
	fmt.Fprintf(&b, `<text x="14" y="%.1f" font-size="%d" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s (%s)</text></svg></div>`,
		base-chartPlotH/2, fontSize, base-chartPlotH/2, html.EscapeString(unit), scale)
	return b.String()
}

// tickLabel is an axis tick: 0, 0.5, 20, 250, 1 k, 2.5 M (ticks are round
// numbers).
func tickLabel(v float64) string {
	for _, u := range []struct {
		at     float64
		suffix string
	}{{1e9, " G"}, {1e6, " M"}, {1e3, " k"}} {
		if v >= u.at {
			return strconv.FormatFloat(v/u.at, 'f', -1, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// sig3 formats v with three significant digits, thousands as k, millions
// as M and billions as G: 0.987, 12.3, 456, 1.23 k, 45.6 M.
func sig3(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	v = roundSig(v, 3)
	for _, u := range []struct {
		at     float64
		suffix string
	}{{1e9, " G"}, {1e6, " M"}, {1e3, " k"}} {
		if math.Abs(v) >= u.at {
			return sigDigits(v/u.at, 3) + u.suffix
		}
	}
	return sigDigits(v, 3)
}

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow10(n - 1 - int(math.Floor(math.Log10(math.Abs(v)))))
	return math.Round(v*p) / p
}

// sigDigits prints v (already rounded) with n significant digits in plain
// notation: 1.20, 12.0, 120.
func sigDigits(v float64, n int) string {
	decimals := n - 1 - int(math.Floor(math.Log10(math.Abs(roundSig(v, n)))))
	return strconv.FormatFloat(v, 'f', max(decimals, 0), 64)
}
