package main

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	lnotel "github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
	"github.com/lifenet/lifenet/transport"
)

// The /status page's figures over the last minute come from the call
// histograms /metrics exports (otel.CallMetrics), read once a second:
// a call costs nothing more for /status, and the page and Prometheus's
// histogram_quantile agree, estimating a quantile within one bucket of
// the histogram (otel.DefaultDurationBuckets: about 4 per decade below
// 1 ms, 8 per decade from 1 to 10 ms).
const statusWindow = 60 * time.Second

// statusRecorder keeps what /status shows: a snapshot of the call
// histograms each second for the last minute, and the server's counters.
type statusRecorder struct {
	start time.Time
	srv   *rpc.Server
	calls *lnotel.CallMetrics
	recv  *receivedToWritten // the server's time from the request to its reply's write
	side  *capListener       // the metrics port's listener, set before it serves

	mu    sync.Mutex
	snaps []callSnapshot // oldest first; none older than the window's start and a second
}

// callSnapshot is the cumulative call histograms by action at one time:
// the handler's time (rpc.server.call.duration) in actions, the server's
// from the request to its reply's write in received.
type callSnapshot struct {
	at       time.Time
	actions  map[string]actionTotals
	received map[string]actionTotals
}

// actionTotals is one action's cumulative calls, failed calls and
// duration histogram (every series of the action summed).
type actionTotals struct {
	calls, errors uint64
	bounds        []float64 // seconds
	buckets       []uint64
}

func newStatusRecorder(calls *lnotel.CallMetrics, recv *receivedToWritten) *statusRecorder {
	return &statusRecorder{start: time.Now(), calls: calls, recv: recv}
}

// run snapshots the histograms every second until ctx ends.
func (r *statusRecorder) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s := r.snapshot(now)
			r.mu.Lock()
			r.snaps = append(r.snaps, s)
			for len(r.snaps) > 1 && now.Sub(r.snaps[1].at) >= statusWindow {
				r.snaps = r.snaps[1:] // the second oldest starts a full window: the oldest is no longer needed
			}
			r.mu.Unlock()
		}
	}
}

// snapshot reads the server's call duration histograms now.
func (r *statusRecorder) snapshot(now time.Time) callSnapshot {
	s := callSnapshot{at: now, actions: map[string]actionTotals{}, received: map[string]actionTotals{}}
	sms, _ := r.calls.Produce(context.Background())
	if r.recv != nil {
		more, _ := r.recv.Produce(context.Background())
		sms = append(sms, more...)
	}
	for _, sm := range sms {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			into := map[string]map[string]actionTotals{"rpc.server.call.duration": s.actions, receivedName: s.received}[m.Name]
			if !ok || into == nil {
				continue
			}
			for _, dp := range h.DataPoints {
				add(into, dp)
			}
		}
	}
	return s
}

// add sums dp into its action's totals in to.
func add(to map[string]actionTotals, dp metricdata.HistogramDataPoint[float64]) {
	name, _ := dp.Attributes.Value(attribute.Key("rpc.method"))
	code, hasCode := dp.Attributes.Value(attribute.Key("rpc.response.status_code"))
	a := to[name.AsString()]
	if a.buckets == nil {
		a.bounds, a.buckets = dp.Bounds, make([]uint64, len(dp.BucketCounts))
	}
	a.calls += dp.Count
	if hasCode && code.AsString() != okCode {
		a.errors += dp.Count
	}
	for i, n := range dp.BucketCounts {
		if i < len(a.buckets) {
			a.buckets[i] += n
		}
	}
	to[name.AsString()] = a
}

// okCode is a successful call's rpc.response.status_code.
var okCode = strconv.Itoa(rpc.CodeOK)

// since returns a's calls after base's (the same action earlier; zero
// when it had none).
func (a actionTotals) since(base actionTotals) actionTotals {
	d := actionTotals{calls: a.calls - base.calls, errors: a.errors - base.errors, bounds: a.bounds, buckets: make([]uint64, len(a.buckets))}
	for i, n := range a.buckets {
		if i < len(base.buckets) {
			n -= base.buckets[i]
		}
		d.buckets[i] = n
	}
	return d
}

// quantile estimates the q-quantile of a's durations in microseconds as
// Prometheus's histogram_quantile does: linearly within the bucket that
// holds it (from 0 in the first; the last finite boundary past it).
func (a actionTotals) quantile(q float64) float64 {
	if a.calls == 0 {
		return 0
	}
	rank := q * float64(a.calls)
	var seen float64
	for i, n := range a.buckets {
		if n == 0 || seen+float64(n) < rank {
			seen += float64(n)
			continue
		}
		if i >= len(a.bounds) {
			return a.bounds[len(a.bounds)-1] * 1e6
		}
		lo := 0.0
		if i > 0 {
			lo = a.bounds[i-1]
		}
		return (lo + (a.bounds[i]-lo)*(rank-seen)/float64(n)) * 1e6
	}
	return 0
}

// window returns the snapshot the last minute starts from: the newest
// one at least statusWindow old, or none (the server's start) before a
// minute of snapshots.
func (r *statusRecorder) window(now time.Time) callSnapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	base := callSnapshot{at: r.start}
	for _, s := range r.snaps {
		if now.Sub(s.at) < statusWindow {
			break
		}
		base = s
	}
	return base
}

// Status is the /status page (nats /varz's manner: one JSON object of
// the server's state and its last minute).
type Status struct {
	Server        string                  `json:"server"`
	Version       string                  `json:"version"`
	Start         time.Time               `json:"start"`
	Now           time.Time               `json:"now"`
	Uptime        string                  `json:"uptime"`
	UptimeSeconds float64                 `json:"uptime_seconds"`
	Sessions      int                     `json:"sessions"`
	ByProtocol    map[string]int          `json:"sessions_by_protocol"`
	WindowSeconds float64                 `json:"window_seconds"`
	Calls         uint64                  `json:"calls"`
	CallsPerSec   float64                 `json:"calls_per_sec"`
	Actions       map[string]ActionStatus `json:"actions"`
	Accepted      uint64                  `json:"sessions_accepted"`
	MaxSessions   int64                   `json:"sessions_max"`
	Closed        map[string]uint64       `json:"sessions_closed"`
	BytesIn       uint64                  `json:"bytes_in"`
	BytesOut      uint64                  `json:"bytes_out"`
	Dropped       uint64                  `json:"requests_dropped"`
	Panics        uint64                  `json:"panics"`
	MetricsPort   *SidePortStatus         `json:"metrics_port,omitempty"`
}

// SidePortStatus is the metrics port's connections: held now, its cap,
// and since the start those refused at once and the idle ones closed to
// make room (sidelisten.go).
type SidePortStatus struct {
	Conns    int    `json:"conns"`
	MaxConns int    `json:"conns_max"`
	Refused  uint64 `json:"refused"`
	Evicted  uint64 `json:"evicted"`
}

// ActionStatus is one action's last minute. The handler quantiles are of
// the handler's time (rpc.server.call.duration: from the routed request to
// its encoded result); the received-to-written ones of the server's whole
// time on an answered call, from the socket read that completed the
// request to its reply's write to the socket
// (lifenet.rpc.server.received_to_written.duration: the framing, the wait
// to run, the reply's encoding, its wait for the write and the write
// added, and over HTTP the body's read). Neither is the call a client waits for, which adds the
// socket read before, the kernel's send and the network.
type ActionStatus struct {
	Calls                  uint64  `json:"calls"`
	Errors                 uint64  `json:"errors"`
	CallsPerSec            float64 `json:"calls_per_sec"`
	HandlerP50Us           float64 `json:"handler_p50_us"`
	HandlerP99Us           float64 `json:"handler_p99_us"`
	ReceivedToWrittenP50Us float64 `json:"received_to_written_p50_us"`
	ReceivedToWrittenP99Us float64 `json:"received_to_written_p99_us"`
}

func (r *statusRecorder) status(now time.Time) Status {
	up := now.Sub(r.start)
	st := Status{Server: "lifenet", Version: moduleVersion(), Start: r.start.UTC(), Now: now.UTC(),
		Uptime: up.Round(time.Second).String(), UptimeSeconds: round(up.Seconds(), 3),
		ByProtocol: map[string]int{}, Actions: map[string]ActionStatus{}, Closed: map[string]uint64{}}
	base, cur := r.window(now), r.snapshot(now)
	win := now.Sub(base.at).Seconds()
	st.WindowSeconds = round(win, 3)
	for name, tot := range cur.actions {
		d := tot.since(base.actions[name])
		if d.calls == 0 {
			continue
		}
		a := ActionStatus{Calls: d.calls, Errors: d.errors, HandlerP50Us: round(d.quantile(0.50), 1), HandlerP99Us: round(d.quantile(0.99), 1)}
		if rt := cur.received[name].since(base.received[name]); rt.calls > 0 {
			a.ReceivedToWrittenP50Us, a.ReceivedToWrittenP99Us = round(rt.quantile(0.50), 1), round(rt.quantile(0.99), 1)
		}
		if win > 0 {
			a.CallsPerSec = round(float64(d.calls)/win, 2)
		}
		st.Actions[name] = a
		st.Calls += d.calls
	}
	if win > 0 {
		st.CallsPerSec = round(float64(st.Calls)/win, 2)
	}
	if l := r.side; l != nil {
		st.MetricsPort = &SidePortStatus{Conns: l.conns(), MaxConns: l.max, Refused: l.refused.Load(), Evicted: l.evicted.Load()}
	}
	if r.srv != nil {
		s, ts := r.srv.Stats(), r.srv.Transport().Stats()
		st.Sessions, st.Accepted, st.MaxSessions = s.Sessions, ts.Accepted, ts.MaxActive
		st.BytesIn, st.BytesOut, st.Dropped, st.Panics = ts.BytesIn, ts.BytesOut, s.Dropped, s.Panics
		for i, n := range ts.Closed {
			if n > 0 {
				st.Closed[transport.Reason(i).String()] = n
			}
		}
		for p, n := range s.ByProtocol {
			if n > 0 {
				st.ByProtocol[rpc.Protocol(p).String()] = n // 0: "undecided", no bytes seen yet
			}
		}
	}
	return st
}

// round is x to the given decimals: the page's figures are estimates (a
// quantile within a bucket), and a reader needs no float's last digits.
func round(x float64, decimals int) float64 {
	p := math.Pow10(decimals)
	return math.Round(x*p) / p
}
