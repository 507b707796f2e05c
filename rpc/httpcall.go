package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lifenet/lifenet/codec"
)

// serveHTTPCall runs the call an HTTP request names (its path, without the
// leading slash) and writes its answer, on the connection's net/http
// goroutine: HTTP/1.1 answers a connection's requests in order anyway. A
// client that leaves cancels the call's context (net/http's), as the
// server's Close does. The call counts as a running one for Shutdown.
func (s *Server) serveHTTPCall(rw http.ResponseWriter, r *http.Request, ss *Session) {
	recv := s.clock() // CallEvent.Wait's start: net/http has read the head, not the body
	action := strings.TrimPrefix(r.URL.Path, "/")
	if len(r.TransferEncoding) > 0 {
		// A chunked body: read, but the connection ends after the answer
		// (RFC 9112 §6.3: a request that also had a Content-Length, which
		// net/http drops, may be a smuggling attempt).
		rw.Header().Set("Connection", "close")
	}
	http.NewResponseController(rw).SetReadDeadline(time.Now().Add(s.cfg.Framer.Expire))
	body, release, err := s.readBody(r.Body, r.ContentLength, s.cfg.Framer.MaxFrame)
	defer release()
	if err != nil {
		s.bodyFailed(rw, r, err)
		return
	}
	http.NewResponseController(rw).SetReadDeadline(time.Time{})
	name := []byte(action)
	a := s.reg.find(name) // nil (below) for a name NewLife would not serve, or too long to serve
	if !validAction(name) || len(name) > maxCallName {
		a = nil
	}
	var data []byte
	switch {
	case a == nil || !a.raw:
		var code int
		if data, code, err = httpArgs(r, body, s.cfg.MaxArgKeys); err != nil {
			respond(rw, r, s.cfg.UseHTTPStatus, action, code, kindText, []byte(err.Error()))
			return
		}
	// An action whose one argument is []byte (NewLife's IPacket parameter,
	// ApiHandler.Prepare's fast path) gets the body as it is whatever its
	// Content-Type (NewLife's ApiHttpClient posts byte[] as
	// application/octet-stream, its HttpEncoder as application/json), or,
	// without a body, the query string as it is, not decoded (what
	// NewLife's HttpEncoder.Decode hands such an action).
	case len(body) > 0:
		data = body
	case r.URL.RawQuery != "":
		data = []byte(r.URL.RawQuery)
	}
	// A request's token is its own (HTTP is stateless: a proxy reuses one
	// connection for many users' requests), where NewLife's session kept
	// the last one a connection sent: X-Token or Authorization: Bearer,
	// else none; a Token argument, read with the call, comes after it.
	token := r.Header.Get("X-Token")
	if a := r.Header.Get("Authorization"); token == "" && len(a) > 7 && strings.EqualFold(a[:7], "Bearer ") {
		token = a[7:]
	}
	ss.SetToken(token)
	switch {
	case !validAction(name):
		respond(rw, r, s.cfg.UseHTTPStatus, action, CodeNotFound, kindText, []byte(notFound(name).Message))
		return
	case a != nil && a.stream != nil && !s.closing.Load():
		s.streamSSE(rw, r, ss, action, a, data)
		return
	}
	s.begin(ss)
	defer s.end(ss)
	d, answered := callDone{recv: recv}, false
	if s.cfg.OnCallDone != nil {
		defer func() { // after the answer's write, or the abort of a call Close cut short
			var written int64
			if answered {
				written = s.clock()
			}
			s.observe(ss, &d, written)
		}()
	}
	out, k, err := s.exec(r.Context(), ss, name, a, KindUnary, data, r.Header.Get("traceparent"), nil, &d, nil)
	if s.stopped.Load() {
		panic(http.ErrAbortHandler) // cut short by Close: it fails with its connection
	}
	if err == nil && len(out) > s.cfg.Framer.MaxFrame {
		err = fmt.Errorf("%w: result of %d bytes, limit %d (Framer.MaxFrame)", ErrTooLarge, len(out), s.cfg.Framer.MaxFrame)
	}
	s.writeDeadline(rw)
	answered = true
	if err != nil {
		code, msg := s.errorReply(ss, name, err)
		respond(rw, r, s.cfg.UseHTTPStatus, action, int(code), kindText, []byte(msg))
		return
	}
	respond(rw, r, s.cfg.UseHTTPStatus, action, CodeOK, k, out)
}

// writeDeadline bounds the write of the answer that follows by
// Transport.WriteTimeout (default transport.DefaultWriteTimeout), as the
// transport bounds an SRMP write: a client that does not read is closed.
func (s *Server) writeDeadline(rw http.ResponseWriter) {
	if d := s.cfg.Transport.WriteTimeout; d > 0 {
		http.NewResponseController(rw).SetWriteDeadline(time.Now().Add(d))
	}
}

// bodyFailed answers a request whose body could not be read, and ends the
// connection: what is left of the body is not read.
func (s *Server) bodyFailed(rw http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusBadRequest
	switch {
	case errors.Is(err, errBodyTooLarge):
		status = http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrMemoryCap):
		status = http.StatusServiceUnavailable
	case errors.Is(err, os.ErrDeadlineExceeded):
		status = http.StatusRequestTimeout
		err = fmt.Errorf("%w: the body did not come within %v (Framer.Expire)", codec.ErrFrameExpired, s.cfg.Framer.Expire)
	}
	refuse(rw, r, status, clip(err.Error()))
}

// streamSSE answers a streaming action as server-sent events (NewLife's
// form): a `data: {"action","code","data"}` event per item, an error as
// one event with its code, then the end event `data: ` (empty). The
// response is delimited by the connection's end, which follows it. HEAD
// gets the head alone.
func (s *Server) streamSSE(rw http.ResponseWriter, r *http.Request, ss *Session, action string, a *action, data []byte) {
	h := rw.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "close")
	h.Set("Transfer-Encoding", "identity") // no chunks: the end of the connection ends the events
	rw.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	rc := http.NewResponseController(rw)
	rc.Flush()
	s.begin(ss)
	defer s.end(ss)
	var b []byte
	event := func(code int, k kind, v []byte) error {
		s.writeDeadline(rw)
		b = appendEnvelope(append(b[:0], "data: "...), action, code, k, v)
		if _, err := rw.Write(append(b, "\n\n"...)); err != nil {
			return err
		}
		return rc.Flush()
	}
	_, _, err := s.exec(ss.ctx(), ss, []byte(action), a, KindStream, data, r.Header.Get("traceparent"), nil, new(callDone), func(item []byte, k kind) error { return event(CodeOK, k, item) })
	switch {
	case s.stopped.Load():
		panic(http.ErrAbortHandler) // cut short by Close: it ends with its connection
	case err != nil:
		code, msg := s.errorReply(ss, []byte(action), err)
		event(int(code), kindText, []byte(msg))
	default:
		io.WriteString(rw, "data: \n\n")
	}
}

// httpArgs turns a request's body or, without one, its query string (a
// form whose items need no '=') into the call's data, by the body's
// Content-Type as docs/PROTOCOL.md §5.5 lists (NewLife's HttpEncoder takes
// JSON only under application/json and parses anything else as a form):
// the JSON value under application/json or +json, a form (a JSON object of
// strings) under application/x-www-form-urlencoded, either by the body's
// look without a type, the body as it is under text/plain and
// application/octet-stream; any other type, and a Content-Encoding but
// identity, is a 415. A form or query string of more than maxKeys fields
// is a 400 before it is parsed (its map would hold them all). An action
// whose one argument is []byte takes none of these (serveHTTPCall).
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
		return formArgs(req.URL.RawQuery, "query string", maxKeys)
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
		return formArgs(string(body), "form", maxKeys)
	case mt == "text/plain", mt == "application/octet-stream":
		return body, 0, nil
	}
	return nil, http.StatusUnsupportedMediaType, fmt.Errorf("rpc: Content-Type %q: send application/json, a form, text/plain or application/octet-stream", clip(mt))
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
		return []byte(trimText(v)), 0, nil
	case 'n':
		return nil, 0, nil
	}
	return v, 0, nil // a number or bool: its literal
}

// formArgs is the data of a form (what: "form", a body, or "query
// string"): a JSON object of its fields' last values, as strings. A form
// of more than maxKeys fields is a 400 before it is parsed (its map would
// hold them all), and so is a body's field without '=' (a query string's
// items need none).
func formArgs(form, what string, maxKeys int) ([]byte, int, error) {
	if len(form) > 2*maxKeys && strings.Count(form, "&") >= maxKeys {
		return nil, CodeBadRequest, fmt.Errorf("%w: a form of more than %d fields (Config.MaxArgKeys)", ErrArgs, maxKeys)
	}
	for f := range strings.SplitSeq(form, "&") {
		if what == "form" && f != "" && !strings.Contains(f, "=") {
			return nil, CodeBadRequest, fmt.Errorf("%w: form field %q has no '=' (a JSON body needs Content-Type: application/json)", ErrArgs, clip(f))
		}
	}
	values, err := url.ParseQuery(form)
	if err != nil {
		return nil, CodeBadRequest, fmt.Errorf("%w: %s: %v", ErrArgs, what, err)
	}
	m := make(map[string]string, len(values))
	for k, v := range values {
		if len(v) > 0 {
			m[k] = v[len(v)-1]
		}
	}
	data, err := json.Marshal(m)
	return data, CodeBadRequest, err
}

// respond writes the HTTP answer of a call: {"action","code","data"} with
// status 200 (NewLife's default), or with useStatus (Config.UseHTTPStatus)
// the code as the status and the bare value as the body (a code no status
// can carry: 500 and the envelope). A null result has no body, a []byte
// result is sent as it is. HEAD gets the head GET would (net/http sends
// no body).
func respond(rw http.ResponseWriter, r *http.Request, useStatus bool, action string, code int, k kind, value []byte) {
	status, ctype := http.StatusOK, "application/json"
	var body []byte
	switch {
	case k == kindRaw && code == CodeOK:
		body, ctype = value, "application/octet-stream"
	case useStatus && code != CodeOK && code != http.StatusOK && (code < 400 || code > 599):
		// UseHTTPStatus sends 200 (NewLife's ApiCode.Ok200) and 400–599
		// as the status; 1001, 7, 304: no status line can carry it (a 1xx,
		// 204 or 304 has no body, a 3xx no Location): a 500 and the envelope.
		status, body = http.StatusInternalServerError, appendEnvelope(body, action, code, k, value)
	case useStatus:
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
	writeAnswer(rw, r, status, ctype, body)
}

// writeAnswer writes an answer: status, Content-Type ctype, body (the head
// alone for HEAD: net/http sends no body).
func writeAnswer(rw http.ResponseWriter, r *http.Request, status int, ctype string, body []byte) {
	h := rw.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(status)
	if r.Method != http.MethodHead {
		rw.Write(body)
	}
}

// appendEnvelope appends NewLife's HTTP answer {"action","code","data"}.
func appendEnvelope(dst []byte, action string, code int, k kind, value []byte) []byte {
	dst = append(dst, `{"action":`...)
	dst = appendJSONText(dst, clipName(action))
	dst = append(dst, `,"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"data":`...)
	dst = appendJSONValue(dst, k, value)
	return append(dst, '}')
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
	return appendJSONText(dst, string(v))
}
