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
	Duration time.Duration // from the call's routing to its result (a stream: to its end): the handler's time
	// Wait is the time before Duration: from the server's first sight of
	// the request to the call's start. Over SRMP (TCP, WebSocket, UDP) it
	// starts when the codec hands the server the framed request (the
	// earliest time this package knows: the socket read and the framing
	// before it are not in it) and takes in routing, waiting for a
	// goroutine to run on, and that goroutine's wait for a CPU; over HTTP
	// it starts when net/http hands over the request (its head read) and
	// takes in reading the body and its arguments. 0 for a stream and a
	// call through [Server.Process]. Wait+Duration is the server's time
	// from the request to its encoded result; the reply's write comes
	// after the hook.
	Wait     time.Duration
	Request  int // the request's data, in bytes (reserved keys included)
	Response int // the result's data, in bytes; -1 for a one-way call and a stream, which have none
}

// received is the time (a mono reading) a request reached the server, for
// CallEvent.Wait: 0 without Config.OnCallDone, which saves the clock read.
func (s *Server) received() int64 {
	if s.cfg.OnCallDone == nil {
		return 0
	}
	return mono.Now()
}

// observe reports a call that the server got at recv (0: not known) and
// started at start (mono readings) to Config.OnCallDone. A panic of the
// hook is counted and logged as a handler's is; the call's reply still
// goes out.
func (s *Server) observe(ss *Session, a *action, kind CallKind, recv, start int64, err error, req, resp int) {
	defer s.recoverHook(ss, a)
	ev := CallEvent{Kind: kind, Session: ss, Code: CodeOf(err), Err: err, Duration: time.Duration(mono.Now() - start), Request: req, Response: resp}
	if recv != 0 && recv < start {
		ev.Wait = time.Duration(start - recv)
	}
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
