package otel

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/lifenet/lifenet/rpc"
)

// OtherMethod is the rpc.method of a server's call to an unknown action,
// and of the overflow set that counts the calls of new attribute sets
// past 1,024 (the conventions' "_OTHER").
const OtherMethod = "_OTHER"

// maxMethods bounds the attribute sets one interceptor or hook keeps
// (actions × codes × protocols): past it, a call of a new set is recorded
// in one overflow set (rpc.method OtherMethod and otel.metric.overflow
// true, as the SDK's cardinality limit marks its own), so that a peer
// calling made-up names, or a server answering made-up codes, cannot grow
// the metrics without end.
const maxMethods = 1024

// instruments are one side's (server or client) histograms.
type instruments struct {
	calls    *CallMetrics // WithCallMetrics: the three histograms below are nil
	side     string       // "server" or "client"
	bounds   []float64    // the duration buckets
	withReq  bool         // the request size is recorded
	duration metric.Float64Histogram
	reqSize  metric.Int64Histogram
	respSize metric.Int64Histogram
	sets     setCache
	recent   [64]atomic.Pointer[setEntry] // a cache in front of sets, by setKey.slot
	base     []attribute.KeyValue         // rpc.system.name, server.address …
}

// entry returns the set of calls of k: from the recent cache (a slot per
// key hash; a key compare, where a map lookup hashes the action's name)
// or from sets.
func (in *instruments) entry(k setKey) *setEntry {
	slot := &in.recent[k.slot()]
	if e := slot.Load(); e != nil && e.key == k {
		return e
	}
	e := in.sets.get(k, in)
	if e.key == k { // not the overflow entry, which would only push a set of the map out
		slot.Store(e)
	}
	return e
}

func newInstruments(c *config, side string) (*instruments, error) {
	in := &instruments{
		base:  append([]attribute.KeyValue{attribute.String("rpc.system.name", SystemName)}, c.serverAttrs...),
		calls: c.calls, side: side, bounds: c.buckets, withReq: side == "server" || c.reqSize,
	}
	if in.calls != nil {
		return in, nil
	}
	m := c.mp.Meter(ScopeName, metric.WithInstrumentationVersion(Version), metric.WithSchemaURL(SchemaURL))
	var err error
	if in.duration, err = m.Float64Histogram("rpc."+side+".call.duration",
		metric.WithDescription(durationDescription[side]),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(c.buckets...)); err != nil {
		return nil, err
	}
	if in.reqSize, err = m.Int64Histogram("rpc."+side+".request.size",
		metric.WithDescription("Measures the size of RPC request messages (uncompressed)."),
		metric.WithUnit("By"), metric.WithExplicitBucketBoundaries(sizeBuckets...)); err != nil {
		return nil, err
	}
	if in.respSize, err = m.Int64Histogram("rpc."+side+".response.size",
		metric.WithDescription("Measures the size of RPC response messages (uncompressed)."),
		metric.WithUnit("By"), metric.WithExplicitBucketBoundaries(sizeBuckets...)); err != nil {
		return nil, err
	}
	return in, nil
}

// record adds a call of the set e: its duration d and sizes (req < 0:
// not measured; resp < 0: none, not a unary call); shard is any number,
// which spreads CallMetrics' counters.
func (in *instruments) record(ctx context.Context, e *setEntry, shard uint64, d time.Duration, req, resp int) {
	if e.fast != nil {
		e.fast.record(shard, d, req, resp)
		return
	}
	in.duration.Record(ctx, d.Seconds(), e.opts...)
	if req >= 0 {
		in.reqSize.Record(ctx, int64(req), e.opts...)
	}
	if resp >= 0 {
		in.respSize.Record(ctx, int64(resp), e.opts...)
	}
}

// serverCall records a server's call of method (its code and
// session: nil for Server.Process) that took d, with its sizes (resp < 0:
// none). An unknown action (no method, or a 404) is OtherMethod: its name
// is the caller's, of unbounded choice.
func (in *instruments) serverCall(ctx context.Context, method string, code int, ss *rpc.Session, d time.Duration, req, resp int) {
	k, shard := in.serverKey(method, code, ss, d)
	in.record(ctx, in.entry(k), shard, d, req, resp)
}

// serverKey is the set of a server's call, and the shard its counts go to.
func (in *instruments) serverKey(method string, code int, ss *rpc.Session, d time.Duration) (setKey, uint64) {
	k := setKey{method: method, code: code}
	if method == "" || code == rpc.CodeNotFound {
		k.method = OtherMethod
	}
	shard := uint64(d) // any value spreads the shards; a connection's calls keep to one
	if ss != nil {
		k.proto, shard = ss.Protocol(), ss.ID()
	}
	return k, shard
}

// setKey tells apart the attribute sets of calls: it holds what the
// attributes say and nothing else (two keys of one set would be two
// series of the same attributes, which a Prometheus scrape takes as one
// series sampled twice, dropping the second).
type setKey struct {
	method string
	code   int
	proto  rpc.Protocol
}

// slot is k's place in instruments.recent: a hash of the name's length
// and last byte, the code and the protocol.
func (k setKey) slot() int {
	n := len(k.method)
	h := n*31 + k.code*7 + int(k.proto)*3
	if n > 0 {
		h += int(k.method[n-1]) * 13
	}
	return h & 63
}

// setCache maps a call's setKey to its measurement options. Lookups read
// an immutable map through an atomic pointer: no lock is taken per call,
// and none is shared between connections; a miss (a new action, code or
// protocol) copies the map under mu, until it holds maxMethods sets.
// Past that, a new set's calls go to the overflow entry, found without
// a lock too.
type setCache struct {
	m    atomic.Pointer[map[setKey]*setEntry]
	over atomic.Pointer[setEntry] // made once, under mu, when the map is full
	mu   sync.Mutex
}

type setEntry struct {
	key  setKey
	opts []metric.RecordOption // WithAttributeSet, preallocated: a Record allocates no option
	set  attribute.Set
	fast *series // WithCallMetrics: where the call is counted
}

func (sc *setCache) get(k setKey, in *instruments) *setEntry {
	if m := sc.m.Load(); m != nil {
		if e := (*m)[k]; e != nil {
			return e
		}
		if e := sc.over.Load(); e != nil {
			return e // the map is full, and stays so
		}
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	old := sc.m.Load()
	if old != nil {
		if e := (*old)[k]; e != nil {
			return e
		}
		if len(*old) >= maxMethods {
			return sc.overflow(in)
		}
	}
	e := newSetEntry(k, in.base)
	e.key = k
	if in.calls != nil {
		e.fast = in.calls.newSeries(in.side, e.set, in.bounds)
	}
	n := make(map[setKey]*setEntry, 1+lenOf(old))
	if old != nil {
		for kk, v := range *old {
			n[kk] = v
		}
	}
	n[k] = e
	sc.m.Store(&n)
	return e
}

// overflow returns the entry of the calls past maxMethods sets, made on
// first use; sc.mu is held. Its key matches no call's (no action's name
// holds a NUL byte).
func (sc *setCache) overflow(in *instruments) *setEntry {
	if e := sc.over.Load(); e != nil {
		return e
	}
	kv := append([]attribute.KeyValue(nil), in.base...)
	kv = append(kv, attribute.String("rpc.method", OtherMethod), attribute.Bool("otel.metric.overflow", true))
	set := attribute.NewSet(kv...)
	e := &setEntry{key: setKey{method: "\x00overflow"}, opts: []metric.RecordOption{metric.WithAttributeSet(set)}, set: set}
	if in.calls != nil {
		e.fast = in.calls.newSeries(in.side, set, in.bounds)
	}
	sc.over.Store(e)
	return e
}

func lenOf(m *map[setKey]*setEntry) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

func newSetEntry(k setKey, base []attribute.KeyValue) *setEntry {
	kv := append([]attribute.KeyValue(nil), base...)
	kv = append(kv, attribute.String("rpc.method", k.method), attribute.String("rpc.response.status_code", strconv.Itoa(k.code)))
	if k.code != rpc.CodeOK {
		kv = append(kv, attribute.String("error.type", strconv.Itoa(k.code)))
	}
	kv = append(kv, protoAttrs(k.proto)...)
	set := attribute.NewSet(kv...)
	return &setEntry{opts: []metric.RecordOption{metric.WithAttributeSet(set)}, set: set}
}

// protoAttrs are network.transport and network.protocol.name of a
// session's protocol (none without a session: Server.Process, a client).
func protoAttrs(p rpc.Protocol) []attribute.KeyValue {
	switch p {
	case rpc.ProtoSRMP:
		return []attribute.KeyValue{attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "srmp")}
	case rpc.ProtoHTTP:
		return []attribute.KeyValue{attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http")}
	case rpc.ProtoWebSocket:
		return []attribute.KeyValue{attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "websocket")}
	case rpc.ProtoUDP:
		return []attribute.KeyValue{attribute.String("network.transport", "udp"), attribute.String("network.protocol.name", "srmp")}
	}
	return nil
}

// durationDescription is the call duration histograms' description by
// side, which Prometheus shows as the metric's HELP: the server's is the
// handler's time, not the whole call its caller waits for.
var durationDescription = map[string]string{
	"server": "Measures the duration of an incoming Remote Procedure Call (RPC) in the server: " +
		"from the routed request to its encoded result (argument binding, interceptors, handler; a stream: to its end). " +
		"Not in it: reading and decoding the request, waiting to run, writing the reply, the network. rpc.client.call.duration is the caller's whole call.",
	"client": "Measures the duration of an outgoing Remote Procedure Call (RPC) as the caller saw it, the network and the server's whole handling included.",
}
