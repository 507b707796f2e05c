package rpc

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"sync"

	"github.com/lifenet/lifenet/codec"
)

// Interceptor wraps the calls of a server ([Config.Interceptors]) or of a
// client ([ClientConfig.Interceptors]): calls, one-way calls, streams and,
// on a client, the server's pushes (c.Kind() tells them apart). It runs
// the call by calling next, with ctx or a context derived from it, and
// returns the call's error; it may return before calling next (an error
// refuses the call, [Invocation.SetResult] answers it instead), call next more
// than once (a client's retry), or change the result ([Invocation.SetResult]).
// Interceptors are chained in the order installed, the first outermost:
// it runs first and sees the error the others and the call return.
//
// On a server, interceptors run where the call runs (see the package
// documentation: for an action registered WithInline, on the connection's
// reading goroutine), for every call the server answers: an unknown
// action's too (its error is the 404), not those refused before
// (ErrShutdown while shutting down, ErrBusy past MaxInFlight). A panic in
// one is a panic of the call: a 500, counted and logged. The context they
// get is the handler's: [CallInfoFrom] finds the call in it, with its
// session, token, metadata, deadline and trace context. For a stream, next
// returns when the stream ends.
//
// On a client, the interceptors of a call run in the caller's goroutine
// before anything is sent; next encodes the call with the metadata and
// trace context of the context it gets (an interceptor adds them with
// [AppendToOutgoingContext] and [WithTraceContext]), sends it, waits for
// the reply and decodes it into the caller's result; a 401 runs
// ClientConfig.Login and sends the call again within one next. For a
// stream, next returns when the stream ends, the items going to the
// caller's loop meanwhile. A push's interceptors run on the connection's
// reading goroutine; next hands the push to ClientConfig.OnPush, and an
// interceptor that does not call it drops the push. A panic in a client's
// interceptor reaches the caller (in a push's, it ends the connection, as
// a panic of OnPush does).
//
// c is valid until the interceptor returns; keep nothing of it after.
type Interceptor func(ctx context.Context, c *Invocation, next Next) error

// Next runs the rest of a call: the next interceptor, and after the last
// the call itself.
type Next func(ctx context.Context, c *Invocation) error

// Invocation is one call as its interceptors see it: what it is, its arguments
// and its result. It is reused after the call: an interceptor keeps
// nothing of it once it returns.
type Invocation struct {
	info   *CallInfo
	own    CallInfo // a client's call's info
	client bool

	raw   []byte // the arguments' data (server: as it came; client: encoded when asked)
	data  []byte // server: the data to bind (nil for an object of reserved keys alone)
	keys  *keySet
	argv  any  // client: the caller's arguments
	coded bool // client: raw holds argv encoded

	// The result: server, the reply body being built (dst from off);
	// client, the reply's data.
	dst    []byte
	off    int
	k      kind
	result []byte

	onItem func(sent bool, size int) // OnItem's hooks, chained; nil: none

	// server
	a    *action
	name []byte
	send func(item []byte, k kind) error // a stream's

	// client
	res   any                                         // the caller's result pointer
	reply *codec.Message                              // the reply result aliases (released after the chain)
	item  func(*codec.Message) (more bool, err error) // a stream's consumer: more false when it stopped
	conn  *codec.Conn                                 // the connection the call last went out on (nil: none yet, or HTTP)
	peer  *url.URL                                    // the server address it last went to (HTTP), or conn's
	sent  int                                         // the data bytes of the request last sent
}

// Info returns the call's description. On a client it has the action, the
// kind and the client's token; the call's metadata and trace context are
// those of the context next gets ([OutgoingMetadata], [TraceContextFrom]).
// A client's is part of c, reused after the call as c is: copy it
// (*c.Info()) to keep it. A server's may be kept.
func (c *Invocation) Info() *CallInfo { return c.info }

// Action returns the name called.
func (c *Invocation) Action() string { return c.info.action }

// Registered returns, on a server, the name the call's action was
// registered under ("Bench/NoArg" for a call of "bench/noarg"; the pattern
// "Controller/*" or "*" that matched it) and "" for an unknown action: a
// name of the server's choosing, as [CallEvent].Action is, where
// [Invocation.Action] is the caller's. On a client it is Action.
func (c *Invocation) Registered() string {
	switch {
	case c.client:
		return c.info.action
	case c.a == nil:
		return ""
	}
	return c.a.name
}

// Kind returns the kind of call.
func (c *Invocation) Kind() CallKind { return c.info.kind }

// Client reports whether c is a client's call (or push), not a server's.
func (c *Invocation) Client() bool { return c.client }

// Args returns the data of the call's arguments as they go on the wire
// (borrowed: valid until the interceptor returns). On a server: the
// request's data, reserved keys included (a token, a trace context).
// On a client: the arguments encoded (as NewLife encodes them: a string
// raw, a struct as JSON; without the token and metadata the client merges
// in), encoded when first asked for; for a push, its data.
func (c *Invocation) Args() []byte {
	if c.client && !c.coded {
		c.coded = true
		c.raw, _, _ = appendValue(nil, c.argv)
	}
	return c.raw
}

// DecodeArgs binds the call's arguments to v (a pointer) as a handler's
// parameter is bound: a struct from an object by field name, a primitive
// from raw text or an object's one entry (the reserved keys aside), []byte
// as the data (borrowed).
func (c *Invocation) DecodeArgs(v any) error {
	data := c.data
	if c.client {
		data = c.Args()
	}
	return bindArg(data, c.keys, v)
}

// Result returns the call's result as it goes on the wire (borrowed:
// valid until the interceptor returns; nil for a null result and before
// next returns): on a server, what the reply carries; on a client, the
// reply's data (over HTTP the envelope's data, as JSON). A stream, a
// one-way call and a push have none.
func (c *Invocation) Result() []byte {
	if c.client {
		return c.result
	}
	if c.k == kindNull || len(c.dst) < c.off {
		return nil
	}
	return c.dst[c.off:]
}

// DecodeResult decodes the result into v (a pointer), as a client decodes
// a reply's data.
func (c *Invocation) DecodeResult(v any) error { return decodeResult(c.Result(), v) }

// SetResult makes v the call's result, encoded as a handler's result is
// (before next, it answers the call without running it; after, it
// replaces what the call returned): on a server, the reply carries it; on
// a client, it is decoded into the caller's result, which after next is
// emptied first (what the reply decoded into it goes; a nil v leaves it
// zero). An interceptor that
// then returns an error answers with the error instead. It fails for a
// stream, a one-way call and a push, which have no result to replace.
func (c *Invocation) SetResult(v any) error {
	if c.info.kind != KindUnary {
		return errNoResult
	}
	if c.client {
		b, _, err := appendValue(nil, v)
		if err != nil {
			return err
		}
		if rv := reflect.ValueOf(c.res); c.result != nil && rv.Kind() == reflect.Pointer && !rv.IsNil() {
			rv.Elem().SetZero() // the reply was decoded into it: v replaces it, fields and all
		}
		c.dropReply()
		c.result = b
		return decodeResult(b, c.res) // nothing to decode into without a result pointer
	}
	out, k, err := appendValue(c.dst[:c.off], v)
	if err != nil {
		return err
	}
	c.dst, c.k = out, k
	return nil
}

var errNoResult = errors.New("rpc: SetResult: only a call with a reply has a result")

// wentOut records, for a client's call, the connection its request (the
// body of action) was sent on. A nil c records nothing.
func (c *Invocation) wentOut(cn *codec.Conn, action string, body []byte) {
	if c == nil {
		return
	}
	c.conn, c.peer = cn, nil
	if cs, ok := cn.State().(*connState); ok {
		c.peer = cs.addr
	}
	c.sent = max(len(body)-nameLen(action)-4, 0) // the name, the data length, then the data
}

// OnItem registers f to be called for each item of a stream: on a server
// with sent true after each item is written (queued on the connection),
// on a client with sent false as each item comes, before the caller's
// loop gets it; size is the item's data, in bytes. An interceptor
// registers it before calling next; f runs on the goroutine running next,
// within it, and the hooks run in the order registered. A unary call, a
// one-way call and a push have no items: f is never called for them. A
// stream without hooks pays one nil check per item.
func (c *Invocation) OnItem(f func(sent bool, size int)) {
	if f == nil {
		return
	}
	if prev := c.onItem; prev != nil {
		c.onItem = func(sent bool, size int) { prev(sent, size); f(sent, size) }
		return
	}
	c.onItem = f
}

// dropReply releases the reply a client's result aliases.
func (c *Invocation) dropReply() {
	if c.reply != nil {
		c.reply.Release()
		c.reply = nil
	}
	c.result = nil
}

var callPool = sync.Pool{New: func() any { return new(Invocation) }}

// sessionCall returns an empty Invocation for a call of ss (nil: a
// client's call, or one through Server.Process): the session's spare,
// when no other call of the session holds it, else one from the pool. A
// session's calls mostly run one at a time on its reading goroutine, and
// an atomic swap costs a tenth of a pool's Get and Put.
func sessionCall(ss *Session) *Invocation {
	if ss != nil {
		if c := ss.spare.Swap(nil); c != nil {
			return c
		}
	}
	return callPool.Get().(*Invocation)
}

// endSessionCall empties c (the reply it held released) and keeps it as
// ss's spare, or returns it to the pool when the session has one already
// (or ss is nil). Under lifenet_debug it only empties c: a kept one panics
// when used.
func endSessionCall(ss *Session, c *Invocation) {
	c.dropReply()
	*c = Invocation{}
	if !debugCalls && (ss == nil || !ss.spare.CompareAndSwap(nil, c)) {
		callPool.Put(c)
	}
}

// chain builds the function that runs interceptors around last, the first
// outermost. It is built once: a call through it allocates nothing.
func chain(ics []Interceptor, last Next) Next {
	next := last
	for i := len(ics) - 1; i >= 0; i-- {
		ic, inner := ics[i], next
		if ic == nil {
			continue
		}
		next = func(ctx context.Context, c *Invocation) error { return ic(ctx, c, inner) }
	}
	return next
}
