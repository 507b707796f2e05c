package rpc

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/transport"
)

// Config holds a server's settings. The zero value means "all defaults";
// a zero field takes the default named on it. A Config is read when the
// server is created and not after.
type Config struct {
	// Transport holds the connection settings (limits, timeouts, buffers).
	// A connection's replies and pushes never wait for its peer: one whose
	// unwritten replies would pass twice Transport.SendQueueBytes is closed
	// as a slow consumer and its queue freed (nats-server's rule; the
	// default SendQueueBytes here is twice Framer.MaxFrame, at least
	// transport.DefaultSendQueueBytes: a connection may hold four replies
	// of the largest size unwritten, 40 MiB by default).
	Transport transport.Config
	// Framer bounds the frames a connection may send (default 10 MiB;
	// partial frames expire after 5 s). The same bounds hold for an HTTP
	// request (header and body) and a WebSocket frame: one not complete
	// Expire after its first byte ends the connection, as do first bytes
	// that do not yet show the connection's protocol.
	Framer codec.FramerConfig
	// Serial handles each connection's requests one at a time on its
	// reading goroutine, replies in order (NewLife Multiplex=false). By
	// default each request runs on its own goroutine and replies leave as
	// they are ready. It does not hold for UDP peers: datagrams carry no
	// order, and their listener's one reading goroutine reads for every
	// peer.
	Serial bool
	// UDPReplyFactor bounds a reply to a UDP peer to this many times its
	// request's size (default 3, QUIC's anti-amplification rule; negative:
	// no bound, for a trusted network). A UDP source address is never
	// validated, so a spoofed one could otherwise turn the server into an
	// amplifier (Api/All answers 36 times its request). A result past it
	// is answered with a 413 error reply, an error's text is cut to fit,
	// and a reply whose name and code alone do not fit is not sent
	// (Stats.Dropped).
	UDPReplyFactor int
	// MaxInFlight caps the calls and streams one connection may have
	// running at once (default 256); past it, the connection's next call
	// runs on its reading goroutine, which stops reading it until that one
	// is done, and its next stream gets a 503 error reply (ErrBusy). A UDP
	// peer's next call gets the 503 too: its reading goroutine is every
	// peer's.
	MaxInFlight int
	// NoHTTP and NoWebSocket turn off the HTTP and WebSocket forms of the
	// port (by default a connection's first bytes decide which it speaks).
	NoHTTP, NoWebSocket bool
	// UseHTTPStatus puts an HTTP call's code in the status line and the
	// bare result in the body (NewLife UseHttpStatus); by default the status
	// is 200 and the body {"action","code","data"}.
	UseHTTPStatus bool
	// MaxHTTPHeader bounds an HTTP request's header (default 64 KiB).
	MaxHTTPHeader int
	// MaxPartialBytes caps the bytes all connections together hold of
	// incomplete units: SRMP frames, HTTP requests (head and body) and
	// WebSocket frames (default codec.DefaultMaxPartialBytes, 256 MiB;
	// negative: no cap). The connection whose unit would pass it ends with
	// codec.ErrMemoryCap; the others are untouched.
	MaxPartialBytes int64
	// MaxArgKeys bounds the keys of a request's arguments, counted at
	// every depth of its JSON (and the fields of an HTTP form or query
	// string); past it the call gets a 400 before anything is decoded
	// (default 65,536: a 10 MiB object of 870 k keys decoded into a map
	// holds ~100 MB). A []byte parameter's data is not counted: it is not
	// decoded.
	MaxArgKeys int
	// Interceptors wrap every call the server answers, its streams and
	// one-way calls included, the first outermost (see [Interceptor]).
	Interceptors []Interceptor
	// OnCallDone, when set, is called after every call the server runs
	// (see [CallEvent]): a hook for metrics that costs a clock read per
	// socket read, three per call, a function call and, for an answered
	// call, the wait for its reply's write (an allocation), where an
	// interceptor costs the call's Invocation and its chain. It runs where
	// the call ran, or, for an answered call, where its reply was written
	// (that goroutine's next write waits for it), after that write; it
	// must not block, nor keep the event's Session past its return. A
	// panic in it is counted and logged as a handler's (Stats.Panics), and
	// the call is answered as it would have been.
	OnCallDone func(CallEvent)
	// OnSessionClose, if set, runs once when an SRMP, WebSocket or UDP
	// session has ended (NewLife's session events), with why (a
	// *transport.CloseError): where an application drops what it kept by
	// [Session.ID]. It runs on the connection's reading goroutine and must
	// not block; a panic in it is counted and logged as a handler's.
	OnSessionClose func(s *Session, err error)
	// Authorize, if set, runs before every action but the built-in Api/All
	// and Api/Info (an application's own Api/… actions included, and an
	// action registered in place of a built-in) and Api/Health; an error
	// it returns is the call's reply (an *APIError's code, else 500). It
	// is an interceptor, the innermost (after Interceptors, which see the
	// calls it refuses); s is nil for a call through Process, action the
	// registered name. A panic in it is a 500, counted and logged like a
	// handler's.
	Authorize func(ctx context.Context, s *Session, action string) error
	// AuthorizeBuiltins runs Authorize before the built-in Api/All and
	// Api/Info too (NewLife tools call Api/Info without a token as a
	// health check: a server that sets it answers them as Authorize
	// says).
	AuthorizeBuiltins bool
	// MetadataKeys are the keys of an argument object a server takes as
	// the call's metadata besides the reserved ones (Token, traceparent,
	// TraceId, Request-Id, Eagleeye-Traceid, Timeout-Ms): the keys of
	// NewLife's ApiClient.Headers its clients send, or those lifenet
	// clients send with AppendToOutgoingContext. Matched in any case, they
	// are in [CallInfo.Metadata], and a primitive parameter bound from an
	// object's one entry does not count them (a struct still binds a field
	// of their name).
	MetadataKeys []string
	// NoBuiltins serves neither Api/All nor Api/Info (a call of either is
	// a 404, unless the application registers its own). To replace one,
	// register an action of its name: Handle and Register replace a
	// built-in instead of failing with ErrDuplicate.
	NoBuiltins bool
	// ExposeErrors sends callers the text of every handler error and the
	// value of every panic, as NewLife does (its ApiServer answers
	// ex.Message). By default only an *APIError's message and the text of
	// an error wrapping one of this package's code sentinels (ErrArgs,
	// ErrNotFound, ErrShutdown, …) go out; any other error, and a panic,
	// is answered with its code ([CodeOf]) and that code's generic text
	// ("Internal Server Error"), and logged here with its text, so that
	// an internal address or a query does not reach the caller.
	ExposeErrors bool
	// Log receives handler panics (once each, with the stack), handler
	// errors whose text the caller does not get, replies too large and
	// dropped requests, each naming the call's action, session, remote
	// address and protocol; the panic, error and reply lines are
	// rate-limited as the transport's are (at most 10 of a kind per 10 s,
	// then one counting the rest). It is also the codec's and the
	// transport's logger unless Transport.Log is set (default
	// slog.Default()). Calls are logged by an [AccessLog] interceptor.
	// docs/observability.md lists the lines.
	Log *slog.Logger
}

// DefaultConfig returns a Config with every default filled in.
func DefaultConfig() Config {
	c := Config{Transport: transport.DefaultConfig(), Framer: codec.DefaultFramerConfig()}
	c.fill()
	return c
}

const (
	defaultMaxInFlight   = 256
	defaultMaxHTTPHeader = 64 << 10
	defaultMaxArgKeys    = 1 << 16
	// DefaultTimeout is a client call's timeout when its context has no
	// earlier deadline: NewLife ApiClient.Timeout, 15 s. It is the only
	// timeout of a call: the client gives it to the codec as
	// codec.Options.Timeout, so codec.DefaultRequestTimeout (30 s, NewLife
	// MessageCodec's, for users of the codec alone) never applies, and a
	// connection attempt's transport.ClientConfig.DialTimeout (3 s, NewLife
	// ISocketClient.Timeout) bounds each dial within the call's time, so
	// that failover to the next server comes before the call's end.
	DefaultTimeout = 15 * time.Second
)

func (c *Config) fill() {
	c.Framer.MaxFrame = cmp.Or(c.Framer.MaxFrame, codec.DefaultMaxFrame)
	c.Transport.WriteTimeout = cmp.Or(c.Transport.WriteTimeout, transport.DefaultWriteTimeout) // the HTTP and WebSocket writes' too
	c.Transport.SendQueueBytes = cmp.Or(c.Transport.SendQueueBytes, max(transport.DefaultSendQueueBytes, 2*c.Framer.MaxFrame))
	c.Framer.Expire = cmp.Or(c.Framer.Expire, codec.DefaultExpire) // the gateway's partial requests expire too
	c.MaxInFlight = cmp.Or(c.MaxInFlight, defaultMaxInFlight)
	c.UDPReplyFactor = cmp.Or(c.UDPReplyFactor, defaultUDPReplyFactor)
	c.MaxHTTPHeader = cmp.Or(c.MaxHTTPHeader, defaultMaxHTTPHeader)
	c.MaxArgKeys = cmp.Or(c.MaxArgKeys, defaultMaxArgKeys)
	if c.Log == nil {
		c.Log = slog.Default()
	}
}

// Validate reports the first setting out of range.
func (c Config) Validate() error {
	err := cmp.Or(c.Transport.Validate(), c.Framer.Validate(), notNegative("MaxInFlight", c.MaxInFlight),
		notNegative("MaxHTTPHeader", c.MaxHTTPHeader), notNegative("MaxArgKeys", c.MaxArgKeys))
	for _, k := range c.MetadataKeys {
		if err == nil && k == "" {
			err = fmt.Errorf("%w: an empty MetadataKeys entry", ErrConfig)
		}
	}
	return err
}

// notNegative is Validate's error for a setting of name below 0, or nil.
func notNegative[T int | int64 | time.Duration](name string, v T) error {
	if v >= 0 {
		return nil
	}
	return fmt.Errorf("%w: %s %v < 0", ErrConfig, name, v)
}
