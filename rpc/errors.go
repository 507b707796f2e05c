package rpc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/transport"
)

// API result codes (NewLife ApiCode). A reply carries one; [CodeOf] gives
// the code of any error. [CodeTooLarge], [CodeTooManyRequests] and
// [CodeUnavailable] are lifenet's: NewLife sends 400, 401, 403, 404 and 500.
// [CodeTimeout] is what [CodeOf] says of a call that timed out; it goes on
// the wire only as the HTTP answer to a call that ended past the deadline
// its caller sent (an SRMP caller gets no reply then).
const (
	CodeOK              = 0
	CodeBadRequest      = 400
	CodeUnauthorized    = 401
	CodeForbidden       = 403
	CodeNotFound        = 404
	CodeTooLarge        = 413
	CodeTooManyRequests = 429
	CodeInternal        = 500
	CodeUnavailable     = 503
	CodeTimeout         = 504

	codeOK200 = 200 // NewLife ApiCode.Ok200: a success too
)

// APIError is an error with a NewLife API code (NewLife ApiException). A
// handler that returns one (see [NewError]) answers with its code and
// message; a client gets one for every error reply. Find it with
// errors.As; errors.Is matches it against the sentinel of its code
// ([ErrArgs] for 400, [ErrUnauthorized] for 401, [ErrNotFound] for 404, …;
// see [APIError.Is]).
type APIError struct {
	Code    int
	Message string
}

// Error implements error: "rpc: <message> (<code>)".
func (e *APIError) Error() string {
	return "rpc: " + strings.TrimPrefix(e.Message, "rpc: ") + " (" + strconv.Itoa(e.Code) + ")"
}

// Is reports whether target is the sentinel of e's code: [ErrArgs] (400),
// [ErrUnauthorized] (401), [ErrForbidden] (403), [ErrNotFound] (404),
// [ErrTooLarge] (413), [ErrInternal] (500), [ErrUnavailable] (503). The
// sentinels that share a code with those ([ErrShutdown], [ErrNotServing]
// and [ErrBusy] with 503, [ErrStreamAction] and [ErrUnaryAction] with 400)
// match when the message is theirs, as a lifenet server sends it.
func (e *APIError) Is(target error) bool {
	s, ok := target.(*codeError)
	return ok && s.code == e.Code && !s.local && (s.primary || strings.HasPrefix(e.Message, s.msg))
}

// NewError returns an [*APIError] with code and message: a handler's way to
// choose its reply's code.
func NewError(code int, message string) *APIError { return &APIError{Code: code, Message: message} }

// codeError is a sentinel error with a code. primary: the sentinel of its
// code, which every error reply with the code matches; otherwise a reply
// matches it by its message. local: an error of this process alone (no
// reply matches it, and a server never shows its text to a caller).
type codeError struct {
	code    int
	msg     string
	primary bool
	local   bool
}

func (e *codeError) Error() string { return e.msg }

// Errors a caller matches with errors.Is. Those with a code are also what
// a client's [*APIError] of that code matches (see [APIError.Is]), and
// what a handler may return, wrapped or not, to answer with their code and
// text.
var (
	// ErrArgs: a request's arguments do not fit the action's parameter
	// (400).
	ErrArgs error = &codeError{code: CodeBadRequest, msg: "rpc: arguments do not fit the action's parameter", primary: true}
	// ErrUnauthorized: the caller must log in first (401). A client with
	// ClientConfig.Login runs it and retries the call once.
	ErrUnauthorized error = &codeError{code: CodeUnauthorized, msg: "rpc: unauthorized", primary: true}
	// ErrForbidden: the caller may not call the action (403).
	ErrForbidden error = &codeError{code: CodeForbidden, msg: "rpc: forbidden", primary: true}
	// ErrNotFound: no action has the name called (404). A lifenet server
	// sends NewLife's text for it ("无法找到名为[X]的服务！"); a client turns
	// that into `no action "X"`.
	ErrNotFound error = &codeError{code: CodeNotFound, msg: "rpc: no such action", primary: true}
	// ErrTooLarge: a message is over the frame limit (Framer.MaxFrame,
	// default 10 MiB). A client refuses to send such a request; a server
	// answers a call whose result is too large with 413.
	ErrTooLarge error = &codeError{code: CodeTooLarge, msg: "rpc: message too large", primary: true}
	// ErrInternal: the server failed to run the call (500): a handler's
	// error that is no [*APIError] and wraps no sentinel of this package,
	// or a panic.
	ErrInternal error = &codeError{code: CodeInternal, msg: "rpc: internal error", primary: true}
	// ErrUnavailable: the server cannot take the call now (503); see
	// [ErrShutdown] and [ErrBusy].
	ErrUnavailable error = &codeError{code: CodeUnavailable, msg: "rpc: service unavailable", primary: true}
	// ErrShutdown: the server is shutting down and refuses new calls (503).
	ErrShutdown error = &codeError{code: CodeUnavailable, msg: "rpc: server is shutting down"}
	// ErrNotServing: the server reports itself not serving (503), to
	// Api/Health and GET /healthz: it is shutting down, or the application
	// said so with [Server.SetServing] (draining, warming up). A reply
	// matching it or ErrShutdown says the call did not run. A handler that
	// returns such a reply it got from a server it called (as an
	// [*APIError]) ran, so its own reply matches neither: 503, the message
	// prefixed "rpc: a server this call depends on refused it: ".
	ErrNotServing error = &codeError{code: CodeUnavailable, msg: "rpc: not serving"}
	// ErrBusy: a connection asked for a stream while it had
	// Config.MaxInFlight calls and streams running (over UDP: for any
	// call); the request gets a 503 error reply naming it. A call past the
	// cap on a stream connection runs on its reading goroutine instead
	// (back-pressure), which a stream cannot, and which for a UDP peer
	// would stop every peer of its listener.
	ErrBusy error = &codeError{code: CodeUnavailable, msg: "rpc: too many calls in flight on this connection"}
	// ErrStreamAction: [Call] or [Client.Invoke] reached a streaming action
	// (400); call it with [Stream]. A lifenet server marks a stream's
	// replies, so the client fails at the first; a NewLife server does not,
	// and the call returns the stream's first item.
	ErrStreamAction error = &codeError{code: CodeBadRequest, msg: "rpc: the action streams: call it with Stream"}
	// ErrUnaryAction: [Stream] reached an action that does not stream
	// (400); call it with [Call]. A lifenet server refuses the stream at
	// once; a NewLife server answers it as a call, and the stream yields
	// that answer and then waits for an end that does not come (the
	// client's Timeout ends it).
	ErrUnaryAction error = &codeError{code: CodeBadRequest, msg: "rpc: the action does not stream: call it with Call"}

	// ErrTimeout: a call got no reply in time, whether its context's
	// deadline or ClientConfig.Timeout ended it. It matches
	// context.DeadlineExceeded too, and is a net.Error whose Timeout
	// reports true.
	ErrTimeout error = timeoutError{}
	// ErrConnClosed: the call's connection ended before its reply came;
	// the server may have run it, so it is not sent again.
	ErrConnClosed = codec.ErrConnClosed
	// ErrNotSent wraps, with ErrConnClosed, the error of a call that never
	// left (its connection had ended): the client sends such a call again
	// on a new connection once, so a caller sees it only when that fails
	// too.
	ErrNotSent = codec.ErrNotSent
	// ErrMemoryCap is the close cause of a connection whose incomplete
	// unit (SRMP frame, HTTP request, WebSocket frame) would have passed
	// Config.MaxPartialBytes (transport.CloseError wraps it).
	ErrMemoryCap = codec.ErrMemoryCap
	// ErrNoServer: the client could not connect to any of its servers.
	ErrNoServer error = &codeError{code: CodeUnavailable, msg: "rpc: no server reachable", local: true}
	// ErrClosed: the client is closed.
	ErrClosed error = &codeError{code: CodeUnavailable, msg: "rpc: client closed", local: true}
	// ErrStreamOverflow: a stream's consumer fell more than
	// [MaxStreamBuffer] replies, or [MaxStreamBufferBytes] of them, behind;
	// the stream ends with it.
	ErrStreamOverflow error = &codeError{code: CodeUnavailable, msg: "rpc: stream consumer too slow", local: true}
	// errCallerGone: a call ended past the deadline its caller sent, who
	// no longer waits: over SRMP no reply goes out, over HTTP a 504.
	errCallerGone error = &codeError{code: CodeTimeout, msg: "rpc: the caller's deadline passed"}
	// ErrBody is wrapped by errors about a malformed RPC body.
	ErrBody = errors.New("rpc: malformed message body")

	// ErrSignature: Register found an exported method it cannot serve, or
	// Handle was given a name NewLife cannot carry.
	ErrSignature = errors.New("rpc: unsupported action")
	// ErrDuplicate: an action name was registered twice.
	ErrDuplicate = errors.New("rpc: action already registered")
	// ErrConfig: a configuration value is out of range.
	ErrConfig = errors.New("rpc: invalid config")
	// ErrBadReply: a call's reply came, with its sequence number and its
	// action's name, but its body or its result could not be decoded (into
	// the caller's result type); the error names the action and the cause.
	ErrBadReply = errors.New("rpc: a reply that does not decode")
	// ErrPushHTTP: Session.Push on an HTTP connection, which has nowhere
	// to put a message the client did not ask for.
	ErrPushHTTP = errors.New("rpc: cannot push to an HTTP connection")
	// ErrAddress: a server address has a scheme the client cannot dial.
	ErrAddress = errors.New("rpc: unsupported server address")
)

// timeoutError is ErrTimeout: a net.Error that is also
// context.DeadlineExceeded (and codec.ErrTimeout, which it replaces for
// callers of this package).
type timeoutError struct{}

func (timeoutError) Error() string   { return "rpc: call timed out" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
func (timeoutError) Is(target error) bool {
	return target == context.DeadlineExceeded || target == codec.ErrTimeout
}

// CodeOf returns the code of err (connect-go's CodeOf): [CodeOK] for nil,
// an [*APIError]'s code, the code of a sentinel of this package err wraps,
// [CodeTimeout] for a timeout, [CodeUnavailable] for a connection that
// ended, and [CodeInternal] for anything else.
func CodeOf(err error) int {
	if err == nil {
		return CodeOK
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Code
	}
	var ce *codeError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, codec.ErrTimeout):
		return CodeTimeout
	case errors.Is(err, codec.ErrConnClosed):
		return CodeUnavailable
	}
	return CodeInternal
}

// maxEcho bounds the bytes of the peer's input (a value, a header) that
// an error message repeats, and maxReplyName those of an action name: a
// reply never grows with the input that caused it.
const maxEcho = 64

// clip is s cut to maxEcho bytes (at a UTF-8 boundary) with "…" after
// it, or s when it is short enough.
func clip(s string) string { return clipTo(s, maxEcho) }

// clipName is an action name as a message or an HTTP answer repeats it:
// whole up to maxReplyName bytes (every name a client can call), else
// cut with "…".
func clipName(s string) string { return clipTo(s, maxReplyName) }

func clipTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return cutUTF8(s, max) + "…"
}

// notFoundText is NewLife's message for an unknown action.
func notFoundText(action []byte) string {
	return "无法找到名为[" + clipName(string(action)) + "]的服务！"
}

// notFound is NewLife's 404 for an unknown action, as a server sends it.
func notFound(action []byte) *APIError {
	return &APIError{Code: CodeNotFound, Message: notFoundText(action)}
}

// apiErrorOf is the *APIError a client returns for an error reply to a
// call of action: NewLife's Chinese 404 text for an unknown action becomes
// `no action "X"`.
func apiErrorOf(action string, code int, msg string) *APIError {
	if code == CodeNotFound && strings.HasPrefix(msg, "无法找到名为[") && msg == notFoundText([]byte(action)) {
		msg = "no action " + strconv.Quote(action)
	}
	return &APIError{Code: code, Message: msg}
}

// panicError is a handler's (or Authorize's) panic, recovered.
type panicError struct{ value any }

func (p panicError) Error() string { return "rpc: handler panic: " + fmt.Sprint(p.value) }

// errorReply maps a handler's error to the code and message of its reply.
// An [*APIError] gives its own; an error wrapping a sentinel of this
// package with a code (ErrArgs, ErrNotFound, ErrShutdown, …) gives that
// code and its whole text; any other error, and a panic, gives its code
// ([CodeOf]) and the code's generic text, unless Config.ExposeErrors sends
// the text (NewLife's way). A hidden error is logged with its text.
func (s *Server) errorReply(ss *Session, action []byte, err error) (int32, string) {
	var ae *APIError
	if errors.As(err, &ae) {
		if errors.Is(ae, ErrShutdown) || errors.Is(ae, ErrNotServing) {
			// Another server's refusal, which the handler passed on: it
			// ran, so its reply must not read as this server's refusal of
			// a call it did not run (a caller may send that again
			// elsewhere, idempotent or not).
			return int32(ae.Code), refusedDownstream + ae.Message
		}
		return int32(ae.Code), ae.Message
	}
	code := CodeOf(err)
	var ce *codeError
	var pe panicError
	switch {
	case errors.As(err, &ce) && !ce.local, s.cfg.ExposeErrors:
		if errors.As(err, &pe) {
			return int32(code), fmt.Sprint(pe.value)
		}
		return int32(code), err.Error()
	case !errors.As(err, &pe) && !errors.Is(err, transport.ErrClosed) && !errors.Is(err, context.Canceled):
		// (a panic was logged with its stack already; a stream whose
		// connection ended has no one to tell)
		s.logLine(kindHidden, ss, action, code, err)
	}
	if t := http.StatusText(code); t != "" { // a hidden error's message: its code's HTTP status text
		return int32(code), t
	}
	return int32(code), "error " + strconv.Itoa(code)
}

// refusedDownstream starts the message of a refusal a handler passed on.
const refusedDownstream = "rpc: a server this call depends on refused it: "
