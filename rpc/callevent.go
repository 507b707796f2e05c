package rpc

import (
	"time"

	"github.com/lifenet/lifenet/internal/mono"
)

// CallEvent is a call a server ran, as [Config.OnCallDone] sees it: every
// call, one-way call and stream that reached its action or its 404,
// through SRMP, HTTP, WebSocket, UDP or [Server.Process], including those
// refused after routing (ErrShutdown, ErrArgs past MaxArgKeys, a name too
// long). Not seen: requests dropped unanswered (Stats.Dropped) and calls
// refused ErrBusy past MaxInFlight before they ran.
type CallEvent struct {
	Action   string        // the action's registered name; "" for an unknown action (Code 404)
	Kind     CallKind      // unary, one-way or stream
	Session  *Session      // the caller's session; nil for Server.Process
	Code     int           // the reply's code, as [CodeOf] gives it ([CodeOK], 0, for a success)
	Err      error         // the call's error; nil on success
	Duration time.Duration // from the call's routing to its result (a stream: to its end)
	Request  int           // the request's data, in bytes (reserved keys included)
	Response int           // the result's data, in bytes; -1 for a one-way call and a stream, which have none
}

// observe reports a call that started at start (a mono reading) to
// Config.OnCallDone. A panic of the hook is counted and logged as a
// handler's is; the call's reply still goes out.
func (s *Server) observe(ss *Session, a *action, kind CallKind, start int64, err error, req, resp int) {
	defer s.recoverHook(ss, a)
	ev := CallEvent{Kind: kind, Session: ss, Code: CodeOf(err), Err: err, Duration: time.Duration(mono.Now() - start), Request: req, Response: resp}
	if a != nil {
		ev.Action = a.name
	}
	if kind != KindUnary {
		ev.Response = -1
	}
	s.cfg.OnCallDone(ev)
}

// recoverHook, deferred, counts and logs a panic of Config.OnCallDone.
func (s *Server) recoverHook(ss *Session, a *action) {
	if r := recover(); r != nil {
		s.panics.Add(1)
		s.logPanic(bg, ss, a, r)
	}
}
