package rpc

import (
	"context"
	"log/slog"
	"time"

	"github.com/lifenet/lifenet/internal/logattr"
)

// The access log's lines.
const (
	msgServed = "rpc: call served"   // a server's call (any kind)
	msgCalled = "rpc: call made"     // a client's call
	msgPushed = "rpc: push received" // a server's push, as its client got it
)

// AccessLog returns an interceptor writing one line to l at level for
// every call it wraps, once the call has ended: for a server's
// [Config.Interceptors] "rpc: call served", for a client's
// [ClientConfig.Interceptors] "rpc: call made" (and "rpc: push received"
// for each push). l nil means slog.Default() as it is now. Install it
// first, so that it sees the calls the other interceptors (and
// Config.Authorize) refuse, and their time.
//
// A line has the attributes of internal/logattr (docs/observability.md):
// action, code ([CodeOf] the call's error: 0 for a success), duration
// (from the interceptor to the call's end, retries after a 401 included),
// bytes_in and bytes_out (the data of the arguments and of the result as
// they go on the wire, reserved keys included; for a stream, its items'
// data summed), session, remote and protocol (a server's call through
// [Server.Process] has none), and err for a failed call. The line is
// written with the call's context, so a handler that reads trace IDs from
// it can link the line to the call's span.
//
// When l is not enabled for level the interceptor only calls next: no
// clock is read, nothing is allocated. Safe for concurrent use.
func AccessLog(l *slog.Logger, level slog.Level) Interceptor {
	if l == nil {
		l = slog.Default()
	}
	return func(ctx context.Context, c *Invocation, next Next) error {
		if !l.Enabled(ctx, level) {
			return next(ctx, c)
		}
		return logCall(ctx, l, level, c, next)
	}
}

// logCall runs the call c and writes its access line, also when the call
// panics (a server answers it 500; a client's panic reaches its caller),
// without recovering the panic: its stack stays the handler's.
func logCall(ctx context.Context, l *slog.Logger, level slog.Level, c *Invocation, next Next) error {
	start := time.Now()
	var items *int // a stream's item bytes, summed by an OnItem hook
	if c.info.kind == KindStream {
		items = new(int)
		c.OnItem(func(_ bool, size int) { *items += size })
	}
	err := error(errPanicked) // the line's err when next panics
	defer func() { writeAccessLine(ctx, l, level, c, err, time.Since(start), items) }()
	err = next(ctx, c)
	return err
}

// errPanicked is the err of the access line of a call that panicked.
var errPanicked = panicError{"the call panicked"}

// writeAccessLine writes the access line of c, which ended with err after d.
func writeAccessLine(ctx context.Context, l *slog.Logger, level slog.Level, c *Invocation, err error, d time.Duration, items *int) {
	res := 0 // the result's data: a unary call's, or a stream's items
	switch {
	case items != nil:
		res = *items
	case c.info.kind == KindUnary && err == nil:
		res = len(c.Result())
	}
	msg, in, out := msgServed, len(c.raw), res
	switch {
	case c.info.kind == KindPush:
		msg, out = msgPushed, 0
	case c.client: // its request goes out, its result comes in
		msg, in, out = msgCalled, res, c.sent
	}
	var buf [10]slog.Attr
	a := append(buf[:0],
		slog.String(logattr.Action, clipName(c.info.action)),
		slog.Int(logattr.Code, CodeOf(err)),
		slog.Duration(logattr.Duration, d),
		slog.Int(logattr.BytesIn, in),
		slog.Int(logattr.BytesOut, out))
	a = c.appendPeer(a)
	if err != nil {
		a = append(a, slog.Any(logattr.Err, err))
	}
	l.LogAttrs(ctx, level, msg, a...)
}

// appendPeer appends the session, remote and protocol attributes of c's
// peer, as far as they are known: a server's caller's session; a client's
// connection the call last went out on, or the HTTP server it went to.
func (c *Invocation) appendPeer(a []slog.Attr) []slog.Attr {
	if !c.client {
		return sessionAttrs(a, c.info.ss)
	}
	if c.conn != nil {
		a = append(a, slog.Uint64(logattr.Session, c.conn.Session().ID()),
			slog.String(logattr.Remote, addrText(c.conn.Session().RemoteAddr())))
	} else if c.peer != nil {
		a = append(a, slog.String(logattr.Remote, c.peer.Host))
	}
	if c.peer != nil {
		a = append(a, slog.String(logattr.Protocol, schemeProtocol(c.peer.Scheme)))
	}
	return a
}

// schemeProtocol is the protocol (logattr.Protocol) a client speaks to a
// server address of scheme.
func schemeProtocol(scheme string) string {
	switch scheme {
	case "ws", "wss":
		return "websocket"
	case "http", "https":
		return "http"
	}
	return "srmp"
}
