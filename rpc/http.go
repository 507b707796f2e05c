package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/rpc/internal/ws"
)

// serveHTTP answers the whole HTTP requests held in g.buf, in order, on the
// reading goroutine (an HTTP/1.1 connection answers in order anyway). The
// request is parsed as net/http's server parses it (readRequestHead); a malformed one
// gets 400 and the connection closes. A request that upgrades to WebSocket
// switches the connection to WebSocket.
func (g *gateway) serveHTTP(c *codec.HandlerContext) error {
	for g.mode.Load() == modeHTTP && !g.pending {
		end := bytes.Index(g.buf, []byte("\r\n\r\n"))
		if end < 0 {
			if len(g.buf) > g.s.cfg.MaxHTTPHeader {
				return g.httpFail(c, http.StatusRequestHeaderFieldsTooLarge, "request header too large")
			}
			return nil
		}
		end += 4
		if end > g.s.cfg.MaxHTTPHeader {
			return g.httpFail(c, http.StatusRequestHeaderFieldsTooLarge, "request header too large")
		}
		req, err := readRequestHead(g.buf[:end])
		if err != nil {
			return g.httpFail(c, http.StatusBadRequest, clip(err.Error()))
		}
		if ws.IsUpgrade(req) && !g.s.cfg.NoWebSocket {
			return g.upgrade(c, req, end)
		}
		if ws.WantsOtherVersion(req) && !g.s.cfg.NoWebSocket {
			// Not served as a plain GET of its path: the client would take
			// that answer for a refused upgrade of no reason.
			return g.endWith(c, []byte("HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
		}
		if g.s.cfg.NoHTTP {
			return g.httpFail(c, http.StatusBadRequest, "this port serves no HTTP")
		}
		switch {
		case req.ContentLength < 0 || len(req.TransferEncoding) > 0:
			return g.httpFail(c, http.StatusLengthRequired, "a body needs Content-Length")
		case req.ContentLength > int64(g.s.cfg.Framer.MaxFrame):
			return g.httpFail(c, http.StatusRequestEntityTooLarge, "request body too large")
		case int64(len(g.buf)-end) < req.ContentLength:
			g.httpUnit = end + int(req.ContentLength)
			g.buf = growTowards(g.buf, g.httpUnit, len(g.buf))
			return g.sendContinue(c, req) // the body is still coming
		}
		g.httpUnit = 0
		g.continued = false
		n := end + int(req.ContentLength)
		if err := g.answerHTTP(c, req, g.buf[end:n]); err != nil {
			return err
		}
		g.buf = g.buf[:copy(g.buf, g.buf[n:])]
		if g.pending {
			break // its goroutine answers it, closes after it if asked, and serves what follows
		}
		if req.Close {
			g.mode.Store(modeClosing)
			g.ss.conn.Close()
		}
	}
	if g.mode.Load() == modeClosing {
		g.buf = nil // the answer ends the connection: what follows is ignored, not held
	}
	return nil
}

// sendContinue answers "Expect: 100-continue" once per request, when its
// head is accepted and its body is still to come: a client that waits for
// it (curl does, for a second, past 1 KiB) then sends the body at once.
func (g *gateway) sendContinue(c *codec.HandlerContext, req *http.Request) error {
	if g.continued || !req.ProtoAtLeast(1, 1) || !strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		return nil
	}
	g.continued = true
	return c.WriteBytes([]byte("HTTP/1.1 100 Continue\r\n\r\n"))
}

// answerHTTP runs one HTTP call and writes its response.
func (g *gateway) answerHTTP(c *codec.HandlerContext, req *http.Request, body []byte) error {
	if req.URL.Path == "/healthz" && (req.Method == http.MethodGet || req.Method == http.MethodHead) && !g.s.cfg.NoBuiltins {
		return g.serveHealthz(c, req)
	}
	if req.Method == http.MethodOptions {
		return g.answerOptions(c, req)
	}
	action := strings.TrimPrefix(req.URL.Path, "/")
	s := g.s
	name := []byte(action)
	a := s.reg.findValid(name)
	var data []byte
	if a != nil && a.raw {
		data = rawArgs(req, body)
	} else {
		var code int
		var err error
		if data, code, err = httpArgs(req, body, s.cfg.MaxArgKeys); err != nil {
			return g.respond(c, req, action, code, kindText, []byte(err.Error()))
		}
	}
	// A request's token is its own (HTTP is stateless: a proxy reuses one
	// connection for many users' requests), where NewLife's session kept
	// the last one a connection sent: X-Token or Authorization: Bearer,
	// else none; a Token argument, read with the call, comes after it. The
	// requests of a connection are served one at a time.
	g.ss.SetToken(httpToken(req))
	if !validAction(name) {
		return g.respond(c, req, action, CodeNotFound, kindText, []byte(notFound(name).Message))
	}
	if a != nil && a.stream != nil && !s.closing.Load() {
		if req.Method == http.MethodHead {
			return g.headSSE(c)
		}
		return g.streamSSE(c, req, action, a, data)
	}
	if a != nil && !a.inline && !s.cfg.Serial && !s.closing.Load() {
		// On a goroutine of its own, as an SRMP call: the reading
		// goroutine goes on reading, so a client that leaves ends the
		// session, which cancels the call's context.
		g.pending = true
		s.begin(g.ss)
		go g.runHTTP(c, req, action, a, bytes.Clone(data)) // data may be a view of g.buf
		return nil
	}
	g.ss.inline.Add(1)
	out, k, err := s.exec(g.ss.ctx, g.ss, name, a, KindUnary, data, req.Header.Get("traceparent"), nil)
	g.ss.inline.Add(-1)
	return g.answer(c, req, action, out, k, err)
}

// runHTTP runs an HTTP call on its own goroutine, answers it, then serves
// the requests read meanwhile (in order: HTTP/1.1 answers in order).
func (g *gateway) runHTTP(c *codec.HandlerContext, req *http.Request, action string, a *action, data []byte) {
	defer g.s.end(g.ss)
	out, k, err := g.s.exec(g.ss.ctx, g.ss, []byte(action), a, KindUnary, data, req.Header.Get("traceparent"), nil)
	werr := g.answer(c, req, action, out, k, err)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pending = false
	switch {
	case werr != nil || g.s.stopped.Load() || g.mode.Load() != modeHTTP:
		return
	case req.Close:
		g.mode.Store(modeClosing)
		g.buf = nil
		g.ss.conn.Close()
		return
	}
	err = g.serveHTTP(c)
	if err == nil {
		err = g.hold(c)
	}
	if err != nil {
		c.Conn().Session().Abort(err)
		return
	}
	g.track(c, 0, true) // the clock of a unit left incomplete starts now
}

// answer writes the response of an HTTP call that returned out (of kind
// k) or err.
func (g *gateway) answer(c *codec.HandlerContext, req *http.Request, action string, out []byte, k kind, err error) error {
	s := g.s
	if s.stopped.Load() {
		return nil // cut short by Close: it fails with its connection
	}
	if err == nil && len(out) > s.cfg.Framer.MaxFrame {
		err = fmt.Errorf("%w: result of %d bytes, limit %d (Framer.MaxFrame)", ErrTooLarge, len(out), s.cfg.Framer.MaxFrame)
	}
	if err != nil {
		code, msg := s.errorReply(g.ss, []byte(action), err)
		return g.respond(c, req, action, int(code), kindText, []byte(msg))
	}
	return g.respond(c, req, action, CodeOK, k, out)
}

// sseHead is the head of an SSE response: it has no length, so the
// connection closes after the last event.
const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"

// streamSSE answers a streaming action over HTTP as server-sent events
// (NewLife's form). The stream runs on a goroutine of its own, counted
// like an SRMP stream (MaxInFlight, Shutdown), so that each event leaves
// as it is yielded (the reading goroutine's writes are held until its read
// is handled) and the reading goroutine goes on reading: a client that
// leaves ends the session, which cancels the stream's ctx. The response
// is delimited by the connection's end, so the connection answers nothing
// after it: bytes that follow the request (a pipelined request) are read
// and ignored, and the connection closes after the last event.
func (g *gateway) streamSSE(c *codec.HandlerContext, req *http.Request, action string, a *action, data []byte) error {
	g.mode.Store(modeClosing)
	g.s.begin(g.ss)
	go g.runSSE(c, action, a, bytes.Clone(data), req.Header.Get("traceparent")) // data may be a view of g.buf
	return nil
}

// headSSE answers HEAD of a streaming action: the head a GET would get,
// without running the stream, then the connection's end (the response is
// delimited by it, as a GET's is).
func (g *gateway) headSSE(c *codec.HandlerContext) error {
	g.mode.Store(modeClosing)
	err := c.WriteBytes([]byte(sseHead))
	g.ss.conn.Close()
	return err
}

// runSSE writes an SSE stream's head, a `data: {"action","code","data"}`
// event per item, an error as one event with its code, then the end event
// `data: ` (empty), and closes the connection once they are written.
func (g *gateway) runSSE(c *codec.HandlerContext, action string, a *action, data []byte, traceHeader string) {
	defer g.s.end(g.ss)
	defer g.ss.conn.Close()
	if c.WriteBytes([]byte(sseHead)) != nil {
		return
	}
	var b []byte // the goroutine's own: WriteBytes copies it
	event := func(code int, k kind, v []byte) error {
		b = appendEnvelope(append(b[:0], "data: "...), action, code, k, v)
		return c.WriteBytes(append(b, "\n\n"...))
	}
	err := g.s.runStream(g.ss, []byte(action), a, data, traceHeader, func(item []byte, k kind) error { return event(CodeOK, k, item) })
	switch {
	case g.s.stopped.Load():
		return // cut short by Close: it ends with its connection
	case err != nil:
		code, msg := g.s.errorReply(g.ss, []byte(action), err)
		event(int(code), kindText, []byte(msg))
	default:
		c.WriteBytes([]byte("data: \n\n"))
	}
}

// httpArgs turns a request's body or, without one, its query string into
// the call's data, by the body's Content-Type (NewLife's HttpEncoder takes
// JSON only under application/json and parses anything else as a form):
//   - application/json (or +json): the JSON value. An object or array is
//     the data as it is; a string is its text, a number or bool its
//     literal (the data a NewLife client sends for such a value); null is
//     no data. A body that is not JSON is a 400.
//   - application/x-www-form-urlencoded: a form, as a JSON object of
//     strings (the binder takes numbers written as strings). A body that
//     looks like JSON ({ or [ first) is a 400 naming the Content-Type to
//     send (curl -d sends this type; NewLife would parse the JSON as a
//     form and bind nothing), and so is a field without '='.
//   - none: JSON when the body looks like JSON, else a form.
//   - text/plain, application/octet-stream: the body as it is (raw text
//     for a string, raw bytes for a []byte parameter).
//   - any other type: 415, and so is a body with a Content-Encoding (but
//     identity).
//
// A query string (a body's absence) is a form; its items need no '='. A
// form or query string of more than maxKeys fields is a 400 before it is
// parsed (its map would hold them all).
//
// An action whose one argument is []byte takes none of these: rawArgs
// hands it the request as it is.
func httpArgs(req *http.Request, body []byte, maxKeys int) (data []byte, code int, err error) {
	if ce := req.Header.Get("Content-Encoding"); len(body) > 0 && ce != "" && !strings.EqualFold(ce, "identity") {
		// gzip and the like: read as it came, it was a 400 "not JSON", or
		// compressed bytes bound as text.
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("rpc: Content-Encoding %q: send the body unencoded", clip(ce))
	}
	if len(body) == 0 {
		if req.URL.RawQuery == "" {
			return nil, 0, nil
		}
		if err := formFields(req.URL.RawQuery, maxKeys); err != nil {
			return nil, CodeBadRequest, err
		}
		form, err := url.ParseQuery(req.URL.RawQuery)
		if err != nil {
			return nil, CodeBadRequest, fmt.Errorf("%w: query string: %v", ErrArgs, err)
		}
		data, err = formJSON(form)
		return data, CodeBadRequest, err
	}
	ctype := req.Header.Get("Content-Type")
	mt := ""
	if ctype != "" {
		if mt, _, err = mime.ParseMediaType(ctype); err != nil {
			return nil, CodeBadRequest, fmt.Errorf("%w: Content-Type %q: %v", ErrArgs, clip(ctype), err)
		}
	}
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"), mt == "" && isJSON(body):
		return jsonArgs(body)
	case mt == "application/x-www-form-urlencoded", mt == "":
		if isJSON(body) {
			return nil, CodeBadRequest, fmt.Errorf("%w: the body is JSON but its Content-Type is %s: send Content-Type: application/json", ErrArgs, mt)
		}
		if err := formFields(string(body), maxKeys); err != nil {
			return nil, CodeBadRequest, err
		}
		return formArgs(body)
	case mt == "text/plain", mt == "application/octet-stream":
		return body, 0, nil
	}
	return nil, http.StatusUnsupportedMediaType, fmt.Errorf("rpc: Content-Type %q: send application/json, a form, text/plain or application/octet-stream", clip(mt))
}

// rawArgs is the data of a call to an action whose one argument is []byte
// (NewLife's IPacket parameter, ApiHandler.Prepare's fast path): the body
// as it is whatever its Content-Type (NewLife's ApiHttpClient posts
// byte[] as application/octet-stream, its HttpEncoder as
// application/json), or, without a body, the query string as it is, not
// decoded (what NewLife's HttpEncoder.Decode hands such an action).
func rawArgs(req *http.Request, body []byte) []byte {
	if len(body) > 0 {
		return body
	}
	if req.URL.RawQuery != "" {
		return []byte(req.URL.RawQuery)
	}
	return nil
}

// jsonArgs is the data of a JSON body.
func jsonArgs(body []byte) ([]byte, int, error) {
	var v json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, CodeBadRequest, fmt.Errorf("%w: the body is not valid JSON: %v", ErrArgs, err)
	}
	switch v = bytes.TrimSpace(v); v[0] {
	case '{', '[':
		return v, 0, nil
	case '"':
		var s string
		json.Unmarshal(v, &s)
		return []byte(s), 0, nil
	case 'n':
		return nil, 0, nil
	}
	return v, 0, nil // a number or bool: its literal
}

// formFields refuses a form of more than maxKeys fields.
func formFields(form string, maxKeys int) error {
	if len(form) > 2*maxKeys && strings.Count(form, "&") >= maxKeys {
		return fmt.Errorf("%w: a form of more than %d fields (Config.MaxArgKeys)", ErrArgs, maxKeys)
	}
	return nil
}

// formArgs is the data of a form body.
func formArgs(body []byte) ([]byte, int, error) {
	for f := range strings.SplitSeq(string(body), "&") {
		if f != "" && !strings.Contains(f, "=") {
			return nil, CodeBadRequest, fmt.Errorf("%w: form field %q has no '=' (a JSON body needs Content-Type: application/json)", ErrArgs, clip(f))
		}
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, CodeBadRequest, fmt.Errorf("%w: form: %v", ErrArgs, err)
	}
	data, err := formJSON(form)
	return data, CodeBadRequest, err
}

func formJSON(form url.Values) ([]byte, error) {
	m := make(map[string]string, len(form))
	for k, v := range form {
		if len(v) > 0 {
			m[k] = v[len(v)-1]
		}
	}
	return json.Marshal(m)
}

// httpToken is the token of an x-token or Authorization: Bearer header.
func httpToken(req *http.Request) string {
	if t := req.Header.Get("X-Token"); t != "" {
		return t
	}
	if a := req.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "Bearer ") {
		return a[7:]
	}
	return ""
}

// respond writes the HTTP response to req: {"action","code","data"} with
// status 200 (NewLife's default), or with UseHTTPStatus the code as the
// status and the bare value as the body (a code no status can carry: 500
// and the envelope). A null result has no body, a
// []byte result is sent as it is. The response to HEAD has the head GET's
// would have (its Content-Length too) and no body (RFC 9110 9.3.2, as
// net/http answers): a body would be read as the next response.
func (g *gateway) respond(c *codec.HandlerContext, req *http.Request, action string, code int, k kind, value []byte) error {
	status, ctype := http.StatusOK, "application/json"
	var body []byte
	switch {
	case k == kindRaw && code == CodeOK:
		body, ctype = value, "application/octet-stream"
	case g.s.cfg.UseHTTPStatus && code != CodeOK && !isHTTPStatus(code):
		// 1001, 7, 304: no status line can carry it (a 1xx, 204 or 304
		// has no body, a 3xx no Location): a 500 and the envelope.
		status, body = http.StatusInternalServerError, appendEnvelope(body, action, code, k, value)
	case g.s.cfg.UseHTTPStatus:
		if code != CodeOK {
			status = code
		}
		if k != kindNull {
			body = appendJSONValue(nil, k, value)
		}
	case k == kindNull && code == CodeOK:
	default:
		body = appendEnvelope(body, action, code, k, value)
	}
	head := httpHead(status, ctype, len(body), !req.Close) // serveHTTP closes after a request that asked to
	if req.Method == http.MethodHead {
		return c.WriteBytes(head)
	}
	return c.WriteBytes(head, body)
}

// answerOptions answers OPTIONS (a browser's CORS preflight, OPTIONS *)
// with the methods served and runs nothing: run as a call, a preflight
// ran its action, side effects and all, before the browser had been let
// send it. No Access-Control-Allow-* header is sent, so a browser keeps
// cross-origin calls refused.
func (g *gateway) answerOptions(c *codec.HandlerContext, req *http.Request) error {
	conn := "keep-alive"
	if req.Close {
		conn = "close"
	}
	return c.WriteBytes([]byte("HTTP/1.1 204 No Content\r\nAllow: GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS\r\nConnection: " + conn + "\r\n\r\n"))
}

// isHTTPStatus reports whether UseHTTPStatus sends code as the status:
// 200 (NewLife's ApiCode.Ok200) and the client and server errors, 400–599.
func isHTTPStatus(code int) bool { return code == http.StatusOK || code >= 400 && code <= 599 }

// appendEnvelope appends NewLife's HTTP answer {"action","code","data"}.
func appendEnvelope(dst []byte, action string, code int, k kind, value []byte) []byte {
	dst = append(dst, `{"action":`...)
	dst = appendJSONString(dst, clipName(action))
	dst = append(dst, `,"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"data":`...)
	dst = appendJSONValue(dst, k, value)
	return append(dst, '}')
}

// httpHead is a response's status line and headers; keepAlive says
// whether the connection stays open after it.
func httpHead(status int, ctype string, n int, keepAlive bool) []byte {
	h := make([]byte, 0, 128)
	h = append(h, "HTTP/1.1 "...)
	h = strconv.AppendInt(h, int64(status), 10)
	h = append(h, ' ')
	h = append(h, http.StatusText(status)...)
	h = append(h, "\r\nContent-Length: "...)
	h = strconv.AppendInt(h, int64(n), 10)
	h = append(h, "\r\nContent-Type: "...)
	h = append(h, ctype...)
	if !keepAlive {
		return append(h, "\r\nConnection: close\r\n\r\n"...)
	}
	return append(h, "\r\nConnection: keep-alive\r\n\r\n"...)
}

// appendJSONValue renders an encoded value as JSON.
func appendJSONValue(dst []byte, k kind, v []byte) []byte {
	switch k {
	case kindNull:
		return append(dst, "null"...)
	case kindBool:
		if string(v) == "True" {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case kindNumber, kindJSON:
		return append(dst, v...)
	case kindTime, kindTimeUTC:
		return appendTimeJSON(dst, v, k == kindTimeUTC)
	}
	return appendJSONString(dst, string(v))
}

func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(dst, b...)
}

// httpFail answers a request the gateway cannot serve and ends the
// connection once the answer is written.
func (g *gateway) httpFail(c *codec.HandlerContext, status int, msg string) error {
	return g.endWith(c, httpHead(status, "text/plain; charset=utf-8", len(msg), false), []byte(msg))
}

// endWith writes an answer, parts of one message, and ends the connection
// once it is written; what else came is dropped, not held.
func (g *gateway) endWith(c *codec.HandlerContext, parts ...[]byte) error {
	c.WriteBytes(parts...)
	g.ss.conn.Close()
	g.buf = nil
	return nil
}
