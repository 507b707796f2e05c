package soak_test

import (
	"math"
	"testing"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/soak"
)

func TestTrend(t *testing.T) {
	tol := soak.Tolerance{Abs: 10, Rel: 0.05} // at 800: a rise of more than 50
	for _, c := range []struct {
		name   string
		series []float64
		judged bool
		rising bool
		from   float64
		to     float64
	}{
		{"flat", []float64{800, 800, 800, 800, 800, 800, 800, 800, 800, 800, 800, 800}, true, false, 800, 800},
		// 25 a sample: 75 between the quarters' medians, past the 58.75 allowed at 975.
		{"rising", []float64{800, 825, 850, 875, 900, 925, 950, 975, 1000, 1025, 1050, 1075}, true, true, 975, 1050},
		// 10 a sample: 30 between the medians, within the tolerance; the
		// drained check, not the trend, catches a leak this slow.
		{"slow-rise", []float64{800, 810, 820, 830, 840, 850, 860, 870, 880, 890, 900, 910}, true, false, 870, 900},
		// Spikes of ±40 on one sample in three: the medians stay put.
		{"noisy-flat", []float64{790, 840, 800, 760, 805, 795, 840, 800, 798, 760, 802, 840, 799, 801, 760, 800}, true, false, 800, 799.5},
		// A surge in the third quarter that falls back: not a trend.
		{"drop-back", []float64{800, 800, 800, 800, 800, 800, 950, 960, 950, 800, 800, 800}, true, false, 950, 800},
		// A late leak: every sample of the last quarter up by 60.
		{"step-up-at-end", []float64{800, 800, 800, 800, 800, 800, 800, 800, 800, 860, 860, 860}, true, true, 800, 860},
		// A spike on the very last sample alone: a median of three ignores it.
		{"last-sample-spike", []float64{800, 800, 800, 800, 800, 800, 800, 800, 800, 800, 800, 2000}, true, false, 800, 800},
		{"falling", []float64{900, 890, 880, 870, 860, 850, 840, 830, 820, 810, 800, 790}, true, false, 830, 800},
		{"too-few", []float64{800, 900, 1000, 1100, 1200, 1300, 1400}, false, false, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := soak.Trend(c.series, tol)
			if r.Judged != c.judged || r.Rising != c.rising {
				t.Errorf("judged %v rising %v (%+v); want judged %v rising %v", r.Judged, r.Rising, r, c.judged, c.rising)
			}
			if r.From != c.from || r.To != c.to {
				t.Errorf("medians %g → %g, want %g → %g", r.From, r.To, c.from, c.to)
			}
			if r.Judged && r.Limit != tol.Limit(r.From) {
				t.Errorf("limit %g, want %g", r.Limit, tol.Limit(r.From))
			}
		})
	}
}

func TestReturned(t *testing.T) {
	for _, c := range []struct {
		name        string
		base, final float64
		tol         soak.Tolerance
		want        bool
	}{
		{"same", 11, 11, soak.Tolerance{}, true},
		{"one over an exact limit", 0, 1, soak.Tolerance{}, false},
		{"below", 8, 6, soak.Tolerance{Abs: 2}, true},
		{"within abs", 8, 10, soak.Tolerance{Abs: 2}, true},
		{"past abs", 8, 11, soak.Tolerance{Abs: 2}, false},
		{"within abs+rel", 2, 6.9, soak.Tolerance{Abs: 4, Rel: 0.5}, true},
		{"past abs+rel", 2, 7.1, soak.Tolerance{Abs: 4, Rel: 0.5}, false},
	} {
		if got := soak.Returned(c.base, c.final, c.tol); got != c.want {
			t.Errorf("%s: Returned(%g, %g, %+v) = %v, want %v", c.name, c.base, c.final, c.tol, got, c.want)
		}
	}
}

func TestMedian(t *testing.T) {
	in := []float64{5, 1, 4, 2}
	for _, c := range []struct {
		v    []float64
		want float64
	}{
		{nil, 0}, {[]float64{7}, 7}, {[]float64{3, 1, 2}, 2}, {in, 3}, {[]float64{math.Inf(1), 1, 2}, 2},
	} {
		if got := soak.Median(c.v); got != c.want {
			t.Errorf("Median(%v) = %g, want %g", c.v, got, c.want)
		}
	}
	if in[0] != 5 || in[3] != 2 {
		t.Errorf("Median sorted its argument: %v", in)
	}
}
