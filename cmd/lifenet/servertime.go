package main

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	lnotel "github.com/lifenet/lifenet/otel"
	"github.com/lifenet/lifenet/rpc"
)

// receivedName is the histogram of the server's whole time per answered
// call, from the request's read to its reply's write; Prometheus names it
// lifenet_rpc_server_received_to_written_duration_seconds. Not a name of
// the OpenTelemetry conventions (theirs, rpc.server.call.duration, is the
// handler's time here), hence lifenet's namespace.
const receivedName = "lifenet.rpc.server.received_to_written.duration"

// receivedHelp is its description, Prometheus's HELP line: where it starts
// and ends, and what is outside it.
const receivedHelp = "The server's time per answered call from the request's read to its reply's write " +
	"(rpc.CallEvent Written): over SRMP from the socket read that completed the request's frame " +
	"to the write of the reply's last byte to the socket, so the framing, routing, the wait for a goroutine and a CPU, " +
	"argument binding, interceptors, the handler, the reply's encoding and its wait behind a write in progress " +
	"or the other replies of its read are in it; over HTTP from net/http's hand-over (its head read) to the answer written to net/http. " +
	"Not in it: the time the request waited in the socket before the read, the kernel's send, the network; one-way calls and streams. " +
	"rpc.server.call.duration is the handler's part alone, rpc.client.call.duration the caller's whole call."

// receivedToWritten records rpc.CallEvent's Written per action in a
// histogram of otel.DefaultDurationBuckets, the buckets of the handler's
// histogram, so that the two compare bucket by bucket. It is an
// OpenTelemetry metric producer: the Prometheus exporter exports it with
// otel.CallMetrics' histograms, and /status reads it. record is safe for
// concurrent use and allocates only for an action's first call.
type receivedToWritten struct {
	start  time.Time
	bounds []float64 // seconds
	at     []int64   // bounds, nanoseconds
	series sync.Map  // action name (otel's: the registered name, "_OTHER" for an unknown one) → *receivedSeries
}

type receivedSeries struct {
	set     attribute.Set
	sum     atomic.Uint64 // nanoseconds
	buckets []atomic.Uint64
}

// otherAction is the rpc.method of calls of no registered action, as
// otel's call histograms name it.
const otherAction = "_OTHER"

func newReceivedToWritten() *receivedToWritten {
	r := &receivedToWritten{start: time.Now(), bounds: lnotel.DefaultDurationBuckets}
	for _, b := range r.bounds {
		r.at = append(r.at, int64(b*1e9))
	}
	return r
}

// record adds an answered call (Written set); it skips the others.
func (r *receivedToWritten) record(ev rpc.CallEvent) {
	if ev.Written <= 0 {
		return
	}
	name := ev.Action
	if name == "" {
		name = otherAction
	}
	v, ok := r.series.Load(name)
	if !ok {
		s := &receivedSeries{set: attribute.NewSet(attribute.String("rpc.method", name)), buckets: make([]atomic.Uint64, len(r.at)+1)}
		v, _ = r.series.LoadOrStore(name, s)
	}
	s := v.(*receivedSeries)
	d := int64(ev.Written)
	s.buckets[sort.Search(len(r.at), func(i int) bool { return d <= r.at[i] })].Add(1) // Prometheus's le: a bound holds values up to it
	s.sum.Add(uint64(max(d, 0)))
}

// Produce returns the histograms (cumulative since the start); it is the
// sdkmetric.Producer the exporter calls at each scrape.
func (r *receivedToWritten) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	now := time.Now()
	var points []metricdata.HistogramDataPoint[float64]
	r.series.Range(func(_, v any) bool {
		s := v.(*receivedSeries)
		b := make([]uint64, len(s.buckets))
		var n uint64
		for i := range s.buckets {
			b[i] = s.buckets[i].Load()
			n += b[i]
		}
		points = append(points, metricdata.HistogramDataPoint[float64]{Attributes: s.set, StartTime: r.start, Time: now,
			Count: n, Bounds: r.bounds, BucketCounts: b, Sum: float64(s.sum.Load()) / 1e9})
		return true
	})
	if len(points) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: "github.com/lifenet/lifenet/cmd/lifenet"},
		Metrics: []metricdata.Metrics{{Name: receivedName, Description: receivedHelp, Unit: "s",
			Data: metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality, DataPoints: points}}},
	}}, nil
}
