package rpc

import (
	"context"
	"sync/atomic"
	"time"
)

// CallKind tells calls apart: a call waiting for its reply, a one-way
// call, a stream, and (on a client) a server's push.
type CallKind uint8

const (
	KindUnary  CallKind = iota + 1 // Invoke and Call; a request with a reply
	KindOneWay                     // InvokeOneWay; a one-way request (no reply)
	KindStream                     // Stream and HandleStream
	KindPush                       // a server's push, as a client sees it (Session.Push, PushAll)
)

func (k CallKind) String() string {
	if k >= KindUnary && k <= KindPush {
		return [...]string{"unary", "one-way", "stream", "push"}[k-KindUnary]
	}
	return "unknown"
}

// CallInfo describes the call a server runs: what its handler's context
// and its interceptors see ([CallInfoFrom], [Invocation.Info]). It never changes
// during the call, and may be kept after it (a client's call's, which
// [Invocation.Info] gives its interceptors, may not: see there).
type CallInfo struct {
	action   string
	ss       *Session
	token    string
	x        *callExtras // what the call carries besides its token; nil: nothing
	kind     CallKind
	hasToken bool // token is the call's own (no session)
}

// callExtras is what a call may carry besides its token, apart from the
// CallInfo: the call context a session caches for its plain calls (one
// per action it calls: every idle device holds one) is then small.
type callExtras struct {
	deadline time.Time
	trace    TraceContext
	md       Metadata
	hasTrace bool
}

// noExtras is the extras of a call that carries none.
var noExtras callExtras

// extras returns the call's extras (noExtras when it has none).
func (i *CallInfo) extras() *callExtras {
	if i.x == nil {
		return &noExtras
	}
	return i.x
}

// Action returns the name the caller called (which may differ from the
// registered name in case, or be matched by "Controller/*" or "*").
func (i *CallInfo) Action() string { return i.action }

// Kind returns the kind of call.
func (i *CallInfo) Kind() CallKind { return i.kind }

// Session returns the caller's session: nil for [Server.Process] and on a
// client.
func (i *CallInfo) Session() *Session { return i.ss }

// Token returns the caller's token: its session's ([Session.Token], which
// a Token argument of this call has updated), or through
// [Server.Process] the call's Token argument.
func (i *CallInfo) Token() string {
	if i.ss != nil && !i.hasToken {
		return i.ss.Token()
	}
	return i.token
}

// Metadata returns the call's metadata: the entries of its argument object
// under reserved keys (traceparent, TraceId, Timeout-Ms, …; the token is
// [CallInfo.Token]) and under the server's [Config.MetadataKeys], as
// text. nil when it has none.
func (i *CallInfo) Metadata() Metadata { return i.extras().md }

// Deadline returns the deadline the caller sent (its remaining time, as
// Timeout-Ms; see [ClientConfig.SendTimeout]); ok is false when it sent
// none. The handler's context ends then.
func (i *CallInfo) Deadline() (deadline time.Time, ok bool) {
	d := i.extras().deadline
	return d, !d.IsZero()
}

// Trace returns the caller's trace context (traceparent, or NewLife's
// Request-Id, Eagleeye-Traceid or TraceId; over HTTP also a traceparent
// header); ok is false when the call carries none.
func (i *CallInfo) Trace() (tc TraceContext, ok bool) {
	x := i.extras()
	return x.trace, x.hasTrace
}

// Protocol returns what the caller's connection speaks (0 without a
// session).
func (i *CallInfo) Protocol() Protocol {
	if i.ss == nil {
		return 0
	}
	return i.ss.Protocol()
}

type callInfoKey struct{}

// traceKey holds a *TraceContext (WithTraceContext).
type traceKey struct{}

// CallInfoFrom returns the call a handler's context belongs to, or nil: a
// context from elsewhere, or a call through [Server.Process] that carries
// no trace context, deadline or metadata on a server without interceptors
// (the direct path allocates nothing for it).
func CallInfoFrom(ctx context.Context) *CallInfo {
	i, _ := ctx.Value(callInfoKey{}).(*CallInfo)
	return i
}

// WithTraceContext returns a context whose calls carry tc (a client sends
// it as NewLife's tracer does: "traceparent" in the argument object; over
// HTTP a traceparent header). A handler's context carries its caller's
// trace context already, so the calls it makes continue the caller's
// trace; an OpenTelemetry interceptor replaces it with its own span's.
func WithTraceContext(ctx context.Context, tc TraceContext) context.Context {
	return context.WithValue(ctx, traceKey{}, &tc)
}

// TraceContextFrom returns the trace context ctx carries: set by
// [WithTraceContext], or a handler's caller's; ok is false when it has
// none.
func TraceContextFrom(ctx context.Context) (tc TraceContext, ok bool) {
	if p, _ := ctx.Value(traceKey{}).(*TraceContext); p != nil {
		return *p, true
	}
	return tc, false
}

// callCtx is a handler's context: its session's (or Process's caller's),
// with the call's CallInfo.
type callCtx struct {
	context.Context
	info CallInfo
}

func (c *callCtx) Value(k any) any {
	switch k.(type) {
	case callInfoKey:
		return &c.info
	case traceKey:
		if x := c.info.x; x != nil && x.hasTrace {
			return &x.trace
		}
	}
	return c.Context.Value(k)
}

// callCtxExtras is a call context and its extras in one allocation, for
// a call made apart from the session's cache (callContext).
type callCtxExtras struct {
	callCtx
	x callExtras
}

// callCache holds a session's call contexts of the calls that carry no
// more than a token (no trace, deadline or metadata), by action: such a
// context never changes, so the calls of the same action share one, and a
// call allocates none. Its slots are made by the session's first such
// call and dropped when the session parks (Server.onPark): a busy
// session keeps them, an idle one (an idle device's) holds none, and its
// next call makes them again.
type callCache struct {
	slots atomic.Pointer[callSlots] // nil until a call makes it, and again once the session parks
}

// callSlots are a callCache's contexts, by action ID.
type callSlots [4]atomic.Pointer[callCtx]

// get returns the shared context of calls of kind of action a on ss.
func (cc *callCache) get(ss *Session, a *action, kind CallKind) context.Context {
	sl := cc.slots.Load()
	if sl == nil {
		sl = new(callSlots)
		cc.slots.Store(sl) // a concurrent call's slots may be lost: their contexts are made again when next needed
	}
	p := &sl[a.id&uint32(len(sl)-1)]
	if c := p.Load(); c != nil && c.info.kind == kind && c.info.action == a.name {
		return c
	}
	c := &callCtx{Context: ss.ctx(), info: CallInfo{action: a.name, kind: kind, ss: ss}}
	p.Store(c)
	return c
}

// drop lets the cache's slots and contexts go (a call running meanwhile
// may store its context in the dropped slots: it is made again when next
// needed).
func (cc *callCache) drop() {
	if cc.slots.Load() != nil {
		cc.slots.Store(nil)
	}
}

// callContext reads what a request's data carries besides its arguments:
// the token (into the session), the trace context (or traceHeader, an
// HTTP request's traceparent), the deadline and the metadata; and returns
// the handler's context and the data to bind (nil for an object of
// reserved keys alone, unless the action binds them by name). cancel, when not nil, ends the context's deadline.
// name is the name called, a its action (nil: unknown); parent is
// Process's caller's context (a session's calls descend from its own).
func (s *Server) callContext(parent context.Context, ss *Session, name []byte, a *action, kind CallKind, data []byte, traceHeader string) (ctx context.Context, bind []byte, cancel context.CancelFunc) {
	raw := data
	d := scanCall(data, s.keys)
	if d.hasToken && ss != nil {
		ss.noteToken(d.token)
	}
	// An object of reserved keys and metadata alone is no arguments (a
	// lifenet client's call without arguments that carries a token,
	// metadata or a deadline); a named parameter, or a field, may be a
	// reserved key (Token).
	if d.object && d.others == 0 && (d.md > 0 || d.hasToken) && (a == nil || (len(a.params) == 0 && !a.fields)) {
		data = nil
	}
	if d.md == 0 && traceHeader == "" { // no trace, deadline or metadata: nothing of the call's own
		switch {
		case ss != nil && a != nil && string(name) == a.name:
			return ss.calls.get(ss, a, kind), data, nil
		case ss == nil && s.chain == nil:
			return parent, data, nil // the direct path allocates nothing
		}
	}
	if ss != nil {
		parent = ss.ctx()
	}
	f := &callCtxExtras{callCtx: callCtx{Context: parent, info: CallInfo{kind: kind, ss: ss}}}
	c, x := &f.callCtx, &f.x
	if a != nil && string(name) == a.name {
		c.info.action = a.name
	} else {
		c.info.action = string(name)
	}
	if d.hasToken && ss == nil {
		c.info.token, c.info.hasToken = textOf(d.token), true
	}
	if d.trace != nil {
		x.trace, x.hasTrace = traceFrom(d.traceKey, textOf(d.trace))
	} else if traceHeader != "" {
		x.trace, x.hasTrace = ParseTraceContext(traceHeader)
	}
	if d.md > 0 {
		x.md = metadataOf(raw, s.keys, d.md)
	}
	dl, hasDeadline := timeoutOf(d.timeout, time.Now())
	x.deadline = dl
	if x.hasTrace || x.md != nil || hasDeadline {
		c.info.x = x
	}
	if hasDeadline {
		ctx, cancel = context.WithDeadline(c, dl)
		return ctx, data, cancel
	}
	return c, data, nil
}
