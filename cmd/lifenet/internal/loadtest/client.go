package loadtest

import (
	"github.com/lifenet/lifenet/internal/cpustat"

	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lifenet/lifenet/codec"
)

// Summary is the client's result: the SUMMARY line (NetLoadTest's keys
// plus impl, p999 and cpuPerMsg). Fields that do not apply are omitted.
// SentBytes counts every mode's requests; in round trips MsgsPerSec is
// requests answered per second.
type Summary struct {
	Mode          string  `json:"mode"`
	Protocol      string  `json:"protocol"`
	RecvMode      string  `json:"recvMode"`
	Impl          string  `json:"impl"`
	Client        string  `json:"client,omitempty"` // "raw" when the client is the raw one whatever Impl (UDP codec runs)
	Codec         string  `json:"codec"`
	Replies       string  `json:"replies,omitempty"` // codec echo runs: "matched" (each reply to its request, as a caller) or "counted" (by bytes)
	Window        int     `json:"window,omitempty"`
	Clients       int     `json:"clients"`
	Size          int     `json:"size"`
	Frame         int     `json:"frame"`
	Elapsed       float64 `json:"elapsed"`
	SentBytes     uint64  `json:"sentBytes"`
	AllocPerMsg   float64 `json:"allocPerMsg"`
	GC            uint32  `json:"gc"`
	CPUPerMsg     float64 `json:"cpuPerMsg"`           // client CPU µs per message
	InProcess     bool    `json:"inProcess,omitempty"` // the server ran in this process: AllocPerMsg, GC and CPUPerMsg are the whole process's, the server's share included
	LatencyCount  int64   `json:"latencyCount,omitempty"`
	P50           float64 `json:"p50,omitempty"`
	P95           float64 `json:"p95,omitempty"`
	P99           float64 `json:"p99,omitempty"`
	P999          float64 `json:"p999,omitempty"`
	Avg           float64 `json:"avg,omitempty"`
	Max           float64 `json:"max,omitempty"`
	RecvBytes     uint64  `json:"recvBytes,omitempty"`
	MsgsPerSec    float64 `json:"msgsPerSec,omitempty"`
	MBps          float64 `json:"mbps,omitempty"`
	FramesPerSec  float64 `json:"framesPerSec,omitempty"`
	IntegrityDiff *int64  `json:"integrityDiff,omitempty"`
	DrainSeconds  float64 `json:"drainSeconds,omitempty"` // pipeline: from the end of sending to the last echo
	ConnErrors    int64   `json:"connErrors,omitempty"`   // connections whose send or receive failed mid-run
	FirstError    string  `json:"firstError,omitempty"`
	LossPct       float64 `json:"lossPct,omitempty"`
	Warning       string  `json:"warning,omitempty"`     // UDP: more than LossWarnPct of the datagrams lost
	Interrupted   bool    `json:"interrupted,omitempty"` // ctx ended (SIGINT, SIGTERM) before the run did: Elapsed is the time that ran
	Unanswered    int64   `json:"unanswered,omitempty"`  // interrupted: messages sent whose echoes had not come (not a loss)
}

// LossWarnPct is the UDP loss, in per cent of the datagrams sent, above
// which a run warns that its rates measure the loss.
const LossWarnPct = 5.0

// run is one client run's shared state.
type run struct {
	cfg       *Config
	addr      string
	payload   []byte    // one message (with a codec, a valid frame): the prime sends it
	ring      frameRing // the messages the load sends (frames.go)
	sent      atomic.Uint64
	received  atomic.Uint64
	failures  atomic.Int64          // connections that failed mid-run
	firstErr  atomic.Pointer[error] // of them, the first error
	hist      *hdrhistogram.Histogram
	histMu    sync.Mutex
	drainTime time.Duration // pipeline: from the end of sending to the last echo
}

// RunClient runs the load against addr and returns the summary.
func RunClient(ctx context.Context, cfg Config, addr string, out io.Writer) (Summary, error) {
	r := &run{cfg: &cfg, addr: addr, payload: make([]byte, cfg.Size),
		hist: hdrhistogram.New(1, 60_000_000, 3)} // 1 µs … 60 s
	for i := range r.payload {
		r.payload[i] = byte(rand.IntN(256))
	}
	most := 1
	if r.windowed() {
		most = r.inFlight()
	}
	r.ring = newFrameRing(&cfg, r.payload, most)
	r.payload = r.ring.buf[:cfg.Size]
	useCodec := cfg.Codec != "none" && !cfg.rawClient()
	var conns []clientConn
	var codecClients []*codec.Client
	var baseConns []net.Conn
	switch {
	case useCodec:
		cc, err := r.dialCodec(ctx)
		if err != nil {
			return Summary{}, err
		}
		codecClients = cc
		defer closeCodec(cc)
		sleep(ctx, cfg.Warmup)
	case cfg.baselineCodec(): // as lifenet's codec client: connected, then the warm-up's pause, no priming
		bc, err := r.dialBaselineCodec(ctx)
		if err != nil {
			return Summary{}, err
		}
		baseConns = bc
		defer closeConns(bc)
		sleep(ctx, cfg.Warmup)
	default:
		conns = make([]clientConn, cfg.Clients)
		for i := range conns {
			c, err := dial(ctx, &cfg, addr)
			if err != nil {
				closeAll(conns[:i])
				return Summary{}, fmt.Errorf("connect to %s: %w", addr, err)
			}
			conns[i] = c
		}
		defer closeAll(conns)
		sleep(ctx, cfg.Warmup)
		if err := r.prime(ctx); err != nil {
			return Summary{}, fmt.Errorf("prime traffic: %w", err)
		}
	}

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc0, gc0, cpu0 := ms.TotalAlloc, ms.NumGC, cpustat.Seconds()
	start := time.Now()
	stopProgress := r.progress(ctx, start)
	var err error
	switch {
	case useCodec:
		err = r.runCodec(ctx, codecClients)
	case baseConns != nil:
		err = r.runBaselineCodec(ctx, baseConns)
	case cfg.OneWay:
		r.oneway(ctx, conns)
	case cfg.Mode == "roundtrip":
		err = r.roundtrip(ctx, conns)
	default:
		r.pipeline(ctx, conns)
	}
	stopProgress()
	elapsed := time.Since(start).Seconds() // one-way: until the last send returned
	runtime.ReadMemStats(&ms)
	s := r.summary(elapsed, ctx.Err() != nil)
	s.Warning = lossWarning(s)
	msgs := float64(s.SentBytes) / float64(cfg.Size)
	if s.LatencyCount > 0 {
		msgs = float64(s.LatencyCount)
	}
	if msgs > 0 {
		s.AllocPerMsg = round(float64(ms.TotalAlloc-alloc0)/msgs, 2)
		s.CPUPerMsg = round((cpustat.Seconds()-cpu0)/msgs*1e6, 3)
	}
	s.GC = ms.NumGC - gc0
	return s, err
}

// prime sends warm-up traffic on a fresh connection (NetLoadTest: 4 MiB
// worth, between 4 and 64 messages) so that cold-start costs stay out of
// the window.
func (r *run) prime(ctx context.Context) error {
	c, err := dial(ctx, r.cfg, r.addr)
	if err != nil {
		return err
	}
	defer c.close()
	count := primeCount(r.cfg)
	if src, ok := c.(eventSource); ok && !r.cfg.OneWay && !r.cfg.UDP {
		return r.primeEvents(ctx, src, count)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	defer context.AfterFunc(ctx, c.close)() // a send blocked on a peer that does not read ends with ctx
	for range count {
		if err := c.send(r.payload); err != nil {
			return err
		}
		if !r.cfg.OneWay && !r.cfg.UDP {
			if err := readFull(ctx, c, r.cfg.Size); err != nil {
				return err
			}
		}
	}
	if r.cfg.OneWay || r.cfg.UDP {
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// primeCount is how many messages prime sends.
func primeCount(cfg *Config) int { return min(max((4<<20)/cfg.Size, 4), 64) }

// readFull receives until n bytes arrived (one echo). ctx bounds the whole;
// the connection's own receive timeout (Config.echoTimeout) bounds each
// wait, so that nothing is allocated per call.
func readFull(ctx context.Context, c clientConn, n int) error {
	for got := 0; got < n; {
		k, err := c.recv(ctx)
		if err != nil {
			return err
		}
		got += k
	}
	return nil
}

// over reports whether ctx is done or past its deadline: a read deadline
// taken from ctx can fire a moment before ctx's own timer does.
func over(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

func (r *run) window(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, time.Duration(r.cfg.Seconds*float64(time.Second)))
}

// connRun is one connection's share of a run: its own counters (so a
// stalled drain can name the connections that stalled) and whether it
// has failed (a connection counts once, however many of its goroutines
// see the failure).
type connRun struct {
	clientConn
	sent, received atomic.Uint64
	receiving      atomic.Bool // its receiver is still reading
	failed         atomic.Bool
}

func (r *run) connRuns(conns []clientConn) []*connRun {
	out := make([]*connRun, len(conns))
	for i, c := range conns {
		out[i] = &connRun{clientConn: c}
	}
	return out
}

// oneway: every connection sends until the window ends. A send still
// blocked sendGrace after it (a peer that stopped reading: paused,
// partitioned, a zero window) is cut short by closing its connection, and
// reported, so that the run ends in bounded time.
func (r *run) oneway(ctx context.Context, conns []clientConn) {
	wctx, cancel := r.window(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range r.connRuns(conns) {
		wg.Go(func() { r.sendLoop(wctx, c) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-wctx.Done():
	}
	select {
	case <-done:
	case <-time.After(sendGrace):
		closeAll(conns)
		<-done
	}
}

// sendGrace is how long a one-way send may stay blocked past the window.
const sendGrace = 2 * time.Second

func (r *run) sendLoop(ctx context.Context, c *connRun) {
	n := uint64(r.cfg.Size)
	pos := 0
	for ctx.Err() == nil {
		if err := c.send(r.ring.take(&pos, 1)); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("blocked past the window's end, cut after %v (the server stopped reading: one that echoes, started without --oneway, waits for this client to read): %w", sendGrace, err)
			}
			r.fail(c, "send", err)
			return
		}
		c.sent.Add(n)
		r.sent.Add(n)
	}
}

// fail records a connection that failed mid-run: the run goes on with the
// others, and the summary says how many failed and why the first did.
func (r *run) fail(c *connRun, op string, err error) {
	if c.failed.Swap(true) {
		return
	}
	r.failures.Add(1)
	wrapped := fmt.Errorf("%s: %w", op, err)
	r.firstErr.CompareAndSwap(nil, &wrapped)
}

// pipeline: every connection sends until the window ends (or, windowed,
// keeps a window of frames in flight) while a receiver counts the echoes;
// then the echoes are drained.
func (r *run) pipeline(ctx context.Context, conns []clientConn) {
	wctx, cancel := r.window(ctx)
	defer cancel()
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	runs := r.connRuns(conns)
	var senders, receivers sync.WaitGroup
	for _, c := range runs {
		send, onRead := r.pipelineSender(wctx, c)
		senders.Go(send)
		c.receiving.Store(true)
		if src, ok := c.clientConn.(eventSource); ok {
			r.countEvents(c, src)
			continue
		}
		receivers.Go(func() {
			defer c.receiving.Store(false)
			for {
				n, err := c.recv(rctx)
				if err != nil {
					if rctx.Err() == nil {
						r.fail(c, "receive", err)
					}
					return
				}
				c.received.Add(uint64(n))
				r.received.Add(uint64(n))
				if onRead != nil {
					onRead(n)
				}
			}
		})
	}
	senders.Wait()
	if stalled := r.drain(ctx, runs); len(stalled) > 0 {
		err := r.stalled(stalled)
		for _, c := range stalled {
			r.fail(c, "drain", err)
		}
	}
	rcancel()
	for _, c := range conns {
		c.close() // unblocks receivers in blocking reads
	}
	receivers.Wait()
}

// drainPatience is how long a TCP drain waits without progress. It
// outlasts a few retransmission timeouts with backoff (0.2+0.4+…+6.4 s):
// the kernel can hold a loopback connection back that long after it
// dropped segments for a full receive queue.
const drainPatience = 15 * time.Second

// drain waits for the echoes of what was sent: TCP until every connection
// that can still receive has all of them, or drainPatience passes without
// progress; UDP (lossy) 500 ms. It records how long TCP took and returns
// the connections that stalled.
func (r *run) drain(ctx context.Context, runs []*connRun) []*connRun {
	if r.cfg.UDP {
		sleep(ctx, 0.5)
		return nil
	}
	const poll = 10 * time.Millisecond
	start := time.Now()
	last, lastMove := r.received.Load(), start
	for waiting(runs) != nil && time.Since(lastMove) < drainPatience && ctx.Err() == nil {
		time.Sleep(poll)
		if cur := r.received.Load(); cur != last {
			last, lastMove = cur, time.Now()
		}
	}
	r.drainTime = time.Since(start)
	if ctx.Err() != nil {
		return nil
	}
	return waiting(runs)
}

// waiting returns the connections still owed echoes whose receiver is
// alive (a failed one has been counted already and will get nothing more).
func waiting(runs []*connRun) []*connRun {
	var out []*connRun
	for _, c := range runs {
		if c.receiving.Load() && c.received.Load() < c.sent.Load() {
			out = append(out, c)
		}
	}
	return out
}

// stalled describes a drain that gave up: what is missing, how much of it
// lifenet still queues, and where the kernel holds the rest.
func (r *run) stalled(runs []*connRun) error {
	var missing uint64
	queued := 0
	locals := make([]netip.AddrPort, 0, len(runs))
	for _, c := range runs {
		missing += c.sent.Load() - c.received.Load()
		queued += c.queued()
		locals = append(locals, addrPortOf(c.local()))
	}
	err := fmt.Errorf("%d connections stalled, %d bytes of echoes missing after %v without progress; %d of them still in lifenet send queues",
		len(runs), missing, drainPatience, queued)
	if kernel := describeStalled(locals); kernel != "" {
		err = fmt.Errorf("%w; kernel sockets holding bytes:\n%s", err, kernel)
	}
	return err
}

// roundtrip: every connection sends one message and waits for its echo,
// recording the latency.
func (r *run) roundtrip(ctx context.Context, conns []clientConn) error {
	wctx, cancel := r.window(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range r.connRuns(conns) {
		wg.Go(func() {
			var h *hdrhistogram.Histogram
			if src, ok := c.clientConn.(eventSource); ok {
				h = r.eventRoundTrips(wctx, c, src)
			} else {
				h = r.syncRoundTrips(wctx, c)
			}
			r.histMu.Lock()
			r.hist.Merge(h)
			r.histMu.Unlock()
		})
	}
	wg.Wait()
	if err := r.firstErr.Load(); err != nil && r.hist.TotalCount() == 0 {
		return *err
	}
	return nil
}

// syncRoundTrips runs one connection's round trips on this goroutine until
// ctx ends and returns the samples.
func (r *run) syncRoundTrips(wctx context.Context, c *connRun) *hdrhistogram.Histogram {
	h := hdrhistogram.New(1, 60_000_000, 3)
	pos := 0
	for wctx.Err() == nil {
		t0 := time.Now()
		if err := c.send(r.ring.take(&pos, 1)); err != nil {
			r.fail(c, "send", err)
			break
		}
		r.sent.Add(uint64(r.cfg.Size))
		if err := readFull(wctx, c, r.cfg.Size); err != nil {
			if over(wctx) {
				break // the window closed while this echo was in flight
			}
			if !r.cfg.UDP {
				r.fail(c, "receive", err)
				break
			}
			continue // a lost datagram: no sample
		}
		h.RecordValue(max(time.Since(t0).Microseconds(), 1))
	}
	return h
}

// summary sums the run up over elapsed seconds; interrupted says ctx
// ended it early, so that what was in flight is reported as such rather
// than as lost.
func (r *run) summary(elapsed float64, interrupted bool) Summary {
	cfg := r.cfg
	s := Summary{Mode: cfg.modeName(), Protocol: cfg.protocol(), RecvMode: cfg.RecvMode, Impl: cfg.Impl, Codec: cfg.Codec, Window: cfg.Window,
		Clients: cfg.Clients, Size: cfg.Size, Frame: cfg.Frame, Elapsed: round(elapsed, 3), Interrupted: interrupted}
	if cfg.rawClient() && cfg.Impl != "raw" {
		s.Client = "raw"
	}
	s.Replies = cfg.replies()
	if s.Replies == "matched" && cfg.Mode == "pipeline" {
		s.Window = codecWindowSize(cfg) // lifenet's codec client and the baseline's keep this many in flight
	}
	s.ConnErrors = r.failures.Load()
	if err := r.firstErr.Load(); err != nil {
		s.FirstError = (*err).Error()
	}
	if cfg.Mode == "roundtrip" && !cfg.OneWay {
		h := r.hist // complete: every connection has merged its samples
		s.LatencyCount = h.TotalCount()
		if s.LatencyCount > 0 {
			s.P50, s.P95, s.P99 = float64(h.ValueAtQuantile(50)), float64(h.ValueAtQuantile(95)), float64(h.ValueAtQuantile(99))
			s.P999, s.Max, s.Avg = float64(h.ValueAtQuantile(99.9)), float64(h.Max()), round(h.Mean(), 3)
			s.MsgsPerSec = round(float64(s.LatencyCount)/elapsed, 1)
		}
		s.SentBytes = r.sent.Load()
		if sent := int64(s.SentBytes / uint64(cfg.Size)); cfg.UDP && sent > 0 && !interrupted {
			// Each connection can have one request in flight when the
			// window closes: not a loss.
			lost := max(sent-s.LatencyCount-int64(cfg.Clients), 0)
			s.LossPct = roundSignificant(100*float64(lost)/float64(sent), 3)
		}
		return s
	}
	s.SentBytes = r.sent.Load()
	s.RecvBytes = r.received.Load() // one-way: nothing (what arrived is the server's to say)
	s.DrainSeconds = round(r.drainTime.Seconds(), 3)
	moved := s.RecvBytes
	if cfg.OneWay {
		moved = s.SentBytes // the send rate over the time spent sending
	}
	if r.windowed() {
		s.Window = r.inFlight()
	}
	s.MsgsPerSec = round(float64(moved)/float64(cfg.Size)/elapsed, 1)
	s.MBps = round(float64(moved)/(1<<20)/elapsed, 2)
	if cfg.Frame > 0 {
		s.FramesPerSec = round(float64(moved)/float64(cfg.Frame)/elapsed, 1)
	}
	if !cfg.OneWay && interrupted {
		s.Unanswered = max(int64(s.SentBytes/uint64(cfg.Size))-int64(s.RecvBytes/uint64(cfg.Size)), 0)
	}
	if !cfg.OneWay && !interrupted {
		diff := int64(s.SentBytes/uint64(cfg.Size)) - int64(s.RecvBytes/uint64(cfg.Size))
		s.IntegrityDiff = &diff
		if cfg.UDP && s.SentBytes > 0 {
			s.LossPct = roundSignificant(100*float64(max(diff, 0))/(float64(s.SentBytes)/float64(cfg.Size)), 3)
		}
	}
	return s
}

// progress prints a line once a second to Config.progressW (none with
// --json): redrawn in place on a terminal, else a line each time. The rate
// is of requests sent. It returns a function that stops it.
func (r *run) progress(ctx context.Context, start time.Time) func() {
	w := r.cfg.progressW
	if w == nil || r.cfg.JSON {
		return func() {}
	}
	prefix, end := "\r\033[K", ""
	if !r.cfg.progressTTY {
		prefix, end = "", "\n"
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var last uint64
		for {
			select {
			case <-done:
				if r.cfg.progressTTY {
					fmt.Fprint(w, "\r\033[K")
				}
				return
			case <-ctx.Done():
				return
			case <-t.C:
				cur := r.sent.Load()
				el := time.Since(start).Seconds()
				what := "sending"
				if el > r.cfg.Seconds {
					what = "draining"
				}
				fmt.Fprintf(w, "%s[client] %.0f/%.0f s  %s  %.0f msg/s sent%s", prefix, math.Min(el, r.cfg.Seconds), r.cfg.Seconds,
					what, float64(cur-last)/float64(r.cfg.Size), end)
				last = cur
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// lossWarning is the warning for a UDP run that lost more than
// LossWarnPct of its datagrams, or "".
func lossWarning(s Summary) string {
	if s.Protocol != "udp" || s.LossPct <= LossWarnPct {
		return ""
	}
	return fmt.Sprintf("%.3g %% of the UDP datagrams were lost (more than %g %%): the rates measure the loss, not the implementation", s.LossPct, LossWarnPct)
}

// WriteSummary prints the human-readable result block and the SUMMARY line.
func WriteSummary(out io.Writer, s Summary, human bool) {
	if human {
		impl := s.Impl
		if s.Client != "" {
			impl += ", client " + s.Client
		}
		fmt.Fprintf(out, "------- result (%s %s, %s, %d clients × %d B, impl %s) -------\n", s.Protocol, s.Mode, s.RecvMode, s.Clients, s.Size, impl)
		if s.LatencyCount > 0 {
			fmt.Fprintf(out, "round trips : %d in %.2f s (%.0f/s), %d B sent\n", s.LatencyCount, s.Elapsed, s.MsgsPerSec, s.SentBytes)
			fmt.Fprintf(out, "latency µs  : P50=%.1f  P95=%.1f  P99=%.1f  P99.9=%.1f  max=%.1f  mean=%.1f\n", s.P50, s.P95, s.P99, s.P999, s.Max, s.Avg)
		} else {
			fmt.Fprintf(out, "throughput  : %.0f msg/s | %.1f MB/s\n", s.MsgsPerSec, s.MBps)
			if s.Frame > 0 {
				fmt.Fprintf(out, "frames      : %.0f frame/s (frame %d B)\n", s.FramesPerSec, s.Frame)
			}
			if s.Mode == "oneway" {
				fmt.Fprintf(out, "sent        : %d B in %.2f s (what arrived: the server's STEADY line)\n", s.SentBytes, s.Elapsed)
			} else {
				fmt.Fprintf(out, "sent        : %d B, received %d B (window %.2f s)\n", s.SentBytes, s.RecvBytes, s.Elapsed)
			}
			if s.ConnErrors > 0 {
				fmt.Fprintf(out, "conn errors : %d (first: %s)\n", s.ConnErrors, s.FirstError)
			}
			if s.IntegrityDiff != nil {
				fmt.Fprintf(out, "integrity   : %d messages short\n", *s.IntegrityDiff)
			}
		}
		if s.LossPct > 0 {
			fmt.Fprintf(out, "loss        : %.3g %% of the datagrams\n", s.LossPct)
		}
		if s.Interrupted {
			line := fmt.Sprintf("interrupted : after %.2f s; the figures are of that time", s.Elapsed)
			if s.Unanswered > 0 {
				line += fmt.Sprintf("; %d messages were in flight (not counted as lost)", s.Unanswered)
			}
			fmt.Fprintln(out, line)
		}
		if s.Warning != "" {
			fmt.Fprintf(out, "WARNING     : %s\n", s.Warning)
		}
		if s.InProcess {
			fmt.Fprintf(out, "process     : %.1f B/msg allocated, %d GC, %.3f µs CPU/msg (client and server: one process)\n", s.AllocPerMsg, s.GC, s.CPUPerMsg)
		} else {
			fmt.Fprintf(out, "client      : %.1f B/msg allocated, %d GC, %.3f µs CPU/msg\n", s.AllocPerMsg, s.GC, s.CPUPerMsg)
		}
		fmt.Fprintf(out, "rates       : %s\n", rateNote(s))
	}
	js, _ := json.Marshal(s)
	fmt.Fprintf(out, "SUMMARY: %s\n", js)
}

// rateNote says in one line how the client's rate is counted and why a
// server's STEADY line (its received bytes over the span with traffic,
// byteTrace's) can differ from it.
func rateNote(s Summary) string {
	const srv = "a server's STEADY is the rate of what it received over the span with traffic"
	switch {
	case s.Mode == "oneway":
		return "msg/s is what the client wrote into its sockets; " + srv
	case s.LatencyCount > 0 || s.Mode == "roundtrip":
		return "one request in flight per connection, msg/s counts requests answered; " + srv
	}
	return fmt.Sprintf("msg/s counts echoes received over the window plus the %.2f s drain; %s", s.DrainSeconds, srv)
}

func closeAll(conns []clientConn) {
	for _, c := range conns {
		if c != nil {
			c.close()
		}
	}
}

func sleep(ctx context.Context, seconds float64) {
	select {
	case <-time.After(time.Duration(seconds * float64(time.Second))):
	case <-ctx.Done():
	}
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

// roundSignificant rounds v to digits significant digits, so that a small
// but real figure (4 datagrams lost of 90 000) does not round to 0.
func roundSignificant(v float64, digits int) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	return round(v, digits-1-int(math.Floor(math.Log10(math.Abs(v)))))
}
