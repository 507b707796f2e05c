package rpc

import (
	"sync"
	"time"

	"github.com/lifenet/lifenet/codec"
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
	// starts when the read that completed the request's frame returned
	// from the socket (with OnCallDone set, the codec stamps each read:
	// codec.Options.ReadTimes) and takes in the framing, routing, waiting
	// for a goroutine to run on, and that goroutine's wait for a CPU; over
	// HTTP it starts when net/http hands over the request (its head read)
	// and takes in reading the body and its arguments. 0 for a stream and
	// a call through [Server.Process]. Wait+Duration is the server's time
	// from the request's read to its encoded result.
	Wait time.Duration
	// Written is the server's whole time on an answered call: from the
	// start of Wait to the write of the reply's last byte to the
	// connection (transport.Session.AfterWrites: a reply queued behind a
	// write in progress, or held with the other replies of its read to
	// leave in one write, is timed to that write); over HTTP, to the
	// answer written to net/http. OnCallDone runs after that write for
	// such a call, on the goroutine that wrote it. 0 for a one-way call, a
	// stream, a call through [Server.Process] and a reply not written (its
	// caller gone, the connection closed first, the server closed).
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

// readClock is when the read that completed c's message being handled
// arrived (a mono reading, Wait's start: codec's Conn.ReadTime, which
// Options.ReadTimes turns on with Config.OnCallDone); 0 without
// Config.OnCallDone.
func (s *Server) readClock(c *codec.Conn) int64 {
	if s.cfg.OnCallDone == nil {
		return 0
	}
	if t := c.ReadTime(); !t.IsZero() {
		return mono.Of(t)
	}
	return mono.Now()
}

// observeWritten reports the call d to Config.OnCallDone: once its reply
// has been written to the connection when answered (the transport's
// AfterWrites: the write of a reply queued behind others, or held with
// the other replies of its read, comes later than its hand-over), at once
// otherwise. The hook then runs on the goroutine that wrote the reply.
func (s *Server) observeWritten(ss *Session, d *callDone, answered bool) {
	if !answered || ss.conn == nil {
		s.observe(ss, d, 0)
		return
	}
	w := writeWaiters.Get().(*writeWaiter)
	w.s, w.ss, w.d = s, ss, *d // d is the caller's, gone before the write
	ss.conn.Session().AfterWrites(w)
}

// writeWaiter is an answered call waiting for its reply's write
// (observeWritten), pooled: the hook costs no allocation per call.
type writeWaiter struct {
	s  *Server
	ss *Session
	d  callDone
}

var writeWaiters = sync.Pool{New: func() any { return new(writeWaiter) }}

// Written reports the call, written at the time now when ok.
func (w *writeWaiter) Written(ok bool) {
	var written int64
	if ok {
		written = mono.Now()
	}
	w.s.observe(w.ss, &w.d, written)
	*w = writeWaiter{}
	writeWaiters.Put(w)
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
