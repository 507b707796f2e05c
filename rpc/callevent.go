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
	// from the request to its encoded result.
	Wait time.Duration
	// Written is the server's whole time on an answered call: from the
	// start of Wait to the reply's hand-over to the connection (the
	// transport's write, or its place in the send queue behind a write in
	// progress or behind the other replies of the same read, which leave
	// in one write); over HTTP, to the answer written to net/http. It
	// takes in the reply's encoding and send after Duration. OnCallDone
	// runs after that hand-over for such a call. 0 for a one-way call, a
	// stream, a call through [Server.Process] and a reply not sent (its
	// caller gone, the server closed).
	Written  time.Duration
	Request  int // the request's data, in bytes (reserved keys included)
	Response int // the result's data, in bytes; -1 for a one-way call and a stream, which have none
}

// clock is the time now (a mono reading) for a CallEvent: when a request
// reached the server (Wait's start) or its reply was handed to the
// connection (Written's end); 0 without Config.OnCallDone, which saves the
// clock read.
func (s *Server) clock() int64 {
	if s.cfg.OnCallDone == nil {
		return 0
	}
	return mono.Now()
}

// callDone is what a call's [CallEvent] is made of: exec fills it as the
// call ends, and its caller reports it (observe) once the reply has been
// handed over, so that the event tells the whole time (exec reports a
// stream's).
type callDone struct {
	a                *action
	kind             CallKind
	recv, start, end int64 // mono readings: the request's arrival (0: not known), the call's start and its result
	err              error
	req, resp        int
}

// observe reports a call to Config.OnCallDone; written is when its reply
// was handed to the connection (a mono reading; 0: none was). A panic of
// the hook is counted and logged as a handler's is; the call's reply has
// gone out already.
func (s *Server) observe(ss *Session, d *callDone, written int64) {
	defer s.recoverHook(ss, d.a)
	ev := CallEvent{Kind: d.kind, Session: ss, Code: CodeOf(d.err), Err: d.err, Duration: time.Duration(d.end - d.start), Request: d.req, Response: d.resp}
	if d.recv != 0 && d.recv < d.start {
		ev.Wait = time.Duration(d.start - d.recv)
	}
	if written != 0 && d.recv != 0 && d.kind == KindUnary {
		ev.Written = time.Duration(written - d.recv)
	}
	if d.a != nil {
		ev.Action = d.a.name
	}
	if d.kind != KindUnary {
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
