package soak

import (
	"fmt"

	"github.com/lifenet/lifenet/transport"
)

// judge fills r.Verdicts and r.Failures.
func judge(r *Report) {
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	for _, m := range judged {
		if m.onlyWhen != nil && !m.onlyWhen(r.Baseline) {
			continue
		}
		series := make([]float64, len(r.Samples))
		for i, s := range r.Samples {
			series[i] = m.of(s)
		}
		tol := m.trend
		tol.Abs += m.perConn * float64(r.Options.Conns)
		v := Verdict{Metric: m.name, Unit: m.unit, Trend: Trend(series, tol), Base: m.of(r.Baseline), Drained: m.of(r.Final)}
		v.DrainLimit = m.drained.Limit(v.Base)
		v.Returned = Returned(v.Base, v.Drained, m.drained)
		r.Verdicts = append(r.Verdicts, v)
		if v.Trend.Rising {
			fail("%s trend upward over the second half: median %s in the third quarter, %s in the last (limit %s)",
				m.name, num(v.Trend.From, m.unit), num(v.Trend.To, m.unit), num(v.Trend.Limit, m.unit))
		}
		if !v.Returned {
			fail("%s did not return to baseline after the drain: %s, baseline %s (limit %s)",
				m.name, num(v.Drained, m.unit), num(v.Base, m.unit), num(v.DrainLimit, m.unit))
		}
	}

	c := &r.Counts
	for k := range numKinds {
		if !k.Expected() && c.ByKind[k] > 0 {
			fail("%d × %s (first: %s)", c.ByKind[k], k, c.First[k])
		}
	}
	if c.ByKind[EchoRPC]+c.ByKind[EchoCodec] == 0 {
		fail("no echo call succeeded")
	}
	if got := int64(r.ServerPanics); got != c.ByKind[Panicked] {
		fail("panics: the rpc server counted %d, its callers got %d error replies", got, c.ByKind[Panicked])
	}
	if c.LateReplies > c.CodecTimeouts {
		fail("the codec clients dropped %d replies matching no request; their %d timeouts explain at most as many", c.LateReplies, c.CodecTimeouts)
	}
	if r.ServerDropped != 0 {
		fail("the rpc server dropped %d requests unanswered", r.ServerDropped)
	}
	for _, srv := range []struct {
		name      string
		closed    *transport.ReasonCounts
		malformed int64
	}{{"codec", &r.CodecClosed, c.MalformedToCodec}, {"rpc", &r.RPCClosed, c.MalformedToRPC}} {
		if got := int64(srv.closed[transport.ReasonProtocol]); got != srv.malformed {
			fail("malformed frames: the %s server closed %d connections for protocol errors, %d bad frames were sent to it", srv.name, got, srv.malformed)
		}
		// Reasons no well-behaved client of this load should cause.
		// (Errors are left out: a late slow reply written as its client
		// closes may meet a reset.)
		for _, reason := range []transport.Reason{transport.ReasonIdle, transport.ReasonFirstByte, transport.ReasonSlowConsumer,
			transport.ReasonWriteTimeout, transport.ReasonLimit} {
			if n := srv.closed[reason]; n > 0 {
				fail("the %s server closed %d connections with reason %v", srv.name, n, reason)
			}
		}
	}
	if r.BuffersAtClose > 0 {
		fail("%d pooled buffers still outstanding after the servers closed", r.BuffersAtClose)
	}
}

// num formats a metric's value in its unit.
func num(v float64, unit string) string {
	if unit == "" {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}
