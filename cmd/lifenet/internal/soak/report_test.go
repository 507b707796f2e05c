package soak

import (
	"strings"
	"testing"
)

// A run too short for its trends to be judged does not pass as if they
// had been: its verdict says they were not.
func TestShortRunsVerdictSaysTrendsWereNotJudged(t *testing.T) {
	var short, long strings.Builder
	WriteSummary(&short, &Report{Samples: make([]Sample, MinTrendSamples-1)})
	WriteSummary(&long, &Report{Samples: make([]Sample, MinTrendSamples)})
	if !strings.Contains(short.String(), "verdict: PASS, trends not judged (7 samples, need 8") {
		t.Errorf("a run of %d samples:\n%s", MinTrendSamples-1, short.String())
	}
	if !strings.Contains(long.String(), "verdict: PASS (drained in") {
		t.Errorf("a run of %d samples:\n%s", MinTrendSamples, long.String())
	}
}
