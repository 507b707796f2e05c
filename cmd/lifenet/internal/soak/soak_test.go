package soak_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lifenet/lifenet/cmd/lifenet/internal/soak"
	"github.com/lifenet/lifenet/internal/testutil/leakcheck"
)

// TestShortSoak runs the whole soak for a few seconds with ten connections
// and the faults made frequent enough to occur: it must pass, with every
// kind of fault seen and accounted for, and leave nothing behind.
func TestShortSoak(t *testing.T) {
	leakcheck.Check(t)
	o := soak.Options{
		Duration:      3 * time.Second,
		Conns:         10,
		Interval:      20 * time.Millisecond,
		SampleEvery:   200 * time.Millisecond,
		MalformedRate: 0.02,
		TimeoutRate:   0.03,
		PanicRate:     0.05,
		ChurnFraction: 0.4,
		ChurnEvery:    10,
		SlowFor:       300 * time.Millisecond,
		Seed:          7,
	}
	var progress bytes.Buffer
	r, err := soak.Run(context.Background(), o, &progress)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	soak.WriteSummary(&out, r)
	if !r.Passed() {
		t.Fatalf("soak failed: %q\n%s", r.Failures, out.String())
	}
	c := r.Counts
	t.Logf("calls %d rpc + %d codec echoes; sizes %v; timeouts %d, panics %d, malformed %d, redials %d; %d samples; drained in %v",
		c.ByKind[soak.EchoRPC], c.ByKind[soak.EchoCodec], c.BySize, c.ByKind[soak.Timeout], c.ByKind[soak.Panicked],
		c.ByKind[soak.MalformedShut], c.ByKind[soak.Redial], len(r.Samples), r.Drain)
	for _, k := range []soak.Kind{soak.EchoRPC, soak.EchoCodec, soak.Timeout, soak.Panicked, soak.MalformedShut, soak.Redial} {
		if c.ByKind[k] == 0 {
			t.Errorf("no %s in the run: the fault mix did not exercise it", k)
		}
	}
	for i, n := range c.BySize {
		if n == 0 {
			t.Errorf("no echo of size class %d", i)
		}
	}
	if len(r.Samples) < soak.MinTrendSamples {
		t.Errorf("%d samples: too few for the trend to be judged", len(r.Samples))
	}
	for _, v := range r.Verdicts {
		if !v.Trend.Judged {
			t.Errorf("%s: trend not judged", v.Metric)
		}
	}
	// Pending is sampled from the live clients: with 3% of calls timing out
	// and each timed-out number held ~250 ms for its late reply, about four
	// are held at any moment. Once the workers stop, the late replies come
	// and the idle clients hold none (the drained check, exact).
	peak := 0
	for _, s := range r.Samples {
		peak = max(peak, s.Pending)
	}
	t.Logf("pending: peak %d under load; %d after %v idle (baseline %d)", peak, r.Final.Pending, r.PendingDrain, r.Baseline.Pending)
	if peak == 0 {
		t.Errorf("no sample saw a pending request: %d samples", len(r.Samples))
	}
	if r.Baseline.Pending != 0 || r.Final.Pending != 0 {
		t.Errorf("pending: baseline %d, drained %d; want 0 and 0", r.Baseline.Pending, r.Final.Pending)
	}
	judgedPending := false
	for _, v := range r.Verdicts {
		judgedPending = judgedPending || v.Metric == "pending"
	}
	if !judgedPending {
		t.Errorf("no verdict on pending: %+v", r.Verdicts)
	}
	// Bad frames went to both servers, and each closed exactly as many
	// connections for protocol errors (the judge fails the run otherwise).
	if c.MalformedToCodec == 0 || c.MalformedToRPC == 0 || c.MalformedToCodec+c.MalformedToRPC != c.ByKind[soak.MalformedShut] {
		t.Errorf("malformed frames: %d to codec + %d to rpc, %d closed", c.MalformedToCodec, c.MalformedToRPC, c.ByKind[soak.MalformedShut])
	}
	if got := strings.Count(progress.String(), "\n"); got != len(r.Samples)+1 {
		t.Errorf("%d progress lines for %d samples and the drain:\n%s", got, len(r.Samples), progress.String())
	}
	if !strings.Contains(out.String(), "verdict: PASS") || !strings.Contains(out.String(), "drained") ||
		!strings.Contains(out.String(), "pending:") || !strings.Contains(out.String(), "rpc server closes: ") {
		t.Errorf("summary:\n%s", out.String())
	}
}

func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--minutes", "0"}, "--minutes"},
		{[]string{"--minutes", "-1"}, "--minutes"},
		{[]string{"--seconds", "0"}, "--seconds"},
		{[]string{"--seconds", "NaN"}, "--seconds"},
		{[]string{"--minutes", "1", "--seconds", "5"}, "exclude"},
		{[]string{"--conns", "1"}, "--conns"},
		{[]string{"--conns", "5000"}, "--conns"},
		{[]string{"--interval", "0s"}, "--interval"},
		{[]string{"--sample", "10ms"}, "--sample"},
		{[]string{"--nope"}, "flag provided but not defined"},
		{[]string{"extra"}, "extra"},
	} {
		var out, errOut bytes.Buffer
		code := soak.Main(context.Background(), c.args, &out, &errOut)
		msg := errOut.String()
		if code != 2 || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 || out.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want exit 2 and one line naming %s", c.args, code, msg, out.String(), c.want)
		}
	}
	var out bytes.Buffer
	if code := soak.Main(context.Background(), []string{"-h"}, &out, &out); code != 0 || !strings.Contains(out.String(), "-minutes") {
		t.Errorf("-h: exit %d, %q", code, out.String())
	}
}

// TestInterrupted: a cancelled context ends the load early; the run still
// drains, and Main reports it as not passed (exit 1).
func TestInterrupted(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	code := soak.Main(ctx, []string{"--seconds", "60", "--conns", "4", "--sample", "100ms"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "interrupted after") || !strings.Contains(out.String(), "verdict: INTERRUPTED") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
}
