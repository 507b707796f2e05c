// Package otel instruments lifenet's rpc servers and clients with
// OpenTelemetry: metrics and traces per call, as interceptors
// ([ServerInterceptor], [ClientInterceptor]), a server's call metrics
// more cheaply from its rpc.Config.OnCallDone hook ([ServerCallDone]),
// aggregated in lifenet rather than by the SDK's histograms
// ([CallMetrics]), and the transport's and the client's counters as
// observable instruments ([ObserveServer], [ObserveClient]).
//
// It is a module of its own (github.com/lifenet/lifenet/otel), so the
// library's module depends on no OpenTelemetry package: a server or
// client without these interceptors installed pays nothing for them.
//
// The metrics follow the OpenTelemetry semantic conventions for RPC of
// semconv v1.39.0 ([SemconvVersion]): rpc.server.call.duration,
// rpc.server.request.size, rpc.server.response.size and their client
// counterparts, with rpc.system.name "newlife" ([SystemName]: the protocol
// is NewLife.Remoting's SRMP, spoken by .NET and Go peers alike),
// rpc.method (the action called; "_OTHER" for an unknown action),
// rpc.response.status_code (the reply's code as text: "0", "404", …),
// error.type (the same code for a failed call), network.transport and
// network.protocol.name. docs/observability.md lists every instrument and
// span.
//
// Traces: the server interceptor starts a server span per call, the child
// of the caller's trace context ([rpc.CallInfo.Trace]: a NewLife client's
// traceparent). A trace context whose IDs are not W3C's (NewLife's own
// trace IDs have 30 characters) cannot be a parent: the span starts a new
// trace and records the caller's IDs as newlife.trace_id and
// newlife.parent_span_id. The span becomes the trace context of the
// calls the handler makes. The client interceptor starts a client span per
// call and sends its context with the call ([rpc.WithTraceContext]).
// [WithSampling] samples before the tracer sees a call, so that a call
// not traced costs a few hundred instructions, not the SDK's thousands.
package otel
