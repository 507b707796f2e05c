package otel

import (
	"net"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// SemconvVersion is the version of the OpenTelemetry semantic conventions
// whose RPC instruments and attributes this package follows.
const SemconvVersion = "1.39.0"

// SchemaURL is the schema of [SemconvVersion], the instrumentation scope's.
const SchemaURL = "https://opentelemetry.io/schemas/" + SemconvVersion

// SystemName is the rpc.system.name of lifenet's calls: the protocol is
// NewLife.Remoting's (SRMP, and its HTTP and WebSocket forms).
const SystemName = "newlife"

// ScopeName is the instrumentation scope of this package's meters and
// tracers.
const ScopeName = "github.com/lifenet/lifenet/otel"

// Option configures an interceptor or an observer.
type Option func(*config)

type config struct {
	mp          metric.MeterProvider
	tp          trace.TracerProvider
	noMetrics   bool
	noTraces    bool
	reqSize     bool
	serverAttrs []attribute.KeyValue
	buckets     []float64
	calls       *CallMetrics // WithCallMetrics; nil: the MeterProvider's instruments
	sampling    *headSampler // WithSampling; nil: the tracer's sampler decides alone
}

// WithMeterProvider sets the meter provider (default: the global one,
// otel.GetMeterProvider at the time the interceptor is made).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithTracerProvider sets the tracer provider (default: the global one).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithoutMetrics records no metric: the interceptor only traces.
func WithoutMetrics() Option { return func(c *config) { c.noMetrics = true } }

// WithoutTraces starts no span: the interceptor only measures. The
// caller's trace context still reaches the handler (the rpc package
// carries it) and the calls it makes.
func WithoutTraces() Option { return func(c *config) { c.noTraces = true } }

// WithClientRequestSize records rpc.client.request.size. It is off by
// default: a client encodes its arguments once, into the request, and
// measuring them means encoding them a second time (an allocation per
// call). The server's request size costs nothing and is always recorded.
func WithClientRequestSize() Option { return func(c *config) { c.reqSize = true } }

// WithServerAddress sets server.address and server.port on every
// measurement and span: on a client the server it calls (a client may
// hold several; name the service), on a server its own listening address.
// addr is "host:port" or a bare host.
func WithServerAddress(addr string) Option {
	return func(c *config) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			host, port = addr, ""
		}
		c.serverAttrs = append(c.serverAttrs[:0], attribute.String("server.address", host))
		if p, err := strconv.Atoi(port); err == nil {
			c.serverAttrs = append(c.serverAttrs, attribute.Int("server.port", p))
		}
	}
}

// WithDurationBuckets sets the bucket boundaries (seconds) of the call
// duration histograms (default [DefaultDurationBuckets]).
func WithDurationBuckets(b []float64) Option { return func(c *config) { c.buckets = b } }

// DefaultDurationBuckets are the call duration histograms' bucket
// boundaries in seconds: from 10 µs (a call to an inline action over
// loopback) to 10 s, about 4 per decade below 1 ms and 8 per decade between
// 1 ms and 10 ms, where a latency target usually lies.
var DefaultDurationBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.000075, 0.0001, 0.00025, 0.0005, 0.00075,
	0.001, 0.0015, 0.002, 0.0025, 0.003, 0.004, 0.005, 0.006, 0.0075, 0.01,
	0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
}

// sizeBuckets are the size histograms' boundaries in bytes.
var sizeBuckets = []float64{0, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}

// sizeBounds are sizeBuckets as integers, for CallMetrics.
var sizeBounds = func() *bucketIndex {
	b := make([]int64, len(sizeBuckets))
	for i, v := range sizeBuckets {
		b[i] = int64(v)
	}
	return newBucketIndex(b)
}()

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		o(c)
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.buckets == nil {
		c.buckets = DefaultDurationBuckets
	}
	return c
}
