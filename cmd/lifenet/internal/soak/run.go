package soak

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/pooltrack"
	"github.com/lifenet/lifenet/transport"
)

// Report is the outcome of a run.
type Report struct {
	Options     Options
	Interrupted bool          // ctx ended before the load phase did
	Elapsed     time.Duration // of the load phase
	Baseline    Sample        // before the load (after forced GCs)
	Samples     []Sample      // every SampleEvery under load
	Final       Sample        // after the drain (after forced GCs)
	Drain       time.Duration // from stopping the load to Final
	// PendingDrain is how long, once the workers stopped, their idle
	// clients took to hold no request numbers (Final.Pending is what they
	// held then, if the wait ran out).
	PendingDrain time.Duration
	Counts       Counts
	// What the servers counted.
	ServerPanics   uint64                 // rpc.Server.Stats().Panics
	ServerDropped  uint64                 // rpc.Server.Stats().Dropped
	CodecClosed    transport.ReasonCounts // the codec server's sessions ended under load, by reason
	RPCClosed      transport.ReasonCounts // the same for the rpc server
	BuffersAtClose int                    // pooled buffers outstanding once the servers closed
	Verdicts       []Verdict
	Failures       []string // one line each; empty: the run passed
}

// Verdict is one metric's judgement.
type Verdict struct {
	Metric        string
	Unit          string
	Trend         TrendResult
	Base, Drained float64
	DrainLimit    float64
	Returned      bool
}

// Passed reports whether the run found nothing wrong.
func (r *Report) Passed() bool { return len(r.Failures) == 0 && !r.Interrupted }

// Run soaks the servers for o.Duration, printing a line per sample to
// progress, and judges the samples and counts. It returns an error only
// when the run could not start; what it found is in the Report.
func Run(ctx context.Context, o Options, progress io.Writer) (*Report, error) {
	o.fill()
	if err := o.validate(); err != nil {
		return nil, err
	}
	// Tracking costs a mutex and a stack capture per buffer taken: a few
	// per cent of a core at the default load, and the only way to count
	// buffers outstanding (packet exposes no counter without it).
	mark := trackBuffers()
	srv, err := startServers(ctx, &o)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	cnt := &counters{}
	smp := &sampler{mark: mark, srv: srv, cnt: cnt, start: time.Now()}
	if err := warmUp(ctx, &o, srv); err != nil {
		return nil, err
	}
	r := &Report{Options: o, Baseline: smp.collected()}
	codecBefore := srv.codec.Transport().Stats().Closed
	rpcBefore := srv.rpc.Transport().Stats().Closed

	l := newLoad(&o, srv, cnt)
	smp.pending = l.pending
	smp.start = time.Now()
	r.Baseline.At = 0
	if err := l.start(ctx); err != nil {
		return nil, fmt.Errorf("soak: dialling the clients: %w", err)
	}
	end := time.NewTimer(o.Duration)
	tick := time.NewTicker(o.SampleEvery)
	func() {
		defer end.Stop()
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				r.Interrupted = true
				return
			case <-end.C:
				return
			case <-tick.C:
				s := smp.take()
				r.Samples = append(r.Samples, s)
				progressLine(progress, s, &r.Baseline, r.Samples)
			}
		}
	}()
	r.Elapsed = time.Since(smp.start)
	stopped := time.Now()
	l.halt()
	pending := drainPending(l, o.Settle)
	r.PendingDrain = time.Since(stopped)
	l.closeAll()
	r.Final = drain(srv, smp, &r.Baseline, o.Settle)
	r.Final.Pending = pending // closed clients hold nothing: judge what the open, idle ones held
	r.Drain = time.Since(stopped)
	fmt.Fprintf(progress, "soak drained in %.1fs (no request pending after %.1fs): %s\n",
		r.Drain.Seconds(), r.PendingDrain.Seconds(), sampleFields(r.Final))

	r.Counts = cnt.snapshot()
	st := srv.rpc.Stats()
	r.ServerPanics, r.ServerDropped = st.Panics, st.Dropped
	// The warm-up's closes are not the load's.
	for i, n := range srv.codec.Transport().Stats().Closed {
		r.CodecClosed[i] = n - codecBefore[i]
	}
	for i, n := range srv.rpc.Transport().Stats().Closed {
		r.RPCClosed[i] = n - rpcBefore[i]
	}
	srv.close()
	r.BuffersAtClose = settleBuffers(mark, 5*time.Second)
	judge(r)
	return r, nil
}

// warmUp makes one call of each kind and closes the connections, so that
// what the first connection starts for good (the transport's coarse clock,
// the pools' first buffers) is already in the baseline.
func warmUp(ctx context.Context, o *Options, srv *servers) error {
	l := newLoad(o, srv, &counters{})
	for _, isRPC := range []bool{true, false} {
		c, err := l.dial(ctx, isRPC)
		if err != nil {
			return fmt.Errorf("soak: warm-up dial: %w", err)
		}
		cctx, cancel := context.WithTimeout(ctx, callDeadline)
		k, err := c.echo(cctx, l.pattern[:sizeMedium])
		cancel()
		l.release(c)
		if err != nil || !k.Expected() {
			return fmt.Errorf("soak: warm-up call: %v (%v)", err, k)
		}
	}
	if k, err := sendMalformed(srv.codecAddr, true); k != MalformedShut {
		return fmt.Errorf("soak: warm-up malformed frame: %v (%v)", err, k)
	}
	waitFor(5*time.Second, func() bool { return srv.sessions() == 0 })
	return nil
}

// drainPending waits for the stopped workers' open clients to hold no
// request number, and returns how many they still hold when it gives up.
//
// Every operation has returned by now, so what is left are the numbers of
// timed-out requests, quarantined so that a late reply cannot be taken for
// a newer request's. Each comes back when its late reply arrives — SlowFor
// after the request, since both servers answer every slow call on a live
// connection — or, failing that, when the quarantine ends, one request
// timeout after the call gave up (codec.DefaultRequestTimeout, 30 s, for
// the codec clients; the rpc clients' 15 s is shorter), plus a sweep. The
// wait allows for the second path, plus settle for a loaded machine, so
// that the judgement is exact (back to 0) rather than within a bound that
// would hide a number or two lost for good; on a healthy run the late
// replies come and the wait is about SlowFor.
func drainPending(l *load, settle time.Duration) int {
	n := 0
	waitFor(codec.DefaultRequestTimeout+settle, func() bool {
		n = l.pending()
		return n == 0
	})
	return n
}

// drain waits, up to settle, for every judged metric to be back within
// its drained tolerance of base (closes finish asynchronously: a server
// notices a client's close when it next reads), and returns the last sample.
func drain(srv *servers, smp *sampler, base *Sample, settle time.Duration) Sample {
	var s Sample
	waitFor(settle, func() bool {
		s = smp.collected()
		if !srv.quiet() {
			return false
		}
		for _, m := range judged {
			if m.onlyWhen != nil && !m.onlyWhen(s) {
				continue
			}
			if !Returned(m.of(*base), m.of(s), m.drained) {
				return false
			}
		}
		return true
	})
	return s
}

// settleBuffers waits up to wait for every buffer taken since mark to be
// released and returns how many are still out.
func settleBuffers(mark uint64, wait time.Duration) int {
	n := 0
	waitFor(wait, func() bool {
		n = len(pooltrack.Since(mark))
		return n == 0
	})
	return n
}

// waitFor polls cond every 100 ms until it holds or wait has passed, and
// reports whether it held.
func waitFor(wait time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(wait)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// trackBuffers switches on tracking of pooled buffers for the run and
// returns a mark: pooltrack.Since(mark) lists the buffers taken since.
func trackBuffers() uint64 {
	pooltrack.Enable()
	return pooltrack.Seq()
}
