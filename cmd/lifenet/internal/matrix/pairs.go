package matrix

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// pair is one scenario's lifenet and baseline results over all rounds:
// the median pair (the round whose ratio is the median one, the lower
// middle for an even count), and the per-round ratios. The
// baseline (raw) is raw std net, or net/rpc for the RPC rows; the direct
// RPC path has none.
type pair struct {
	sc           Scenario
	lifenet, raw *Result   // the median pair's runs; without a pair, each side's median run (nil if none succeeded)
	rounds       int       // rounds where both sides produced a rate
	ratio        float64   // median of the per-round lifenet/raw rate ratios
	lo, hi       float64   // their range: the spread across pairs
	byRound      []float64 // the per-round ratios, in round order
}

// The verdicts of a ratio against parity (1.0).
const (
	verdictBetter  = "better"       // the whole spread is above 1.0
	verdictWorse   = "worse"        // the whole spread is below 1.0
	verdictNoise   = "within noise" // the spread crosses 1.0: neither a loss nor a win
	verdictOnePair = "one pair"     // a single pair: no spread to judge by
	verdictNone    = "no ratio"     // a side produced no rate
)

// verdict judges the ratio by its spread across pairs: better or worse
// only when every pair agrees.
func (p pair) verdict() string {
	switch {
	case p.rounds == 0:
		return verdictNone
	case p.rounds == 1:
		return verdictOnePair
	case p.lo > 1:
		return verdictBetter
	case p.hi < 1:
		return verdictWorse
	}
	return verdictNoise
}

// pairs groups results by scenario, in order of first appearance.
func pairs(rs []Result) []pair {
	type runs struct {
		sc           Scenario
		lifenet, raw map[int]*Result // by round
	}
	var order []*runs
	byName := map[string]*runs{}
	for i := range rs {
		r := &rs[i]
		g := byName[r.Name]
		if g == nil {
			g = &runs{sc: r.Scenario, lifenet: map[int]*Result{}, raw: map[int]*Result{}}
			byName[r.Name] = g
			order = append(order, g)
		}
		if r.Impl == "lifenet" {
			g.lifenet[r.Round] = r
		} else {
			g.raw[r.Round] = r
		}
	}
	out := make([]pair, 0, len(order))
	for _, g := range order {
		p := pair{sc: g.sc, lifenet: medianRun(g.lifenet), raw: medianRun(g.raw)}
		type paired struct {
			round int
			ratio float64
		}
		var both []paired
		for _, round := range slices.Sorted(maps.Keys(g.lifenet)) {
			if l, r := g.lifenet[round], g.raw[round]; l.rate() > 0 && r.rate() > 0 {
				ratio := l.rate() / r.rate()
				p.byRound = append(p.byRound, ratio)
				both = append(both, paired{round, ratio})
			}
		}
		if len(both) > 0 {
			ratios := slices.Sorted(slices.Values(p.byRound))
			p.rounds, p.ratio, p.lo, p.hi = len(ratios), median(ratios), ratios[0], ratios[len(ratios)-1]
			// The rates shown are one pair's, so that they agree with the
			// ratio beside them: each side's own median run may come from
			// different rounds, whose quotient is no pair's.
			slices.SortStableFunc(both, func(a, b paired) int { return cmp.Compare(a.ratio, b.ratio) })
			mid := both[(len(both)-1)/2].round
			p.lifenet, p.raw = g.lifenet[mid], g.raw[mid]
		}
		out = append(out, p)
	}
	return out
}

// rate is the figure a scenario is compared by: the server's packet rate
// for one-way runs (the server's view: what arrived), calls/s for RPC
// runs, the client's message rate otherwise.
func (r *Result) rate() float64 {
	if r != nil && r.Mode == "oneway" {
		return r.pktps()
	}
	if r != nil && r.isRPC() {
		return r.callRate()
	}
	return r.clientRate()
}

// medianRun returns the run with the median rate (the lower middle one
// for an even count), or nil when no run produced a rate.
func medianRun(byRound map[int]*Result) *Result {
	var ok []*Result
	for _, r := range byRound {
		if r.rate() > 0 {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	slices.SortFunc(ok, func(a, b *Result) int {
		return cmp.Or(cmp.Compare(a.rate(), b.rate()), cmp.Compare(a.Round, b.Round))
	})
	return ok[(len(ok)-1)/2]
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// ratioText is the ratio cell: "1.02×", or "1.02× (0.95–1.10, 5)" over
// several rounds (the median and the spread across pairs), or "–" when a
// side has no rate.
func (p pair) ratioText() string {
	switch {
	case p.rounds == 0:
		return "–"
	case p.rounds == 1:
		return fmt.Sprintf("%.2f×", p.ratio)
	}
	return fmt.Sprintf("%.2f× (%.2f–%.2f, %d)", p.ratio, p.lo, p.hi, p.rounds)
}

// spreadText is the spread cell: "0.95–1.10×", or "–" with fewer than two
// pairs.
func (p pair) spreadText() string {
	if p.rounds < 2 {
		return "–"
	}
	return fmt.Sprintf("%.2f–%.2f×", p.lo, p.hi)
}
