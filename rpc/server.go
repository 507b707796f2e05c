package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
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

	closing  atomic.Bool
	running  atomic.Int64 // calls in progress, for Shutdown
	pushSeq  atomic.Uint32
	sessions sync.Map // id → *Session

	dropped, panics atomic.Uint64
}

// NewServer returns a server with cfg and the built-in actions Api/All and
// Api/Info. It serves nothing until Listen or Serve.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.fill()
	s := &Server{cfg: cfg, started: time.Now()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	stages := []func() codec.Handler{codec.SRMP(cfg.Framer)}
	if !cfg.NoHTTP || !cfg.NoWebSocket {
		stages = append([]func() codec.Handler{func() codec.Handler { return newGateway(s) }}, stages...)
	}
	cs, err := codec.NewServer(cfg.Transport, codec.Options{
		Pipeline: codec.NewPipeline(stages...),
		Handler:  s.onMessage,
		OnOpen:   s.onOpen,
		OnClose:  s.onClose,
	})
	if err != nil {
		return nil, err
	}
	s.cs = cs
	s.registerBuiltins()
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
// to be written, then closes every connection. It returns ctx's error if
// ctx ends first, and then closes everything at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for s.running.Load() > 0 {
		select {
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		case <-t.C:
		}
	}
	err := s.cs.Shutdown(ctx)
	s.cancel()
	return err
}

// Close closes every listener and connection at once.
func (s *Server) Close() error {
	s.closing.Store(true)
	err := s.cs.Close()
	s.cancel()
	return err
}

// Stats are a server's counters of unusual events.
type Stats struct {
	Sessions int    // open connections and UDP peers
	Dropped  uint64 // requests dropped unanswered (bad body, empty or non-ASCII action)
	Panics   uint64 // handler panics (each answered with a 500)
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	return Stats{Sessions: s.cs.Transport().SessionCount(), Dropped: s.dropped.Load(), Panics: s.panics.Load()}
}

func (s *Server) onOpen(c *codec.Conn) {
	ss := newSession(s, c)
	c.SetState(ss)
	s.sessions.Store(ss.ID(), ss)
}

func (s *Server) onClose(c *codec.Conn, _ error) {
	if ss, ok := c.State().(*Session); ok {
		s.sessions.Delete(ss.ID())
		ss.cancel()
	}
}

// onMessage takes a connection's inbound SRMP message (borrowed) and runs
// it: on the reading goroutine when its action is Inline, the server is
// Serial or the connection has MaxInFlight calls running; else on a
// goroutine of its own.
func (s *Server) onMessage(c *codec.Conn, msg any) {
	m, ok := msg.(*codec.Message)
	if !ok || m.IsReply() {
		return // servers originate no requests: a stray reply has no taker
	}
	ss := c.State().(*Session)
	s.running.Add(1)
	if s.cfg.Serial || ss.running.Load() >= int32(s.cfg.MaxInFlight) || s.inline(m) {
		s.serve(ss, m)
		return
	}
	ss.running.Add(1)
	go s.serveKept(ss, m.Keep())
}

// inline reports whether m calls an Inline action.
func (s *Server) inline(m *codec.Message) bool {
	if m.Payload == nil || m.Payload.Next() != nil {
		return false
	}
	b, err := parseBody(m.Payload.Bytes(), false)
	if err != nil {
		return true // dropped at once: nothing to wait for
	}
	a := s.reg.find(b.action)
	return a != nil && a.inline
}

// serveKept runs an owned request on its own goroutine.
func (s *Server) serveKept(ss *Session, m *codec.Message) {
	s.serve(ss, m)
	m.Release()
	ss.running.Add(-1)
}

// serve runs one request and writes its reply.
func (s *Server) serve(ss *Session, m *codec.Message) {
	defer s.running.Add(-1)
	bp := bodyPool.Get().(*[]byte)
	defer putBody(bp)
	var payload []byte
	if m.Payload != nil {
		payload = m.Payload.Bytes()
		if m.Payload.Next() != nil {
			payload = m.PayloadBytes()
		}
	}
	out, isErr, ok := s.process(ss.ctx, ss, m.Kind == codec.KindOneWay, payload, (*bp)[:0])
	*bp = out
	if !ok {
		return
	}
	if !isErr {
		ss.conn.ReplyBytes(m, out) // a closed connection drops it, as it would any write
		return
	}
	p := packet.Get(len(out))
	copy(p.Bytes(), out)
	ss.conn.ReplyError(m, p)
}

// bodyPool holds reply-body buffers: a buffer that passes through an
// action's invoker escapes, so the serving goroutines share pooled ones.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// putBody returns a reply-body buffer to the pool, unless it grew large.
func putBody(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		*bp = (*bp)[:0]
		bodyPool.Put(bp)
	}
}

// Process runs one request body (an SRMP request's payload) without a
// socket, as NewLife's ApiServer.Process does, and appends the reply body
// to dst; isErr says the reply is an error reply. ok is false when NewLife
// would send no reply (a body it drops). ctx is the call's context
// (SessionFrom finds no session in it unless the caller put one there).
func (s *Server) Process(ctx context.Context, body, dst []byte) (reply []byte, isErr, ok bool) {
	s.running.Add(1)
	defer s.running.Add(-1)
	return s.process(ctx, nil, false, body, dst)
}

// process decodes a request body, runs its action and encodes the reply.
func (s *Server) process(ctx context.Context, ss *Session, oneWay bool, payload, dst []byte) ([]byte, bool, bool) {
	b, err := parseBody(payload, false)
	if err != nil || !validAction(b.action) {
		s.drop(ss, b.action, err)
		return dst, false, false
	}
	if ss != nil && b.hasData {
		ss.takeToken(b.data)
	}
	dst = appendNameBytes(dst, b.action)
	off := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	out, k, err := s.exec(ctx, ss, b.action, b.data, dst)
	if oneWay {
		return out, false, false
	}
	if err != nil {
		code, msg := errorCode(err)
		out = appendCode(dst[:off], code)
		out = appendDataLen(out, len(msg))
		return append(out, msg...), true, true
	}
	if k == kindNull {
		return out[:off], false, true
	}
	patchDataLen(out, off)
	return out, false, true
}

// exec finds and runs an action, turning a panic into a 500.
func (s *Server) exec(ctx context.Context, ss *Session, name, data, dst []byte) (out []byte, k kind, err error) {
	if s.closing.Load() {
		return dst, kindNull, ErrShutdown
	}
	a := s.reg.find(name)
	if a == nil {
		return dst, kindNull, notFound(name)
	}
	if auth := s.cfg.Authorize; auth != nil && !builtin(a.name) {
		if err := auth(ctx, ss, a.name); err != nil {
			return dst, kindNull, err
		}
	}
	defer func() {
		if r := recover(); r != nil {
			s.panics.Add(1)
			s.cfg.Log.Error("rpc: handler panic", "action", a.name, "panic", r, "stack", string(debug.Stack()))
			out, k, err = dst, kindNull, &ApiError{Code: CodeInternal, Message: fmt.Sprint(r)}
		}
	}()
	return a.invoke(ctx, data, dst)
}

// drop counts (and logs at debug level) a request NewLife drops unanswered.
func (s *Server) drop(ss *Session, action []byte, err error) {
	s.dropped.Add(1)
	if err == nil {
		err = errors.New("empty or non-ASCII action name")
	}
	var remote net.Addr
	if ss != nil {
		remote = ss.RemoteAddr()
	}
	s.cfg.Log.Debug("rpc: request dropped", "remote", remote, "action", string(action), "err", err)
}
