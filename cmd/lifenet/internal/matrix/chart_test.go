package matrix

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestSig3(t *testing.T) {
	for v, want := range map[float64]string{
		0.98765: "0.988", 12.345: "12.3", 68: "68.0", 456.4: "456", 999.6: "1.00 k", 1234.5: "1.23 k",
		12345678: "12.3 M", 2.5e9: "2.50 G", 0.0012345: "0.00123", 0: "0",
	} {
		if got := sig3(v); got != want {
			t.Errorf("sig3(%v) = %q, want %q", v, got, want)
		}
	}
}

var (
	viewBox   = regexp.MustCompile(`viewBox="0 0 ([\d.]+) ([\d.]+)"`)
	turned    = regexp.MustCompile(`<text x="([\d.]+)" y="([\d.]+)" font-size="11" text-anchor="end" transform="rotate\(-60 [^)]*\)">([^<]*)</text>`)
	tickText  = regexp.MustCompile(`<text x="([\d.]+)" y="[\d.]+" font-size="11" text-anchor="end">([^<]*)</text>`)
	tooltip   = regexp.MustCompile(`<title>[^<]*: ([^ <]+)(?: [kMG])? [^<]*</title>`)
	legendRow = regexp.MustCompile(`<rect x="([\d.]+)" y="10" width="12" height="12" fill="[^"]*"/><text x="[\d.]+" y="20" font-size="12">([^<]*)</text>`)
)

// The charts switch to a log scale when the values span two decades, draw
// every label inside the picture, and give three significant digits in
// each bar's tooltip.
func TestBarChart(t *testing.T) {
	labels := []string{"tcp-32B-lengthfield-serial-16C", "b", "udp-64KB-c32-a-rather-long-name"}
	ss := []series{
		{name: "lifenet P50", color: colorLifenet, values: []float64{12.3456, 4567.8, 98765.4}},
		{name: "raw P50", color: colorRaw, values: []float64{11, 0, 101234}},
		{name: "lifenet P99", color: colorLifenetP99, values: []float64{40, 5000, 200000}},
		{name: "raw P99", color: colorRawP99, values: []float64{41, 6000, 210000}},
	}
	svg := barChart("latency", "µs", labels, ss, 0)
	if !strings.Contains(svg, "µs (log scale)") {
		t.Errorf("values over four decades on a linear scale:\n%s", svg)
	}
	var ticks []string
	for _, m := range tickText.FindAllStringSubmatch(svg, -1) {
		ticks = append(ticks, m[2])
	}
	if strings.Join(ticks, " ") != "10 100 1 k 10 k 100 k 1 M" {
		t.Errorf("log ticks %q", ticks)
	}
	vb := viewBox.FindStringSubmatch(svg)
	w, _ := strconv.ParseFloat(vb[1], 64)
	h, _ := strconv.ParseFloat(vb[2], 64)
	if w < chartWidth {
		t.Errorf("chart %v wide: narrower than the page", w)
	}
	ms := turned.FindAllStringSubmatch(svg, -1)
	if len(ms) != len(labels) {
		t.Fatalf("%d labels drawn", len(ms))
	}
	sin, cos := math.Sin(math.Pi/3), math.Cos(math.Pi/3)
	for _, m := range ms {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		if l := textWidth(m[3]); x-l*cos < 0 || y+l*sin > h {
			t.Errorf("label %q at (%v, %v) runs out of the %v×%v picture", m[3], x, y, w, h)
		}
	}
	for _, m := range tickText.FindAllStringSubmatch(svg, -1) {
		if x, _ := strconv.ParseFloat(m[1], 64); x-textWidth(m[2]) < 20 {
			t.Errorf("tick %q at %v overlaps the unit label", m[2], x)
		}
	}
	legend := legendRow.FindAllStringSubmatch(svg, -1)
	for i := 1; i < len(legend); i++ {
		prev, _ := strconv.ParseFloat(legend[i-1][1], 64)
		cur, _ := strconv.ParseFloat(legend[i][1], 64)
		if cur < prev+16+textWidth(legend[i-1][2])*12/11 {
			t.Errorf("legend %q overlaps %q", legend[i][2], legend[i-1][2])
		}
	}
	tips := tooltip.FindAllStringSubmatch(svg, -1)
	if len(tips) != 11 { // 12 bars, one of them 0
		t.Fatalf("%d tooltips", len(tips))
	}
	for _, m := range tips {
		if digits := strings.Trim(strings.ReplaceAll(m[1], ".", ""), "0"); len(m[1]) > 5 || len(digits) > 3 {
			t.Errorf("tooltip value %q: not three significant digits", m[1])
		}
	}
	if !strings.Contains(svg, "<title>lifenet P50 · tcp-32B-lengthfield-serial-16C: 12.3 µs</title>") ||
		!strings.Contains(svg, "<title>raw P50 · udp-64KB-c32-a-rather-long-name: 101 k µs</title>") {
		t.Errorf("tooltips:\n%s", svg)
	}
	// Within two decades the scale stays linear, from 0.
	lin := barChart("rate", "calls/s", []string{"a", "b"}, []series{{name: "x", color: colorLifenet, values: []float64{120000, 95000}}}, 0)
	if !strings.Contains(lin, "calls/s (linear scale)") || !strings.Contains(lin, ">0<") || !strings.Contains(lin, ">100 k<") {
		t.Errorf("linear chart:\n%s", lin)
	}
}

// The verdict band puts the spread and the median on a log axis around
// 1.0, coloured by the verdict, with the figures in its tooltip.
func TestVerdictBand(t *testing.T) {
	p := pair{rounds: 3, ratio: 0.5, lo: 0.25, hi: 1}
	b := band(p)
	if !strings.Contains(b, "<title>0.500× (0.250–1.00× over 3 pairs): within noise</title>") || !strings.Contains(b, `fill="#7f8c8d"`) {
		t.Errorf("band %s", b)
	}
	if x := bandX(1); math.Abs(x-bandW/2) > 0.01 {
		t.Errorf("1.0 at %v, want the middle %v", x, bandW/2)
	}
	if bandX(0.01) != bandX(bandLo) || bandX(100) != bandX(bandHi) {
		t.Error("values outside the axis are not held at its ends")
	}
	if b := band(pair{rounds: 3, ratio: 0.8, lo: 0.7, hi: 0.9}); !strings.Contains(b, `fill="#b03a2e"`) {
		t.Errorf("a worse band is not red: %s", b)
	}
	if b := band(pair{rounds: 1, ratio: 1.5, lo: 1.5, hi: 1.5}); strings.Contains(b, "<rect") || !strings.Contains(b, "one pair: no spread") {
		t.Errorf("one pair drawn with a spread: %s", b)
	}
}
