package rpc

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
)

// Session is one caller's connection (or UDP peer) to a Server (NewLife
// IApiSession). Handlers find theirs with SessionFrom. All methods are safe
// for concurrent use.
type Session struct {
	srv     *Server
	conn    *codec.Conn             // SRMP (raw, TLS, in WebSocket messages, UDP); nil for HTTP
	web     *webSession             // HTTP's own; nil otherwise (an SRMP session's size counts for every idle device)
	proto   Protocol                // chosen once, by the connection's first bytes (accept.go)
	ended   atomic.Bool             // the session has ended: its context is cancelled
	parkRan atomic.Bool             // it parked while calls ran on their own goroutines: the last to end drops calls (Server.onPark)
	lived   atomic.Pointer[liveCtx] // the session's cancellable context, made when first waited on (sessionctx.go)
	running atomic.Int32            // calls running on their own goroutines
	inline  atomic.Int32            // calls running on the reading goroutine (0 or 1), for Stats.InFlight
	token   atomic.Pointer[string]
	calls   callCache
	spare   atomic.Pointer[Invocation] // an emptied Invocation for the session's next intercepted call

	tlsState atomic.Pointer[tls.ConnectionState] // read from the connection on first use (TLS)
}

// webSession is what an HTTP request's session has of its own.
type webSession struct {
	conn net.Conn        // the connection net/http serves
	id   uint64          // the transport's ID of the connection (an SRMP conn's session has it otherwise)
	base context.Context // the request's context, its calls' parent (sessionctx.go)
	mu   sync.Mutex
	bag  map[any]any // Set's values (an SRMP session keeps them in its transport session), under mu
}

// Protocol is what a session's connection speaks.
type Protocol uint8

const (
	ProtoSRMP      Protocol = iota + 1 // raw SRMP over TCP, TLS or a Unix socket
	ProtoHTTP                          // HTTP/1.1 (the port's gateway)
	ProtoWebSocket                     // SRMP in WebSocket messages
	ProtoUDP                           // SRMP in UDP datagrams
)

func (p Protocol) String() string {
	if p >= ProtoSRMP && p <= ProtoUDP {
		return [...]string{"SRMP", "HTTP", "WebSocket", "UDP"}[p-ProtoSRMP]
	}
	return "undecided"
}

type sessionKey struct{}

// onOpen makes the session of an SRMP connection or UDP peer.
func (s *Server) onOpen(c *codec.Conn) {
	ss := &Session{srv: s, conn: c, proto: ProtoSRMP}
	switch _, isWS := c.Session().Conn().(*wsConn); {
	case c.Session().Datagram():
		ss.proto = ProtoUDP
	case isWS:
		ss.proto = ProtoWebSocket
	}
	c.SetState(ss)
}

// Protocol returns what the session's connection speaks: SRMP, HTTP,
// WebSocket or UDP.
func (s *Session) Protocol() Protocol { return s.proto }

// LocalAddr returns the server's address the caller reached.
func (s *Session) LocalAddr() net.Addr {
	if s.web != nil {
		return s.web.conn.LocalAddr()
	}
	return s.conn.Session().LocalAddr()
}

// SessionFrom returns the session of the call whose context ctx is, or
// nil (a direct Process call, or a context from elsewhere).
func SessionFrom(ctx context.Context) *Session {
	ss, _ := ctx.Value(sessionKey{}).(*Session)
	return ss
}

// ID returns the session's transport ID.
func (s *Session) ID() uint64 {
	if s.web != nil {
		return s.web.id
	}
	return s.conn.Session().ID()
}

// RemoteAddr returns the caller's address.
func (s *Session) RemoteAddr() net.Addr {
	if s.web != nil {
		return s.web.conn.RemoteAddr()
	}
	return s.conn.Session().RemoteAddr()
}

// Token returns the last token the caller sent (an argument named Token,
// or for HTTP an x-token or Authorization: Bearer header).
func (s *Session) Token() string {
	if t := s.token.Load(); t != nil {
		return *t
	}
	return ""
}

// SetToken sets the session's token (a login action issuing one, say).
func (s *Session) SetToken(t string) { s.token.Store(&t) }

// Set and Get keep application values on the session.
func (s *Session) Set(key, value any) {
	if s.web == nil {
		s.conn.Session().Set(key, value)
		return
	}
	s.web.mu.Lock()
	defer s.web.mu.Unlock()
	if s.web.bag == nil {
		s.web.bag = make(map[any]any)
	}
	s.web.bag[key] = value
}

// Get returns a value Set kept.
func (s *Session) Get(key any) (any, bool) {
	if s.web == nil {
		return s.conn.Session().Get(key)
	}
	s.web.mu.Lock()
	defer s.web.mu.Unlock()
	v, ok := s.web.bag[key]
	return v, ok
}

// Close ends the session's connection once what was sent to it so far has
// been written (a reply or push made just before is not lost); an HTTP
// connection closes once the response in progress is written.
func (s *Session) Close() error {
	if s.web != nil {
		return s.web.conn.Close()
	}
	return s.conn.Close()
}

// Push sends the caller a one-way request (NewLife IApiSession.InvokeOneWay):
// a server push, which the client's OnPush sees. args are encoded like a
// call's arguments. It fails with ErrPushHTTP on an HTTP connection, and
// with ErrTooLarge for a push over Config.Framer.MaxFrame.
//
// A push never waits for the peer: it is queued on the connection and Push
// returns. A client that does not read its pushes is closed as a slow
// consumer by the transport's limits (Config.Transport: SendQueueBytes and
// SendStallTimeout), never waited for.
func (s *Session) Push(action string, args any) error {
	if s.web != nil {
		return ErrPushHTTP // an HTTP connection has nowhere to put a push; a session reaches the application (SessionFrom) only once its protocol is known
	}
	body, _, err := appendRequest(nil, action, args, "", nil, nil)
	if err != nil {
		return err
	}
	return s.pushBody(body)
}

// sendReply answers the SRMP request m with body, a reply's body (an
// error reply's if isErr; a copy: the caller keeps body): how an error
// reply, a stream's item and a UDP peer's reply leave (a call's result
// over a stream socket goes straight to the connection: Server.serve). A
// UDP peer's reply is held to [Config.UDPReplyFactor] (udpRefusal).
func (s *Session) sendReply(m *codec.Message, body []byte, isErr bool) error {
	if s.proto == ProtoUDP && !s.srv.udpFits(m, len(body)) {
		if body, isErr = s.srv.udpRefusal(s, m, body, isErr), true; body == nil {
			return nil
		}
	}
	if !isErr {
		return s.conn.ReplyBytes(m, body)
	}
	p := packet.Get(len(body))
	copy(p.Bytes(), body)
	return s.conn.ReplyError(m, p)
}

func (s *Session) pushBody(body []byte) error {
	if err := tooLarge("push", len(body), s.srv.cfg.Framer.MaxFrame); err != nil {
		return err
	}
	p := packet.Get(len(body))
	copy(p.Bytes(), body)
	seq := uint8(s.srv.pushSeq.Add(1))
	return s.conn.Enqueue(codec.NewMessage(codec.KindOneWay, FlagRPC, seq, p)) // a push never waits for the peer
}

// PushAll sends a one-way request to every SRMP, WebSocket and UDP session
// (NewLife ApiServer.InvokeAll) and returns how many it went to. A
// connection whose client has not yet shown its protocol gets none. Like
// Push it never waits for a peer: its time does not depend on how many
// clients read, and a client that does not read is closed on its own.
func (s *Server) PushAll(action string, args any) (int, error) {
	body, _, err := appendRequest(nil, action, args, "", nil, nil)
	if err != nil {
		return 0, err
	}
	n := 0
	s.eachSession(func(ss *Session) {
		if ss.web == nil && ss.pushBody(body) == nil { // SRMP: raw, in WebSocket messages or UDP datagrams
			n++
		}
	})
	return n, nil
}

// noteToken sets the session's token from the raw value of an argument
// object's Token entry (NewLife's ApiHandler reads it into the session the
// same way; a null or empty token clears it), allocating only when it
// changes.
func (s *Session) noteToken(raw []byte) {
	t, ok := plainText(raw)
	if !ok {
		t = []byte(trimText(raw))
	}
	if s.Token() != string(t) {
		s.SetToken(string(t))
	}
}

// tokenHead is how a lifenet client's object of a token alone starts.
const tokenHead = `{"Token":"`

// tokenOnly reports whether data is exactly {"Token":"t"} with t free of
// escapes (how a lifenet client sends its token on a call without
// arguments).
func tokenOnly(data []byte) bool {
	n := len(data)
	return n >= len(tokenHead)+2 && string(data[:len(tokenHead)]) == tokenHead && data[n-1] == '}' && plainStringEnd(data, len(tokenHead)) == n-2
}
