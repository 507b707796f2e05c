package rpc

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gobwas/ws"
	"github.com/lifenet/lifenet/transport"
)

// webServer serves the connections whose first bytes are HTTP (accept.go)
// with net/http: one http.Server per rpc Server, over a listener the
// transport's hand-offs feed. Its limits are net/http's: MaxHeaderBytes,
// ReadHeaderTimeout (Framer.Expire), IdleTimeout (Transport.IdleTimeout),
// a request body read within Framer.Expire and bounded by Framer.MaxFrame,
// and counted, as it is read, in the server's MaxPartialBytes.
type webServer struct {
	s     *Server
	hs    *http.Server
	l     *handOffListener
	open  atomic.Int32   // the HTTP connections open now
	conns sync.WaitGroup // their goroutines, and Serve's
}

func newWebServer(s *Server) *webServer {
	w := &webServer{s: s, l: &handOffListener{conns: make(chan net.Conn), done: make(chan struct{})}}
	idle := cmp.Or(s.cfg.Transport.IdleTimeout, transport.DefaultIdleTimeout)
	w.hs = &http.Server{
		Handler:           w,
		ReadHeaderTimeout: s.cfg.Framer.Expire,
		IdleTimeout:       max(idle, 0),
		// A head past MaxHTTPHeader that ends is answered 431 in the JSON
		// envelope by the handler (tooLongHead); one that goes on past
		// MaxHTTPHeader + 4 KiB without ending gets net/http's plain 431.
		MaxHeaderBytes:               s.cfg.MaxHTTPHeader, // net/http allows 4 KiB more; tooLongHead answers those in the envelope
		DisableGeneralOptionsHandler: true,                // OPTIONS * is ours to answer (ServeHTTP)
		ErrorLog:                     slog.NewLogLogger(s.cfg.Log.Handler(), slog.LevelDebug),
		BaseContext:                  func(net.Listener) context.Context { return s.ctx },
		ConnContext:                  func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, webConnKey{}, c) },
		ConnState:                    w.connState,
	}
	w.conns.Add(1)
	go func() {
		defer w.conns.Done()
		w.hs.Serve(w.l)
	}()
	return w
}

// connState counts the open connections and their goroutines, which
// close waits for (a connection ends as closed, or hijacked for WebSocket,
// whose SRMP stack then serves it).
func (w *webServer) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		w.open.Add(1)
		w.conns.Add(1)
	case http.StateClosed, http.StateHijacked:
		w.open.Add(-1)
		w.conns.Done()
	}
}

// shutdown lets the requests in progress finish, then closes the
// connections (net/http's Shutdown); close closes them at once.
func (w *webServer) shutdown(ctx context.Context) error {
	err := w.hs.Shutdown(ctx)
	if err != nil {
		w.hs.Close()
	}
	w.l.Close()
	w.conns.Wait()
	return err
}

func (w *webServer) close() {
	w.l.Close()
	w.hs.Close()
	w.conns.Wait() // the connections' goroutines end with the server, as the transport's do
}

// ServeHTTP implements http.Handler: a WebSocket upgrade, /healthz, OPTIONS,
// or a call of the action the path names.
func (w *webServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	s := w.s
	switch {
	case !s.cfg.NoWebSocket && isUpgrade(r):
		w.upgrade(rw, r) // a version other than 13 gets 426 with Sec-WebSocket-Version: 13
	case s.cfg.NoHTTP:
		rw.Header().Set("Connection", "close")
		http.Error(rw, "this port serves no HTTP", http.StatusBadRequest)
	case tooLongHead(r, s.cfg.MaxHTTPHeader):
		refuse(rw, r, http.StatusRequestHeaderFieldsTooLarge, "request header too large (Config.MaxHTTPHeader)")
	case r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && !s.cfg.NoBuiltins:
		serveHealthz(rw, s)
	case r.Method == http.MethodOptions:
		// A browser's CORS preflight (or OPTIONS *): answered with the
		// methods served, running nothing; no Access-Control-Allow-* header,
		// so a browser keeps cross-origin calls refused.
		rw.Header().Set("Allow", "GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS")
		rw.WriteHeader(http.StatusNoContent)
	default:
		s.serveHTTPCall(rw, r, w.session(r))
	}
}

// session makes the session of one HTTP request: HTTP is stateless (a
// proxy's connection carries many users' requests), so a session lives
// for its request, and its context, the request's, ends when the client
// leaves or the server closes.
func (w *webServer) session(r *http.Request) *Session {
	c, _ := r.Context().Value(webConnKey{}).(net.Conn)
	ss := &Session{srv: w.s, proto: ProtoHTTP, web: &webSession{conn: c, base: r.Context()}}
	if hc, ok := c.(*transport.HandedConn); ok {
		ss.web.id = hc.ID()
	}
	return ss
}

// webConnKey keys a request context's connection (http.Server.ConnContext).
type webConnKey struct{}

// tooLongHead reports whether a request's head (its line and headers, as
// sent, give or take their spacing) is longer than limit.
func tooLongHead(r *http.Request, limit int) bool {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4
	for k, vv := range r.Header {
		for _, v := range vv {
			n += len(k) + len(v) + 4
		}
	}
	return n+len(r.Host)+8 > limit
}

// serveHealthz answers GET or HEAD /healthz, before any action or
// interceptor: 200 "Serving" while serving, 503 "NotServing" otherwise,
// as text.
func serveHealthz(rw http.ResponseWriter, s *Server) {
	status, text := http.StatusOK, healthServing
	if !s.Serving() {
		status, text = http.StatusServiceUnavailable, healthNotServing
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.WriteHeader(status)
	io.WriteString(rw, text)
}

// upgrade answers a WebSocket upgrade (github.com/gobwas/ws: 101 with the
// subprotocol wsSubprotocol names, or the error a bad handshake gets) and
// gives the connection, as SRMP in WebSocket messages, to the SRMP stack.
func (w *webServer) upgrade(rw http.ResponseWriter, r *http.Request) {
	u := ws.HTTPUpgrader{Timeout: w.s.cfg.Framer.Expire}
	if p := wsSubprotocol(r); p != "" {
		u.Header = http.Header{"Sec-Websocket-Protocol": {p}}
	}
	c, brw, _, err := u.Upgrade(r, rw)
	if err == nil {
		br := brw.Reader
		if br.Buffered() == 0 { // net/http's 4 KiB reader: a smaller one serves (frames past it are read straight through)
			br = bufio.NewReaderSize(c, wsServerReadBuffer)
		}
		err = w.s.cs.Adopt(newWSConn(c, br, false, w.s.cfg.Framer.MaxFrame, w.s.cfg.Framer.Expire, w.s.cfg.Transport.WriteTimeout))
	}
	if err != nil && c != nil {
		c.Close()
	}
}

// wsSubprotocol is the subprotocol a 101 names: SRMP, in the client's
// spelling, when the client offered it; SRMP when it offered none and is
// no browser (no Origin: NewLife's servers name SRMP to every client, and
// its clients offer none); none otherwise, since a browser fails a
// handshake whose 101 names a subprotocol it did not offer (RFC 6455
// §4.1).
func wsSubprotocol(req *http.Request) string {
	if len(req.Header.Values("Sec-WebSocket-Protocol")) == 0 && req.Header.Get("Origin") == "" {
		return "SRMP"
	}
	return headerToken(req.Header, "Sec-WebSocket-Protocol", "SRMP")
}

// isUpgrade reports whether r asks for a WebSocket (RFC 6455 §4.2.1:
// Upgrade: websocket and a Connection header naming upgrade).
func isUpgrade(r *http.Request) bool {
	return headerToken(r.Header, "Upgrade", "websocket") != "" && headerToken(r.Header, "Connection", "upgrade") != ""
}

// headerToken returns token as a comma-separated header of h spells it
// (in any case), or "" when the header does not hold it.
func headerToken(h http.Header, name, token string) string {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); strings.EqualFold(t, token) {
				return t
			}
		}
	}
	return ""
}

// handOffListener is the net.Listener of the connections the transport
// hands off to net/http.
type handOffListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// push gives c to Accept, or closes it once the listener is closed.
func (l *handOffListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

// Accept implements net.Listener.
func (l *handOffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *handOffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener: the listener has no address of its own.
func (l *handOffListener) Addr() net.Addr {
	return &net.UnixAddr{Net: "rpc", Name: "HTTP connections handed off"}
}

// refuse answers a request past a limit with status (the status even
// without Config.UseHTTPStatus: a proxy or client reads it) and the JSON
// envelope, and ends the connection: what is left of the request is not
// read.
func refuse(rw http.ResponseWriter, r *http.Request, status int, msg string) {
	rw.Header().Set("Connection", "close")
	writeAnswer(rw, r, status, "application/json", appendEnvelope(nil, strings.TrimPrefix(r.URL.Path, "/"), status, kindText, []byte(msg)))
}

// readBody reads a request's body, at most limit bytes (a longer one is
// ErrTooLarge), within the deadline the caller set. A body of up to
// smallBody bytes is read into a buffer of its size, not counted (as an
// SRMP frame that comes whole in one read is not, nor net/http's own
// reader); past it the bytes go into chunks of bodyChunk bytes, each
// counted in the server's MaxPartialBytes when it is made (ErrMemoryCap
// when it does not fit), so a body held part way holds its bytes and no
// more, and no buffer it outgrew; a whole one is joined once. release
// gives the count back.
func (s *Server) readBody(r io.Reader, size int64, limit int) (body []byte, release func(), err error) {
	held := 0
	release = func() { s.cs.Release(held) }
	switch {
	case size == 0:
		return nil, release, nil // no body: nothing to hold, nothing counted
	case size > int64(limit):
		return nil, release, errBodyTooLarge // declared too long: not read
	}
	want := limit + 1 // a body of unknown length may be one byte past the limit, which says it is too long
	if size >= 0 {
		want = int(size) + 1 // and one more, to see its end
	}
	first := make([]byte, min(want, smallBody))
	n, err := io.ReadFull(r, first)
	if err != nil {
		return endBody(first[:n], nil, limit, err, release)
	}
	var chunks [][]byte
	total := n
	for {
		c := make([]byte, min(bodyChunk, want-total))
		if err := s.cs.Reserve(len(c)); err != nil {
			return nil, release, err
		}
		held += len(c)
		k, err := io.ReadFull(r, c)
		chunks, total = append(chunks, c[:k]), total+k
		if err != nil || total > limit {
			return endBody(first, chunks, limit, err, release)
		}
	}
}

// endBody ends readBody: the body whole (first, then chunks, joined) at
// its end, ErrTooLarge past limit, or the read's error.
func endBody(first []byte, chunks [][]byte, limit int, err error, release func()) ([]byte, func(), error) {
	n := len(first)
	for _, c := range chunks {
		n += len(c)
	}
	switch {
	case n > limit:
		return nil, release, errBodyTooLarge
	case !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF):
		return nil, release, err
	case len(chunks) == 0:
		return first, release, nil
	}
	return slices.Concat(append([][]byte{first}, chunks...)...), release, nil
}

var errBodyTooLarge = errors.New("request body too large")

// smallBody is the largest body readBody holds without counting it: what
// a connection's net/http reader holds anyway.
const smallBody = 4 << 10

// bodyChunk is the size of the chunks readBody reads a body past
// smallBody into.
const bodyChunk = 32 << 10
