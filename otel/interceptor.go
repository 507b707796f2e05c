package otel

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/lifenet/lifenet/internal/mono"
	"github.com/lifenet/lifenet/rpc"
)

// ServerInterceptor returns an interceptor for rpc.Config.Interceptors
// that measures every call the server answers (rpc.server.call.duration,
// rpc.server.request.size, rpc.server.response.size) and traces it (a
// server span, the child of the caller's trace context). Install it
// first, so that it sees the calls the others refuse. For the metrics,
// rpc.Config.OnCallDone with [ServerCallDone] costs about a third of it;
// with that, install this one WithoutMetrics, for the traces. It panics if the
// meter provider refuses the instruments (it returns an error only for
// invalid names, and these are valid).
func ServerInterceptor(opts ...Option) rpc.Interceptor {
	c := newConfig(opts)
	ic, err := newInterceptor(c, "server")
	if err != nil {
		panic("lifenet/otel: " + err.Error())
	}
	return ic.server
}

// ClientInterceptor returns an interceptor for
// rpc.ClientConfig.Interceptors that measures every call the client makes
// (rpc.client.call.duration, rpc.client.response.size and, with
// [WithClientRequestSize], rpc.client.request.size) and traces it (a
// client span, whose context the call carries to the server). A server's
// pushes pass through untouched.
func ClientInterceptor(opts ...Option) rpc.Interceptor {
	c := newConfig(opts)
	ic, err := newInterceptor(c, "client")
	if err != nil {
		panic("lifenet/otel: " + err.Error())
	}
	return ic.client
}

type interceptor struct {
	cfg    *config
	in     *instruments // nil: WithoutMetrics
	tracer trace.Tracer // nil: WithoutTraces
	attrs  []attribute.KeyValue
}

func newInterceptor(c *config, side string) (*interceptor, error) {
	ic := &interceptor{cfg: c, attrs: append([]attribute.KeyValue{attribute.String("rpc.system.name", SystemName)}, c.serverAttrs...)}
	if !c.noMetrics {
		in, err := newInstruments(c, side)
		if err != nil {
			return nil, err
		}
		ic.in = in
	}
	if !c.noTraces {
		ic.tracer = c.tp.Tracer(ScopeName, trace.WithInstrumentationVersion(Version), trace.WithSchemaURL(SchemaURL))
	}
	return ic, nil
}

func protocolOf(info *rpc.CallInfo) rpc.Protocol {
	if info == nil {
		return 0
	}
	return info.Protocol()
}

func (ic *interceptor) server(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
	var start int64 // a mono reading: one clock read, not time.Now's two
	if ic.in != nil {
		start = mono.Now()
	}
	info := c.Info()
	var span trace.Span
	if ic.tracer != nil {
		ctx, span = ic.traceServer(ctx, c, info)
	}
	if span == nil && ic.in == nil { // traces only, and this call is not traced
		return next(ctx, c)
	}
	err := next(ctx, c)
	code := rpc.CodeOf(err)
	if ic.in != nil {
		var ss *rpc.Session
		if info != nil {
			ss = info.Session()
		}
		ic.in.serverCall(ctx, c.Registered(), code, ss, time.Duration(mono.Now()-start), len(c.Args()), respSize(c))
	}
	if span != nil {
		endSpan(span, code, err, code >= 500)
	}
	return err
}

// traceServer starts a server call's span, unless WithSampling drops the
// call (span nil).
func (ic *interceptor) traceServer(ctx context.Context, c *rpc.Invocation, info *rpc.CallInfo) (context.Context, trace.Span) {
	if h := ic.cfg.sampling; h != nil {
		var keep bool
		if ctx, keep = h.server(ctx, info); !keep {
			return ctx, nil
		}
	}
	ctx, span := ic.startServer(ctx, c, info)
	itemEvents(span, c)
	return ctx, span
}

func (ic *interceptor) startServer(ctx context.Context, c *rpc.Invocation, info *rpc.CallInfo) (context.Context, trace.Span) {
	ctx, extra := serverParent(ctx, info)
	attrs := make([]attribute.KeyValue, 0, len(ic.attrs)+6+len(extra))
	attrs = append(attrs, ic.attrs...)
	method := serverMethod(c)
	attrs = append(attrs, attribute.String("rpc.method", method))
	attrs = append(attrs, protoAttrs(protocolOf(info))...)
	attrs = append(attrs, extra...)
	if info != nil && info.Session() != nil {
		if a := info.Session().RemoteAddr(); a != nil {
			attrs = append(attrs, attribute.String("network.peer.address", a.String()))
		}
	}
	ctx, span := ic.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	// The calls the handler makes continue this span's trace, with or
	// without a client interceptor of this package.
	return withSpanTrace(ctx, span), span
}

// serverMethod is a server's call's rpc.method and span name: the
// action's registered name, or OtherMethod for an unknown action (whose
// name is the caller's, of unbounded choice).
func serverMethod(c *rpc.Invocation) string {
	if m := c.Registered(); m != "" {
		return m
	}
	return OtherMethod
}

// withSpanTrace makes span's trace context the one ctx's rpc calls carry,
// when it has one: a tracer that makes no spans (OpenTelemetry's no-op,
// the global default) returns an invalid one, and the trace context the
// call came with (its caller's, or NewLife's) is kept.
func withSpanTrace(ctx context.Context, span trace.Span) context.Context {
	sc := span.SpanContext()
	if !sc.IsValid() {
		return ctx
	}
	return rpc.WithTraceContext(ctx, TraceContextOf(sc))
}

func (ic *interceptor) client(ctx context.Context, c *rpc.Invocation, next rpc.Next) error {
	if c.Kind() == rpc.KindPush {
		return next(ctx, c)
	}
	var start int64 // a mono reading: one clock read, not time.Now's two
	if ic.in != nil {
		start = mono.Now()
	}
	var span trace.Span
	if ic.tracer != nil {
		ctx, span = ic.traceClient(ctx, c)
	}
	if span == nil && ic.in == nil {
		return next(ctx, c)
	}
	err := next(ctx, c)
	code := rpc.CodeOf(err)
	if ic.in != nil {
		e := ic.in.entry(setKey{method: c.Action(), code: code})
		req := -1
		if ic.in.withReq {
			req = len(c.Args())
		}
		ic.in.record(ctx, e, uint64(start>>10), time.Duration(mono.Now()-start), req, respSize(c))
	}
	if span != nil {
		endSpan(span, code, err, code != rpc.CodeOK)
	}
	return err
}

// traceClient starts a client call's span, whose context the call
// carries, unless WithSampling drops the call (span nil).
func (ic *interceptor) traceClient(ctx context.Context, c *rpc.Invocation) (context.Context, trace.Span) {
	if h := ic.cfg.sampling; h != nil {
		var keep bool
		if ctx, keep = h.client(ctx); !keep {
			return ctx, nil
		}
	}
	attrs := make([]attribute.KeyValue, 0, len(ic.attrs)+1)
	attrs = append(append(attrs, ic.attrs...), attribute.String("rpc.method", c.Action()))
	ctx, span := ic.tracer.Start(clientParent(ctx), c.Action(), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	ctx = withSpanTrace(ctx, span)
	itemEvents(span, c)
	return ctx, span
}

// The conventions' event per message of a call, and its attributes.
const (
	messageEvent            = "rpc.message"
	messageTypeKey          = attribute.Key("rpc.message.type")
	messageIDKey            = attribute.Key("rpc.message.id")
	messageUncompressedSize = attribute.Key("rpc.message.uncompressed_size")
)

var (
	messageSent     = messageTypeKey.String("SENT")
	messageReceived = messageTypeKey.String("RECEIVED")
)

// itemEvents adds an rpc.message event to a recording span for each item
// of a stream c (the server's items SENT, the client's RECEIVED; ids from
// 1), through rpc.Invocation.OnItem. A span not recording (sampled out)
// and a call that is not a stream cost nothing here.
func itemEvents(span trace.Span, c *rpc.Invocation) {
	if c.Kind() != rpc.KindStream || !span.IsRecording() {
		return
	}
	id := 0
	c.OnItem(func(sent bool, size int) {
		id++
		typ := messageReceived
		if sent {
			typ = messageSent
		}
		span.AddEvent(messageEvent, trace.WithAttributes(typ, messageIDKey.Int(id), messageUncompressedSize.Int(size)))
	})
}

// endSpan sets a span's status code attribute and, for a failed call,
// its error status, and ends it.
// respSize is a unary call's response size; -1 for other kinds.
func respSize(c *rpc.Invocation) int {
	if c.Kind() != rpc.KindUnary {
		return -1
	}
	return len(c.Result())
}

func endSpan(span trace.Span, code int, err error, failed bool) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("rpc.response.status_code", strconv.Itoa(code)))
		if failed {
			span.SetAttributes(attribute.String("error.type", strconv.Itoa(code)))
			msg := strconv.Itoa(code)
			if err != nil {
				msg = err.Error()
			}
			span.SetStatus(codes.Error, msg)
		}
	}
	span.End()
}
