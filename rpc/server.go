package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/internal/logattr"
	"github.com/lifenet/lifenet/internal/mono"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Server is an RPC server wire-compatible with NewLife.Remoting's
// ApiServer: register actions (Register, Handle), then Listen. One port
// serves SRMP, HTTP and WebSocket (see Config). All methods are safe for
// concurrent use; actions may be registered while serving.
type Server struct {
	cfg     Config
	reg     registry
	cs      *codec.Server
	ctx     context.Context // parent of the sessions' contexts
	cancel  context.CancelFunc
	started time.Time

	closing    atomic.Bool
	notServing atomic.Bool // SetServing(false)
	// stopped: Close (or Shutdown past its ctx) began; calls cut short end
	// unanswered, failing with their connections (see stop).
	stopped atomic.Bool
	pushSeq atomic.Uint32
	// spawned counts the calls and streams running on goroutines of their
	// own, server-wide, whether or not their connection is still open:
	// Shutdown waits for them all. Its two atomic adds per spawned call
	// share one cache line between cores, small beside the goroutine the
	// call starts; calls run inline (the benchmarks') do not touch it.
	spawned atomic.Int64

	dropped, panics atomic.Uint64

	limits *logattr.Limiter // the rate limits of the lines a caller can cause; stopped by Close and Shutdown

	web *webServer // the connections whose first bytes are HTTP (nil: Config.NoHTTP and NoWebSocket)

	keys  *keySet // Config.MetadataKeys
	chain Next    // Config.Interceptors and Authorize around runCall; nil: none
}

// NewServer returns a server with cfg and the built-in actions Api/All and
// Api/Info (unless Config.NoBuiltins; see [Config.AuthorizeBuiltins] and
// [Server.Register] to guard or replace them). It serves nothing until
// Listen or Serve.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.fill()
	s := &Server{cfg: cfg, started: time.Now()}
	if len(cfg.MetadataKeys) > 0 {
		s.keys = &keySet{keys: append([]string(nil), cfg.MetadataKeys...)}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.limits = logattr.NewLimiter(numKinds, logattr.Burst, logattr.Interval, s.logSuppressed)
	ics := append([]Interceptor(nil), cfg.Interceptors...)
	if cfg.Authorize != nil {
		ics = append(ics, s.authorize) // innermost: the others see the calls it refuses
	}
	if len(ics) > 0 {
		s.chain = chain(ics, s.runCall)
	}
	opts := codec.Options{
		Pipeline: codec.NewPipeline(codec.SRMPFraming(cfg.Framer)),
		Handler:  s.onMessage,
		OnOpen:   s.onOpen,
		OnClose:  s.onClose,
		OnPark:   s.onPark,
		Log:      cfg.Log, // the transport's too, unless Transport.Log is set

		ReadTimes: cfg.OnCallDone != nil, // a CallEvent's times start at the socket's read

		MaxPartialBytes: cfg.MaxPartialBytes,
	}
	if !cfg.NoHTTP || !cfg.NoWebSocket {
		opts.Route, opts.RouteTimeout, opts.HandOff = s.routeConn, cfg.Framer.Expire, func(c *transport.HandedConn) { s.web.l.push(c) }
	}
	cs, err := codec.NewServer(cfg.Transport, opts)
	if err != nil {
		return nil, err
	}
	s.cs = cs
	if opts.Route != nil {
		s.web = newWebServer(s)
	}
	if !cfg.NoBuiltins {
		s.registerBuiltins()
	}
	return s, nil
}

// Listen serves network ("tcp", "udp", …) on address; see
// transport.Server.Listen (port 0 picks one port for TCP and UDP alike).
func (s *Server) Listen(ctx context.Context, network, address string) (net.Addr, error) {
	return s.cs.Listen(ctx, network, address)
}

// Serve accepts connections from l until the server closes.
func (s *Server) Serve(l net.Listener) error { return s.cs.Serve(l) }

// Shutdown refuses new calls (they get a 503 error reply naming
// ErrShutdown), waits for the calls in progress to finish and their replies
// to be written, then closes every connection. Direct Process calls are
// the caller's to wait for. It returns ctx's error if
// ctx ends first, and then cancels the calls' contexts and closes
// everything at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.notServing.Store(true) // health checks first: balancers stop sending
	s.closing.Store(true)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for s.spawned.Load() > 0 {
		select {
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-t.C:
		}
	}
	stop := context.AfterFunc(ctx, s.stop) // ctx's end must reach inline handlers before the transport waits for them
	defer stop()
	err := s.cs.Shutdown(ctx)
	if s.web != nil {
		err = errors.Join(err, s.web.shutdown(ctx))
	}
	s.cancel()
	s.limits.Stop()
	return err
}

// Close cancels the contexts of the calls in progress and closes every
// listener and connection at once.
func (s *Server) Close() error {
	s.notServing.Store(true)
	s.closing.Store(true)
	s.stop()
	err := s.cs.Close()
	if s.web != nil {
		s.web.close()
	}
	s.limits.Stop() // after the calls: their last lines count in the summary
	return err
}

// stop cancels the calls' contexts, before the transport waits for the
// reading goroutines: an inline handler waiting on its ctx holds one. The
// calls it cuts short end unanswered (stopped is set before the cancel
// they see), so that they fail with their closing connections, as they
// would had the connections closed first, not with a reply saying their
// context was cancelled.
func (s *Server) stop() {
	s.stopped.Store(true)
	s.cancel()
}

// eachSession calls f for each open session (the codec server keeps the
// list of connections; each carries its session).
func (s *Server) eachSession(f func(*Session)) {
	s.cs.Range(func(c *codec.Conn) bool {
		if ss, ok := c.State().(*Session); ok {
			f(ss)
		}
		return true
	})
}

// Stats are a server's counters of unusual events, and its calls and
// memory in use now.
type Stats struct {
	Sessions int    // open connections and UDP peers
	Dropped  uint64 // requests dropped unanswered (bad body, empty or non-ASCII action)
	Panics   uint64 // handler panics (each answered with a 500)
	// InFlight is the calls and streams running now: those on goroutines
	// of their own (whether or not their connection is still open) and
	// those on the connections' reading goroutines (Inline actions, a
	// Serial server's calls, calls past MaxInFlight, a 404). Calls through
	// [Server.Process] are the caller's and not counted. Each connection
	// counts its own: the sum is taken when Stats is called.
	InFlight int
	// PartialBytes is the bytes the connections hold in incomplete frames
	// and requests now (codec.Server.PartialBytes; bounded by the codec's
	// MaxPartialBytes).
	PartialBytes int64
	// ByProtocol is the open sessions by [Protocol], taken as InFlight is;
	// index 0 counts the connections whose first bytes have not shown it
	// yet, and ProtoHTTP the open HTTP connections.
	ByProtocol [ProtoUDP + 1]int
}

// Transport returns the transport server under s: its Stats count
// connections by close reason (protocol violations, limits, timeouts).
func (s *Server) Transport() *transport.Server { return s.cs.Transport() }

// Stats returns the server's counters. Its InFlight visits every open
// session: a cost per call of Stats (a scrape), none per request.
func (s *Server) Stats() Stats {
	st := Stats{Sessions: s.cs.Transport().SessionCount(), Dropped: s.dropped.Load(), Panics: s.panics.Load(), PartialBytes: s.cs.PartialBytes()}
	if s.web != nil {
		n := int(s.web.open.Load())
		st.Sessions += n
		st.ByProtocol[ProtoHTTP] += n
	}
	inline, routed := 0, 0
	s.eachSession(func(ss *Session) {
		inline += int(ss.inline.Load())
		routed++
		if p := ss.Protocol(); int(p) < len(st.ByProtocol) {
			st.ByProtocol[p]++
		}
	})
	st.ByProtocol[0] = max(s.cs.Transport().SessionCount()-routed, 0)
	st.InFlight = int(s.spawned.Load()) + inline
	return st
}

func (s *Server) onClose(c *codec.Conn, err error) {
	if ss, ok := c.State().(*Session); ok {
		ss.endContext()
		if f := s.cfg.OnSessionClose; f != nil {
			defer s.recoverHook(ss, nil) // a panic of it counted and logged as a handler's
			f(ss, err)
		}
	}
}

// onPark drops what a session keeps only while it is busy: the call
// contexts its calls share (callCache). It runs on the connection's
// reading goroutine as the connection parks, never during an inline call;
// calls still running on their own goroutines (a new connection parks
// right after its first read) may cache a context after it, so the last
// of them to end drops the cache again (end).
func (s *Server) onPark(c *codec.Conn) {
	ss, ok := c.State().(*Session)
	if !ok {
		return
	}
	ss.parkRan.Store(true) // before the drop and the count: a call that ends after either sees it
	ss.calls.drop()
	if ss.running.Load() == 0 {
		ss.parkRan.Store(false) // no call to drop after
	}
}

// Session returns the open SRMP, WebSocket or UDP session whose ID is id
// (NewLife NetServer.GetSession): what a device gateway pushes to by a
// device's ID it kept. HTTP sessions last one request and are not found.
func (s *Server) Session(id uint64) (*Session, bool) {
	c, ok := s.cs.Conn(id)
	if !ok {
		return nil, false
	}
	ss, ok := c.State().(*Session)
	return ss, ok
}

// onMessage takes a connection's inbound SRMP message (borrowed), routes
// it and runs it where place says.
func (s *Server) onMessage(c *codec.Conn, msg any) {
	m, ok := msg.(*codec.Message)
	if !ok || m.IsReply() {
		return // servers originate no requests: a stray reply has no taker
	}
	recv := s.readClock(c) // CallEvent.Wait's start
	ss := c.State().(*Session)
	payload := m.PayloadBytes()
	b, a, ok := s.routeCall(ss, payload)
	if !ok {
		return
	}
	switch s.place(ss, a, len(payload)) {
	case runHere:
		ss.inline.Add(1) // the session's own counter: not a line every core writes
		s.serve(ss, m, b, a, recv, false)
		ss.inline.Add(-1)
	case runSpawned:
		s.begin(ss)
		go s.serve(ss, m.Keep(), body{}, nil, recv, true)
	case runRefused:
		if m.Kind == codec.KindOneWay {
			s.drop(ss, b.action, ErrBusy) // dropped, counted
		} else {
			replyError(ss, m, b.action, CodeUnavailable, ErrBusy.Error())
		}
	}
}

// backlogCheckAbove is the request size from which place looks at the
// connection's unwritten replies (a lock): smaller calls cannot hold much.
const backlogCheckAbove = 64 << 10

// Where a request runs.
const (
	runHere    = iota // on the reading goroutine
	runSpawned        // on a goroutine of its own, counted
	runRefused        // nowhere: a 503 (ErrBusy)
)

// place decides where a request for a (nil: unknown) runs, as the package
// documentation, [Config.Serial] and [Config.MaxInFlight] say: an unknown
// or Inline action, a Serial server's call and one past MaxInFlight on the
// reading goroutine, the rest on their own; a stream or a UDP peer's call
// past MaxInFlight is refused. A large request (size bytes) on a
// connection whose peer has not taken its replies (more than
// SendQueueBytes unwritten) runs on the reading goroutine too: reading
// stops until its reply is queued, where spawned calls would each hold a
// request and a reply for a peer that does not read.
func (s *Server) place(ss *Session, a *action, size int) int {
	mustSpawn := a != nil && a.stream != nil || ss.proto == ProtoUDP
	switch {
	case a == nil || a.inline:
		return runHere
	case size > backlogCheckAbove && !mustSpawn && ss.conn.Session().QueuedBytes() > s.cfg.Transport.SendQueueBytes:
		return runHere
	case ss.running.Load() < int32(s.cfg.MaxInFlight) && (mustSpawn || !s.cfg.Serial):
		return runSpawned
	case mustSpawn:
		return runRefused
	}
	return runHere
}

// replyError answers m with an error reply: action, code and msg.
func replyError(ss *Session, m *codec.Message, action []byte, code int32, msg string) {
	ss.sendReply(m, appendError(appendName(nil, action), code, msg), true)
}

// begin counts a call or stream about to run on a goroutine of its own
// (or an HTTP call): in its session, for MaxInFlight, and server-wide,
// for Shutdown (a call's connection may end before the call does, and
// Shutdown still waits for it). A call on a reading goroutine is not
// counted: the transport's shutdown waits for it. end, deferred by that
// goroutine, uncounts it.
func (s *Server) begin(ss *Session) {
	ss.running.Add(1)
	s.spawned.Add(1)
}

func (s *Server) end(ss *Session) {
	if ss.running.Add(-1) == 0 && ss.parkRan.Load() && ss.parkRan.CompareAndSwap(true, false) {
		ss.calls.drop() // what the calls cached after the session parked (onPark)
	}
	s.spawned.Add(-1)
}

// routeCall decodes a request body and finds its action (nil: unknown, a
// 404); ok is false for a request NewLife drops unanswered (counted).
func (s *Server) routeCall(ss *Session, payload []byte) (body, *action, bool) {
	b, err := parseBody(payload, false)
	switch {
	case err != nil || !validAction(b.action):
		s.drop(ss, b.action, err)
		return b, nil, false
	case len(b.action) > maxCallName:
		return b, nil, true // exec answers its 400
	}
	return b, s.reg.find(b.action), true
}

// serve runs one request and writes its reply; recv is when onMessage
// got it (see clock). On the reading goroutine it comes routed (b, a).
// Spawned, on a goroutine of its own (counted by begin), it owns m and
// routes it again: the same bytes, routed as onMessage did, whose b
// pointed into the borrowed message.
func (s *Server) serve(ss *Session, m *codec.Message, b body, a *action, recv int64, spawned bool) {
	if spawned {
		defer s.end(ss)
		defer m.Release()
		if b, a, _ = s.routeCall(ss, m.PayloadBytes()); a != nil && a.stream != nil {
			s.serveStream(ss, m, b, a)
			return
		}
	}
	if m.Flag&flagStream != 0 && a != nil && m.Kind != codec.KindOneWay {
		// A lifenet client's Stream: it would wait for an end a call never sends.
		replyError(ss, m, b.action, CodeBadRequest, ErrUnaryAction.Error()+" ("+clipName(string(b.action))+")")
		return
	}
	kind := KindUnary
	if m.Kind == codec.KindOneWay {
		kind = KindOneWay
	}
	bp := bodyPool.Get().(*[]byte)
	d := callDone{recv: recv}
	head := append(appendName((*bp)[:0], b.action), 0, 0, 0, 0) // then the data's length, patched by replyBody
	out, k, err := s.exec(ss.ctx(), ss, b.action, a, kind, b.data, "", head, &d, nil)
	out, isErr, gone := s.replyBody(ss, b.action, head, out, k, err)
	answered := false
	switch {
	case m.Kind == codec.KindOneWay: // never answered, even on error
	case s.stopped.Load(): // cut short by Close: it fails with its connection
	case gone: // past the deadline the caller sent: it stopped waiting, and would drop the reply
	case isErr || ss.proto == ProtoUDP:
		answered = ss.sendReply(m, out, isErr) == nil // an error reply, or a UDP peer's reply (UDPReplyFactor)
	case cap(out) > maxPooledBody:
		answered = ss.conn.Reply(m, packet.Wrap(out)) == nil // the pool does not keep it: the queue takes it as it is
	default:
		answered = ss.conn.ReplyBytes(m, out) == nil // copied; a closed connection drops it, as it would any write
	}
	if cap(out) <= maxPooledBody { // unless it grew large (and went out as it is)
		*bp = out[:0]
		bodyPool.Put(bp)
	}
	if s.cfg.OnCallDone != nil {
		s.observeWritten(ss, &d, answered)
	}
}

// bodyPool holds reply-body buffers: a buffer that passes through an
// action's invoker escapes, so the serving goroutines share pooled ones.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// maxPooledBody is the largest reply-body buffer the pool keeps.
const maxPooledBody = 64 << 10

// Process runs one request body (an SRMP request's payload) without a
// socket, as NewLife's ApiServer.Process does, and appends the reply body
// to dst; isErr says the reply is an error reply. ok is false when no
// reply would go out (a body NewLife drops, a call past the deadline its
// Timeout-Ms gave). ctx is the parent of the call's context (SessionFrom
// finds no session in it unless the caller put one there; CallInfoFrom
// finds the call when the server has interceptors or the call carries a
// trace context, a deadline or metadata). The interceptors run.
func (s *Server) Process(ctx context.Context, body, dst []byte) (reply []byte, isErr, ok bool) {
	b, a, ok := s.routeCall(nil, body)
	if !ok {
		return dst, false, false
	}
	var d callDone
	head := append(appendName(dst, b.action), 0, 0, 0, 0)
	out, k, err := s.exec(ctx, nil, b.action, a, KindUnary, b.data, "", head, &d, nil)
	reply, isErr, gone := s.replyBody(nil, b.action, head, out, k, err)
	if s.cfg.OnCallDone != nil {
		s.observe(nil, &d, 0)
	}
	return reply, isErr, !gone
}

// replyBody finishes the SRMP reply body exec appended to head (the
// action's name and room for the data's length): its result, or its error
// err; a result past Framer.MaxFrame is answered 413 (the caller's framer
// would end the connection). gone says the call ended past the deadline
// its caller sent, who no longer waits for the reply.
func (s *Server) replyBody(ss *Session, name, head, out []byte, k kind, err error) (body []byte, isErr, gone bool) {
	off := len(head) - 4
	switch {
	case err == errCallerGone:
		return head[:off], true, true
	case err == nil && k == kindNull:
		return out[:off], false, false
	case err == nil:
		patchDataLen(out, off)
		if err = tooLarge("reply", len(out), s.cfg.Framer.MaxFrame); err == nil {
			return out, false, false
		}
		s.logLine(kindTooLarge, ss, name, 0, err)
	}
	code, msg := s.errorReply(ss, name, err)
	return appendError(head[:off], code, msg), true, false
}

// errStreamHere: a streaming action called where replies cannot stream
// (the direct path).
var errStreamHere = &APIError{Code: 501, Message: "a streaming action needs an SRMP, WebSocket or HTTP call"}

// exec runs action a (nil: unknown name), called as name with data, in a
// context made by callContext from parent (Process's, an HTTP request's)
// or the session's, through the interceptors: a call appends its encoded
// result to dst, a stream (send not nil) hands its items to send. It
// refuses a call while shutting down, a name too long, too many keys, an
// unknown action without interceptors and a stream without send; a panic
// of the handler or of an interceptor is a 500. A call that ended past the
// deadline its caller sent is errCallerGone, an APIError of code 200 a
// success (success200); a stream's error ends it as it is. With
// Config.OnCallDone, d gets the call's event, d.recv (when the server got
// the request, see clock; 0: not known) set by the caller, who reports it
// (observe) once the reply is out; a stream's is reported here, at its
// end. traceHeader is an HTTP request's traceparent header.
func (s *Server) exec(parent context.Context, ss *Session, name []byte, a *action, kind CallKind, data []byte, traceHeader string, dst []byte, d *callDone, send func([]byte, kind) error) (out []byte, k kind, err error) {
	if s.cfg.OnCallDone != nil {
		d.a, d.kind, d.req, d.start = a, kind, len(data), mono.Now()
	}
	defer func() {
		if err != nil && err != errCallerGone && send == nil { // after a panic's 500 and the deadline's check
			out, k, err = success200(dst, err, out, k)
		}
		if s.cfg.OnCallDone != nil {
			d.end, d.err = mono.Now(), err
			if err == nil && k != kindNull {
				d.resp = len(out) - len(dst)
			}
			if send != nil {
				s.observe(ss, d, 0)
			}
		}
	}()
	switch err = s.refusal(name, a, data); { // one return here and one below: more would cost exec its open-coded defers
	case err != nil:
	case a == nil && s.chain == nil:
		if d := scanCall(data, s.keys); d.hasToken && ss != nil {
			ss.noteToken(d.token) // NewLife reads it before it looks the action up
		}
		err = notFound(name)
	case a != nil && a.stream != nil && send == nil:
		err = errStreamHere
	}
	if err != nil {
		return dst, kindNull, err
	}
	raw := data
	ctx, data, cancel := s.callContext(parent, ss, name, a, kind, data, traceHeader)
	if cancel != nil {
		defer func() {
			if ctx.Err() == context.DeadlineExceeded && send == nil {
				err = errCallerGone
			}
			cancel()
		}()
	}
	defer s.recoverCall(ctx, ss, a, &err) // interceptors are the application's code too: a panic in one is a 500
	switch {
	case s.chain != nil:
		c := sessionCall(ss)
		c.info, c.raw, c.data, c.keys = CallInfoFrom(ctx), raw, data, s.keys
		c.a, c.name, c.dst, c.off, c.send = a, name, dst, len(dst), send
		err = s.chain(ctx, c)
		out, k = c.dst, c.k
		endSessionCall(ss, c)
	case send != nil:
		out, k, err = dst, kindNull, a.stream(ctx, data, send)
	default:
		out, k, err = a.invoke(ctx, data, dst)
	}
	return out, k, err
}

// refusal is exec's refusal of a call or stream before it runs:
// ErrShutdown while shutting down, a 400 for a name too long to serve or
// for arguments of more than Config.MaxArgKeys keys (a document of n keys
// has at least 4n bytes: only longer ones are counted). A function of its
// own, to keep its formatting out of exec's frame.
func (s *Server) refusal(name []byte, a *action, data []byte) error {
	switch n := s.cfg.MaxArgKeys; {
	case s.closing.Load():
		return ErrShutdown
	case len(name) > maxCallName:
		return &APIError{Code: CodeBadRequest, Message: fmt.Sprintf("rpc: action name of %d bytes, limit %d", len(name), maxCallName)}
	case a != nil && !a.raw && len(data) > 4*n && countKeys(data, n) > n:
		return fmt.Errorf("%w: more than %d keys (Config.MaxArgKeys)", ErrArgs, n)
	}
	return nil
}

// runCall is the call itself, after the interceptors: the action's
// handler (or, for an unknown action, its 404).
func (s *Server) runCall(ctx context.Context, c *Invocation) error {
	switch {
	case c.a == nil:
		return notFound(c.name)
	case c.a.stream != nil:
		if c.onItem != nil {
			return c.a.stream(ctx, c.data, c.sendItem)
		}
		return c.a.stream(ctx, c.data, c.send)
	}
	out, k, err := c.a.invoke(ctx, c.data, c.dst[:c.off])
	c.dst, c.k = out, k
	if d, ok := c.info.Deadline(); ok && ctx.Err() != nil && !time.Now().Before(d) {
		// Past the deadline the caller sent: no reply goes (run says the
		// same once the chain returns), and the interceptors (the access
		// log, metrics, traces) see what the caller got.
		return errCallerGone
	}
	return err
}

// authorize is Config.Authorize as the innermost interceptor: it guards
// every action but the built-ins (unless Config.AuthorizeBuiltins) and
// Api/Health (always open, for probes); an unknown action's 404 needs no
// authorization, as NewLife's.
func (s *Server) authorize(ctx context.Context, c *Invocation, next Next) error {
	if a := c.a; a != nil && !a.open && (!a.builtin || s.cfg.AuthorizeBuiltins) {
		if err := s.cfg.Authorize(ctx, c.info.ss, a.name); err != nil {
			return err
		}
	}
	return next(ctx, c)
}

// recoverCall turns a panic of a handler or of an interceptor into a 500
// error (deferred), counted and logged once (rate-limited).
func (s *Server) recoverCall(ctx context.Context, ss *Session, a *action, err *error) {
	if r := recover(); r != nil {
		s.panics.Add(1)
		s.logPanic(ctx, ss, a, r)
		*err = panicError{r}
	}
}

// drop counts (and logs at debug level) a request NewLife drops unanswered.
func (s *Server) drop(ss *Session, action []byte, err error) {
	s.dropped.Add(1)
	if err == nil {
		err = errBadAction
	}
	s.logLine(kindDropped, ss, action, 0, err)
}

var errBadAction = errors.New("empty or non-ASCII action name")

// success200 turns an [*APIError] of code 200 into a success whose data is
// its message, as NewLife's EncoderBase.Encode and JsonEncoder.CreateResponse
// do for ApiException(200, …) (code 0 and 200 are both success: the reply
// has no error flag and no code). Other errors are returned as they are.
func success200(dst []byte, err error, out []byte, k kind) ([]byte, kind, error) {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != codeOK200 {
		return out, k, err
	}
	if ae.Message == "" {
		return dst, kindNull, nil
	}
	return append(dst, ae.Message...), kindText, nil
}
