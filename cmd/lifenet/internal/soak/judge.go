package soak

import (
	"math"
	"slices"
)

// Tolerance is how far a metric may rise before the rise counts: Abs in the
// metric's own unit plus Rel, a fraction of the reference value. Both are
// needed: a small count (sessions, fds) moves by whole units, a large one
// (heap bytes) by a share of itself.
type Tolerance struct {
	Abs float64
	Rel float64
}

// Limit is the highest value that still counts as no rise from ref.
func (t Tolerance) Limit(ref float64) float64 { return ref + t.Abs + t.Rel*math.Abs(ref) }

// MinTrendSamples is the fewest load samples a trend is judged on: two per
// quarter, so each quarter's median is of more than one sample.
const MinTrendSamples = 8

// TrendResult is the verdict of Trend.
type TrendResult struct {
	Judged bool    // false: too few samples (fewer than MinTrendSamples)
	Rising bool    // the last quarter's median passed Limit
	From   float64 // median of the third quarter of the samples
	To     float64 // median of the last quarter
	Limit  float64 // the highest To that is not a rise
}

// Trend judges whether series, samples taken at equal intervals under
// steady load, rises over its second half.
//
// It compares the median of the last quarter with the median of the third
// quarter, allowing tol above the latter. Medians ignore a spike or a dip
// in a minority of samples (a GC cycle, a burst of slow calls, a batch of
// redials landing on one sample) that would swing a mean or a least-squares
// slope; a real leak moves every sample of the last quarter, so its median
// moves by about the leak's rate times a quarter of the run, and is caught
// once that exceeds the tolerance. The first half is left out: pools, heap
// targets and connection counts warm up there. A rise that falls back
// before the end (drop-back) is not a trend.
func Trend(series []float64, tol Tolerance) TrendResult {
	n := len(series)
	if n < MinTrendSamples {
		return TrendResult{}
	}
	third := series[n/2 : n*3/4]
	last := series[n*3/4:]
	r := TrendResult{Judged: true, From: Median(third), To: Median(last)}
	r.Limit = tol.Limit(r.From)
	r.Rising = r.To > r.Limit
	return r
}

// Returned reports whether final, a sample after the load was drained, is
// back within tol of base, the sample before the load started. Falling
// below the baseline is fine.
func Returned(base, final float64, tol Tolerance) bool { return final <= tol.Limit(base) }

// Median returns the median of v (the mean of the middle two for an even
// count), or 0 for none. v is not modified.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
