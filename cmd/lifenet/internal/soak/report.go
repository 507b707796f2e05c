package soak

import (
	"fmt"
	"io"
	"strings"

	"github.com/lifenet/lifenet/transport"
)

// sampleFields formats a sample's resources for one line.
func sampleFields(s Sample) string {
	fds := "-"
	if s.FDs >= 0 {
		fds = fmt.Sprint(s.FDs)
	}
	return fmt.Sprintf("goroutines %d  heap %.1f MiB (live %.1f)  buffers %d  fds %s  sessions %d  pending %d",
		s.Goroutines, float64(s.HeapAlloc)/mib, float64(s.HeapLive)/mib, s.Buffers, fds, s.Sessions, s.Pending)
}

// progressLine prints one sample: time, calls and their rate since the
// previous sample, the resources, CPU use and unexpected errors so far.
func progressLine(w io.Writer, s Sample, base *Sample, all []Sample) {
	prev := base
	if len(all) > 1 {
		prev = &all[len(all)-2]
	}
	dt := (s.At - prev.At).Seconds()
	rate, cpu := 0.0, 0.0
	if dt > 0 {
		rate = float64(s.Calls-prev.Calls) / dt
		cpu = (s.CPU - prev.CPU) / dt * 100
	}
	fmt.Fprintf(w, "soak %5.0fs  calls %d (%.0f/s)  %s  cpu %.0f%%  errors %d\n",
		s.At.Seconds(), s.Calls, rate, sampleFields(s), cpu, s.Errors)
}

// WriteSummary prints the run's calls, outcomes by kind, the samples and
// the verdicts.
func WriteSummary(w io.Writer, r *Report) {
	o, c := &r.Options, &r.Counts
	fmt.Fprintf(w, "soak summary: %.0fs of load, %d connections (%d rpc.Client, %d codec.Client; %.0f%% redial every %d operations), one operation per %v each\n",
		r.Elapsed.Seconds(), o.Conns, o.rpcConns(), o.Conns-o.rpcConns(), o.ChurnFraction*100, o.ChurnEvery, o.Interval)
	echoes := c.ByKind[EchoRPC] + c.ByKind[EchoCodec]
	var calls int64
	for k := range numKinds {
		if k != Redial {
			calls += c.ByKind[k]
		}
	}
	fmt.Fprintf(w, "calls:   %d (%.0f/s); echoes %d: rpc %d, codec %d; 64 B %d, 4 KiB %d, 256 KiB %d\n",
		calls, float64(calls)/max(r.Elapsed.Seconds(), 1e-9), echoes, c.ByKind[EchoRPC], c.ByKind[EchoCodec], c.BySize[0], c.BySize[1], c.BySize[2])
	fmt.Fprintf(w, "faults:  timeouts %d (codec clients' %d brought %d late replies, dropped); panics %d (rpc server counted %d); redials %d\n",
		c.ByKind[Timeout], c.CodecTimeouts, c.LateReplies, c.ByKind[Panicked], r.ServerPanics, c.ByKind[Redial])
	fmt.Fprintf(w, "malformed frames: %d closed; %d to the codec server, which closed %d for protocol errors; %d to the rpc server, which closed %d\n",
		c.ByKind[MalformedShut], c.MalformedToCodec, r.CodecClosed[transport.ReasonProtocol], c.MalformedToRPC, r.RPCClosed[transport.ReasonProtocol])
	var bad []string
	for k := range numKinds {
		if !k.Expected() && c.ByKind[k] > 0 {
			bad = append(bad, fmt.Sprintf("%s %d", k, c.ByKind[k]))
		}
	}
	if len(bad) == 0 {
		bad = []string{"none"}
	}
	fmt.Fprintf(w, "unexpected: %s\n", strings.Join(bad, ", "))
	if n := len(r.Samples); n > 0 && r.Samples[n-1].At > 0 {
		last := r.Samples[n-1]
		fmt.Fprintf(w, "cpu:     %.1f s over the load, %.0f%% of one core (clients and servers together)\n",
			last.CPU-r.Baseline.CPU, (last.CPU-r.Baseline.CPU)/last.At.Seconds()*100)
	}
	held := "no request number held"
	if r.Final.Pending > 0 {
		held = fmt.Sprintf("%d request numbers STILL held", r.Final.Pending)
	}
	fmt.Fprintf(w, "pending: %s by the idle clients %.1fs after the load stopped (timed-out requests' numbers wait for their late replies)\n",
		held, r.PendingDrain.Seconds())
	for _, srv := range []struct {
		name   string
		closed *transport.ReasonCounts
	}{{"codec", &r.CodecClosed}, {"rpc", &r.RPCClosed}} {
		var reasons []string
		for i, n := range srv.closed {
			if n > 0 {
				reasons = append(reasons, fmt.Sprintf("%v %d", transport.Reason(i), n))
			}
		}
		fmt.Fprintf(w, "%s server closes: %s\n", srv.name, strings.Join(reasons, ", "))
	}

	fmt.Fprintf(w, "%8s %8s %10s %9s %8s %6s %8s %8s %9s\n", "t", "gorout", "heap MiB", "live MiB", "buffers", "fds", "sessions", "pending", "calls")
	row := func(label string, s Sample) {
		fds := "-"
		if s.FDs >= 0 {
			fds = fmt.Sprint(s.FDs)
		}
		fmt.Fprintf(w, "%8s %8d %10.1f %9.1f %8d %6s %8d %8d %9d\n", label, s.Goroutines, float64(s.HeapAlloc)/mib,
			float64(s.HeapLive)/mib, s.Buffers, fds, s.Sessions, s.Pending, s.Calls)
	}
	row("base", r.Baseline)
	for _, s := range r.Samples {
		row(fmt.Sprintf("%.0fs", s.At.Seconds()), s)
	}
	row("drained", r.Final)

	for _, v := range r.Verdicts {
		trend := fmt.Sprintf("not judged (%d samples, need %d)", len(r.Samples), MinTrendSamples)
		if v.Trend.Judged {
			verdict := "flat"
			if v.Trend.Rising {
				verdict = "RISING"
			}
			trend = fmt.Sprintf("%s → %s (limit %s) %s", num(v.Trend.From, v.Unit), num(v.Trend.To, v.Unit), num(v.Trend.Limit, v.Unit), verdict)
		}
		back := "back"
		if !v.Returned {
			back = "NOT BACK"
		}
		fmt.Fprintf(w, "%-10s second half %s; drained %s, baseline %s (limit %s) %s\n", v.Metric+":", trend,
			num(v.Drained, v.Unit), num(v.Base, v.Unit), num(v.DrainLimit, v.Unit), back)
	}
	switch {
	case r.Interrupted:
		fmt.Fprintln(w, "verdict: INTERRUPTED")
	case r.Passed() && len(r.Samples) < MinTrendSamples:
		// Too short to say whether anything grows: what passed is the
		// drain back to baseline and the errors, not the trends.
		fmt.Fprintf(w, "verdict: PASS, trends not judged (%d samples, need %d: run longer); drained in %.1fs\n",
			len(r.Samples), MinTrendSamples, r.Drain.Seconds())
	case r.Passed():
		fmt.Fprintf(w, "verdict: PASS (drained in %.1fs)\n", r.Drain.Seconds())
	default:
		fmt.Fprintf(w, "verdict: FAIL (%d)\n", len(r.Failures))
	}
}
