package rpc

import (
	"context"
	"log/slog"
	"net"
	"runtime/debug"

	"github.com/lifenet/lifenet/internal/logattr"
)

// The rpc layer's log lines (docs/observability.md lists them). Each
// checks that its level is enabled before it formats anything.
const (
	msgPanic      = "rpc: handler panic"
	msgHidden     = "rpc: handler error (the caller gets its code's generic text)"
	msgTooLarge   = "rpc: reply too large"
	msgDropped    = "rpc: request dropped"
	msgSuppressed = "rpc: log lines suppressed"
)

// Kinds of lines a caller can cause, once per call: the first three are
// rate-limited; kindDropped is written at Debug, every line.
const (
	kindPanic    = iota // a handler's or interceptor's panic (Error)
	kindHidden          // a handler error whose text the caller does not get (Warn)
	kindTooLarge        // a reply past MaxFrame (Warn)
	numKinds
	kindDropped = numKinds // a request dropped unanswered (Debug)
)

var bg = context.Background()

// kindLines are the level and message of each kind's lines.
var kindLines = [...]struct {
	level slog.Level
	msg   string
}{kindPanic: {slog.LevelError, msgPanic}, kindHidden: {slog.LevelWarn, msgHidden},
	kindTooLarge: {slog.LevelWarn, msgTooLarge}, kindDropped: {slog.LevelDebug, msgDropped}}

// limited returns the level to write a rate-limited line of kind at: level
// while the kind's budget lasts, then Debug (if enabled: Debug shows every
// line), or false for no line.
func (s *Server) limited(ctx context.Context, kind int, level slog.Level) (slog.Level, bool) {
	if s.cfg.Log.Enabled(ctx, level) && s.limits.Allow(kind) {
		return level, true
	}
	return slog.LevelDebug, s.cfg.Log.Enabled(ctx, slog.LevelDebug)
}

// logSuppressed reports the lines of kind the rate limit held back.
func (s *Server) logSuppressed(kind int, n uint64) {
	level, line := kindLines[kind].level, kindLines[kind].msg
	if s.cfg.Log.Enabled(bg, level) {
		s.cfg.Log.LogAttrs(bg, level, msgSuppressed, slog.String(logattr.Line, line), slog.Uint64(logattr.Suppressed, n))
	}
}

// sessionAttrs appends the session, remote and protocol attributes of ss
// (nil: through Process, which has no peer) to a.
func sessionAttrs(a []slog.Attr, ss *Session) []slog.Attr {
	if ss == nil {
		return a
	}
	return append(a, slog.Uint64(logattr.Session, ss.ID()),
		slog.String(logattr.Remote, addrText(ss.RemoteAddr())),
		slog.String(logattr.Protocol, ss.Protocol().logName()))
}

// logPanic writes the Error line (rate-limited) of a handler's or an
// interceptor's panic v, with the stack. Call it from the deferred
// function that recovered v: the stack is the panicking goroutine's.
func (s *Server) logPanic(ctx context.Context, ss *Session, a *action, v any) {
	level, ok := s.limited(ctx, kindPanic, slog.LevelError)
	if !ok {
		return
	}
	name := "(unknown action)"
	if a != nil {
		name = a.name
	}
	var buf [8]slog.Attr
	attrs := append(sessionAttrs(append(buf[:0], slog.String(logattr.Action, name)), ss),
		slog.Any(logattr.Panic, v), slog.String(logattr.Stack, string(debug.Stack())))
	s.cfg.Log.LogAttrs(ctx, level, msgPanic, attrs...)
}

// logLine writes the line of kind (kindHidden: a handler's error err
// answered with its code's generic text; kindTooLarge: a reply past
// MaxFrame, answered 413; both rate-limited; kindDropped: a request
// dropped unanswered) about a call of action by ss; code, when not 0, is
// the reply's.
func (s *Server) logLine(kind int, ss *Session, action []byte, code int, err error) {
	level, msg := kindLines[kind].level, kindLines[kind].msg
	ok := s.cfg.Log.Enabled(bg, level) // kindDropped: Debug, every line
	if kind != kindDropped {
		level, ok = s.limited(bg, kind, level)
	}
	if !ok {
		return
	}
	var buf [8]slog.Attr
	attrs := sessionAttrs(append(buf[:0], slog.String(logattr.Action, clipName(string(action)))), ss)
	if code != 0 {
		attrs = append(attrs, slog.Int(logattr.Code, code))
	}
	s.cfg.Log.LogAttrs(bg, level, msg, append(attrs, slog.Any(logattr.Err, err))...)
}

// logName is p's name in log lines (logattr.Protocol): SRMP in datagrams
// is "srmp" too (the transport's lines name the network).
func (p Protocol) logName() string {
	return [...]string{ProtoSRMP: "srmp", ProtoHTTP: "http", ProtoWebSocket: "websocket", ProtoUDP: "srmp"}[p]
}

// addrText is a's text, or "" for none.
func addrText(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
