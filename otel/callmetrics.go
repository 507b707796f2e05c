package otel

import (
	"context"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// CallMetrics holds the call histograms of interceptors made
// [WithCallMetrics]: rpc.server.call.duration, rpc.server.request.size and
// rpc.server.response.size (and their rpc.client twins), with the same
// names, units, buckets and attributes as the MeterProvider's instruments.
// It aggregates them in lifenet, with a few atomic adds per call spread
// over shards, and hands them to an OpenTelemetry reader as a producer
// (sdkmetric.WithProducer for a periodic or manual reader, or the
// Prometheus exporter's WithProducer) whenever the reader collects.
//
// It exists for its cost. The SDK's synchronous histograms cost about
// 2,500–3,500 instructions per Record (the attribute set's check for
// duplicates, the exemplar filter, the series lookup), three Records per
// call, which at 100 connections × 1 call is most of what a server spends
// on a call in user space; CallMetrics records a call in a few hundred
// (docs/perf/observability.md).
//
// The histograms are cumulative from NewCallMetrics. A CallMetrics may be
// shared by any number of interceptors, hooks, servers and clients, and
// collected from any goroutine: they share its series, one per side and
// attribute set, so that two of them seeing calls of the same attributes
// count them in one data point (a series has the duration buckets of the
// first that made it). Its series are bounded as each interceptor's
// attribute sets are (past 1,024, new sets' calls count in one overflow
// set).
type CallMetrics struct {
	start time.Time
	mu    sync.Mutex                // serializes adding series
	bySet map[seriesKey]*series     // every series by its side and attributes; under mu
	all   atomic.Pointer[[]*series] // every series, for Produce; grows under mu
}

// seriesKey tells series apart as a scrape does: by name (the side) and
// attributes.
type seriesKey struct {
	side string
	set  attribute.Distinct
}

// NewCallMetrics returns an empty CallMetrics.
func NewCallMetrics() *CallMetrics { return &CallMetrics{start: time.Now()} }

// WithCallMetrics records the interceptor's call histograms into m instead
// of the MeterProvider's instruments; the observers of [ObserveServer]
// still use the MeterProvider. Collect m by registering it as a producer
// of the reader that exports them.
func WithCallMetrics(m *CallMetrics) Option { return func(c *config) { c.calls = m } }

// shards spreads each series' counters, so that calls on different
// connections rarely add to the same cache line.
const shards = 4

// series is one attribute set's three histograms on one side.
type series struct {
	side    string // "server" or "client"
	set     attribute.Set
	bounds  []float64    // duration boundaries, seconds
	nanos   *bucketIndex // the same in nanoseconds, for record
	shard   [shards]seriesShard
	hasResp atomic.Bool // a unary call was recorded: the response size is kept
	hasReq  atomic.Bool // a request's size was recorded (a client's only WithClientRequestSize)
}

type seriesShard struct {
	dur, req, resp counts
	_              [64]byte // the next shard's counters on a line of their own
}

// counts is one histogram's data on one shard: the sum as an integer
// (nanoseconds or bytes), so that adding it is one atomic add.
type counts struct {
	sum     atomic.Uint64
	buckets []atomic.Uint64 // len(bounds)+1; their sum is the count
}

func newCounts(b *bucketIndex) counts { return counts{buckets: make([]atomic.Uint64, len(b.at)+1)} }

// add records v, in the integer unit of b (nanoseconds or bytes).
func (c *counts) add(b *bucketIndex, v int64) {
	c.sum.Add(uint64(max(v, 0)))
	c.buckets[b.bucket(v)].Add(1)
}

// bucketIndex is a histogram's bucket boundaries as integers (nanoseconds or
// bytes), indexed by bit length, so that finding a value's bucket takes a
// table lookup and a step or two, not a search.
type bucketIndex struct {
	at    []int64
	first [65]uint8 // by bits.Len64(v): the first i with at[i] >= the least value of that length
}

func newBucketIndex(at []int64) *bucketIndex {
	b := &bucketIndex{at: at}
	for l := range b.first {
		least := int64(0) // the least value of bit length l: 2^(l-1); none of length 64 is an int64 >= 0
		switch {
		case l == 64:
			least = math.MaxInt64
		case l > 0:
			least = 1 << (l - 1)
		}
		i := 0
		for i < len(at) && at[i] < least {
			i++
		}
		b.first[l] = uint8(i)
	}
	return b
}

// bucket is v's bucket: the first i with v <= at[i] (an explicit-bucket
// histogram's bucket i holds (at[i-1], at[i]]), len(at) past the last.
// Every boundary before first[len(v)] is below v, so the scan starts there
// and passes only the boundaries between 2^(len-1) and v.
func (b *bucketIndex) bucket(v int64) int {
	v = max(v, 0)
	i := int(b.first[bits.Len64(uint64(v))])
	for i < len(b.at) && v > b.at[i] {
		i++
	}
	return i
}

// nanos converts duration boundaries in seconds to integer nanoseconds,
// rounded, so that a call is bucketed without a float conversion.
func nanos(seconds []float64) []int64 {
	ns := make([]int64, len(seconds))
	for i, v := range seconds {
		ns[i] = int64(math.Round(v * 1e9))
	}
	return ns
}

// newSeries returns the series of side and set: the one already made, by
// this interceptor or another, or a new one with these duration bounds.
func (m *CallMetrics) newSeries(side string, set attribute.Set, bounds []float64) *series {
	key := seriesKey{side, set.Equivalent()}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.bySet[key]; s != nil {
		return s
	}
	s := &series{side: side, set: set, bounds: bounds, nanos: newBucketIndex(nanos(bounds))}
	for i := range s.shard {
		s.shard[i] = seriesShard{dur: newCounts(s.nanos), req: newCounts(sizeBounds), resp: newCounts(sizeBounds)}
	}
	if m.bySet == nil {
		m.bySet = map[seriesKey]*series{}
	}
	m.bySet[key] = s
	var all []*series
	if p := m.all.Load(); p != nil {
		all = append(all, *p...)
	}
	all = append(all, s)
	m.all.Store(&all)
	return s
}

// record adds one call: its duration, and its sizes (req < 0: not
// measured; resp < 0: none, not a unary call). shardOf picks the shard;
// any value will do.
func (s *series) record(shardOf uint64, d time.Duration, req, resp int) {
	sh := &s.shard[shardOf%shards]
	sh.dur.add(s.nanos, int64(d))
	if req >= 0 {
		if !s.hasReq.Load() {
			s.hasReq.Store(true)
		}
		sh.req.add(sizeBounds, int64(req))
	}
	if resp >= 0 {
		if !s.hasResp.Load() {
			s.hasResp.Store(true)
		}
		sh.resp.add(sizeBounds, int64(resp))
	}
}

// Produce implements the OpenTelemetry SDK's metric.Producer: the
// histograms as they stand, one scope, cumulative.
func (m *CallMetrics) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	p := m.all.Load()
	if p == nil {
		return nil, nil
	}
	now := time.Now()
	byName := map[string]*metricdata.Metrics{}
	var order []string
	put := func(name, unit, desc string, dp any) {
		mt := byName[name]
		if mt == nil {
			mt = &metricdata.Metrics{Name: name, Unit: unit, Description: desc}
			byName[name] = mt
			order = append(order, name)
		}
		switch v := dp.(type) {
		case metricdata.HistogramDataPoint[float64]:
			h, _ := mt.Data.(metricdata.Histogram[float64])
			h.Temporality = metricdata.CumulativeTemporality
			h.DataPoints = append(h.DataPoints, v)
			mt.Data = h
		case metricdata.HistogramDataPoint[int64]:
			h, _ := mt.Data.(metricdata.Histogram[int64])
			h.Temporality = metricdata.CumulativeTemporality
			h.DataPoints = append(h.DataPoints, v)
			mt.Data = h
		}
	}
	for _, s := range *p {
		n, sum, b := s.sum(func(sh *seriesShard) *counts { return &sh.dur })
		if n == 0 {
			continue
		}
		put("rpc."+s.side+".call.duration", "s", durationDescription[s.side],
			metricdata.HistogramDataPoint[float64]{Attributes: s.set, StartTime: m.start, Time: now, Count: n,
				Bounds: s.bounds, BucketCounts: b, Sum: float64(sum) / 1e9})
		if s.hasReq.Load() {
			n, sum, b := s.sum(func(sh *seriesShard) *counts { return &sh.req })
			put("rpc."+s.side+".request.size", "By", "Measures the size of RPC request messages (uncompressed).",
				sizePoint(s.set, m.start, now, n, sum, b))
		}
		if s.hasResp.Load() {
			n, sum, b := s.sum(func(sh *seriesShard) *counts { return &sh.resp })
			put("rpc."+s.side+".response.size", "By", "Measures the size of RPC response messages (uncompressed).",
				sizePoint(s.set, m.start, now, n, sum, b))
		}
	}
	sm := metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: ScopeName, Version: Version, SchemaURL: SchemaURL}}
	for _, name := range order {
		sm.Metrics = append(sm.Metrics, *byName[name])
	}
	return []metricdata.ScopeMetrics{sm}, nil
}

// sum adds up one histogram over the shards; the count is the buckets'
// sum, so that a point read while calls go on is consistent with itself.
func (s *series) sum(of func(*seriesShard) *counts) (n, sum uint64, buckets []uint64) {
	for i := range s.shard {
		c := of(&s.shard[i])
		if buckets == nil {
			buckets = make([]uint64, len(c.buckets))
		}
		sum += c.sum.Load()
		for j := range c.buckets {
			buckets[j] += c.buckets[j].Load()
		}
	}
	for _, b := range buckets {
		n += b
	}
	return n, sum, buckets
}

func sizePoint(set attribute.Set, start, now time.Time, n, sum uint64, b []uint64) metricdata.HistogramDataPoint[int64] {
	return metricdata.HistogramDataPoint[int64]{Attributes: set, StartTime: start, Time: now, Count: n,
		Bounds: sizeBuckets, BucketCounts: b, Sum: int64(min(sum, math.MaxInt64))}
}
