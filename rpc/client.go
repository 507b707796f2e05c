package rpc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/codec"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// ClientConfig holds a client's settings. The zero value means "all
// defaults"; a zero field takes the default named on it.
type ClientConfig struct {
	// Transport holds the connection settings. With Mode left at its zero
	// value (transport.ReceiveEvent), a client over plain TCP that has no
	// OnPush and no Interceptors reads each reply on the goroutine that
	// waits for it, as transport.ReceiveSync does, which saves a goroutine
	// hand-off a call, until it opens its first stream: that connection
	// then gets a receive goroutine (codec.Conn.StartReceiving). Such a
	// connection notices a server's close at its next call (which then
	// goes out on a new connection), does not close itself after
	// IdleTimeout, and leaves the pushes it would drop in its socket until
	// that call: a server that pushes much to a client idle for long may
	// close it as a slow consumer (the next call reconnects). Mode
	// ReceivePull keeps a receive goroutine on every connection;
	// ReceiveSync reads on the callers' goroutines over any socket, pushes
	// reaching OnPush only while a call waits.
	Transport transport.ClientConfig
	// Framer bounds the replies a connection accepts (default 10 MiB).
	Framer codec.FramerConfig
	// Timeout bounds a call whose context has no earlier deadline
	// (default [DefaultTimeout], 15 s, NewLife ApiClient.Timeout), and a
	// stream's wait for its next item. A call that times out, by this or
	// by its context, fails with an error matching [ErrTimeout] and
	// context.DeadlineExceeded.
	Timeout time.Duration
	// Token, when set, goes with every call (NewLife ApiClient.Token; see
	// SetToken). It is merged into the call's argument object under the
	// key Token, as NewLife merges it; a call without arguments sends an
	// object of the token alone (NewLife sends nothing: its server reads
	// the token into the session and its actions without parameters
	// ignore it; a lifenet server takes such an object for no arguments).
	// A bare value (number, string, bool), bytes or an array have no room
	// for it: before the first such call on a connection that has not yet
	// seen the current token, the client shows it to the server with a
	// call of Api/Info whose argument is the token alone, and the server's
	// session keeps it for the calls after (NewLife's and lifenet's
	// servers both keep the last token a connection showed). For HTTP
	// servers it is sent as Authorization: Bearer.
	Token string
	// Headers are merged into every call's argument object after Token,
	// sorted by key (NewLife ApiClient.Headers).
	Headers map[string]string
	// Conns is the number of connections the client keeps to its server,
	// used in turn (default 1: every call multiplexed over one connection).
	Conns int
	// Login, if set, runs when a call is refused with code 401; the call
	// is then retried once (NewLife ApiClient.OnLoginAsync). It typically
	// calls a login action and SetToken.
	Login func(ctx context.Context, c *Client) error
	// OnPush, if set, gets the server's one-way requests (pushes): the
	// action and its data, borrowed for the call. It runs on the
	// connection's reading goroutine and must not block.
	OnPush func(action string, data []byte)
	// Interceptors wrap every call, one-way call and stream the client
	// makes, and the pushes it gets, the first outermost (see
	// [Interceptor]).
	Interceptors []Interceptor
	// SendTimeout sends each call's remaining time (until its context's
	// deadline, or Timeout; a stream's, its context's deadline only) to
	// the server, as the key Timeout-Ms of its argument object
	// (docs/PROTOCOL.md §5.2a), so that a lifenet server's handler gets a
	// context that ends when the caller stops waiting (and sends no reply
	// past it, which the caller would drop). A
	// call without arguments sends an object of it; a bare value, bytes
	// and an array have no room for it. Off by default: a NewLife server
	// has no use for the key (it binds no parameter, as none can be named
	// Timeout-Ms, but a single complex parameter bound from the whole
	// object would see it as an unknown key).
	SendTimeout bool
	// Log gets the client's log lines: its transport's (connections
	// opened and closed, failed reconnects; see transport.Config.Log),
	// unless Transport.Config.Log is set. Nil means slog.Default() as it is
	// when Dial is called; docs/observability.md lists the lines. A
	// client's calls are logged by an [AccessLog] interceptor.
	Log *slog.Logger
}

// DefaultClientConfig returns a ClientConfig with every default filled in.
func DefaultClientConfig() ClientConfig {
	c := ClientConfig{Transport: transport.DefaultClientConfig(), Framer: codec.DefaultFramerConfig()}
	c.fill()
	return c
}

func (c *ClientConfig) fill() {
	c.Framer.MaxFrame = cmp.Or(c.Framer.MaxFrame, codec.DefaultMaxFrame)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.Conns = cmp.Or(c.Conns, 1)
}

// Validate reports the first setting out of range.
func (c ClientConfig) Validate() error {
	err := cmp.Or(c.Transport.Validate(), c.Framer.Validate(), notNegative("Timeout", c.Timeout))
	if err == nil && (c.Conns < 0 || c.Conns > 10000) {
		err = fmt.Errorf("%w: Conns %d (0 to 10000)", ErrConfig, c.Conns)
	}
	return err
}

// Client calls the actions of a NewLife ApiServer or a lifenet Server
// (NewLife ApiClient). Its server addresses are tried in turn: a call that
// finds its connection gone reconnects, to the next address when the
// current one fails (failover). Calls are multiplexed over the connection,
// matched by SRMP sequence number, at most 255 in flight per connection
// (more wait for a free number). All methods are safe for concurrent use.
type Client struct {
	cfg    ClientConfig
	addrs  []*url.URL
	opts   codec.Options
	slots  []slot
	turn   atomic.Uint32
	server atomic.Uint32 // index of the address to dial next
	closed atomic.Bool
	token  atomic.Pointer[string]
	web    *http.Client // for http:// and https:// servers
	ownWeb bool         // web has a transport of its own (Transport.TLS), closed with the client
	chain  Next         // ClientConfig.Interceptors around runCall; nil: none
}

// slot is one of the client's connections: the live one, or the dial that
// will replace it. The dial runs outside mu, so calls on the slot are never
// held up by it beyond their own context.
type slot struct {
	mu     sync.Mutex
	cc     *codec.Client
	dialer *dialing // the dial in progress, if any
}

// dialing is one dial of a slot: the calls that find it in progress wait
// for it (or their context) and share its result.
type dialing struct {
	done   chan struct{} // closed when the dial ends; err and cut are set before
	err    error
	cut    bool               // err came from the dialing call's context, not the servers
	cancel context.CancelFunc // Close ends the dial at once
}

// Dial returns a client of servers, a comma-separated list of addresses,
// and connects to the first that answers. An address is
//   - "tcp://host:port" (no scheme means tcp): SRMP over TCP, or over TLS
//     when cfg.Transport.TLS is set;
//   - "tls://host:port": SRMP over TLS, with cfg.Transport.TLS (its
//     RootCAs check the server, its Certificates are the client's for
//     mutual TLS), or the system's roots; the host is the server name
//     when the config names none;
//   - "udp://host:port": SRMP in datagrams;
//   - "ws://host:port/path", "wss://…": SRMP in WebSocket, wss over TLS
//     as tls://;
//   - "http://host:port/prefix", "https://…": NewLife's HTTP form, https
//     with cfg.Transport.TLS, or the system's roots.
func Dial(ctx context.Context, servers string, cfg ClientConfig) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.fill()
	if cfg.Log == nil {
		cfg.Log = slog.Default() // at Dial, not in fill: DefaultClientConfig leaves it to the caller (a cluster's Logger)
	}
	addrs, err := parseServers(servers)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, addrs: addrs, slots: make([]slot, cfg.Conns)}
	c.SetToken(cfg.Token)
	c.opts = codec.Options{Timeout: cfg.Timeout, Handler: c.onPush, Log: cfg.Log}
	if len(cfg.Interceptors) > 0 {
		c.chain = chain(cfg.Interceptors, c.runCall)
	}
	if isHTTP(addrs[0]) {
		c.web, c.ownWeb = webClient(cfg)
		return c, nil
	}
	if _, err := c.conn(ctx, 0); err != nil {
		return nil, err
	}
	return c, nil
}

func parseServers(servers string) ([]*url.URL, error) {
	var out []*url.URL
	for _, s := range strings.Split(servers, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "://") {
			s = "tcp://" + s
		}
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrAddress, s, err)
		}
		switch u.Scheme {
		case "tcp", "tls", "udp", "ws", "wss", "http", "https":
		default:
			return nil, fmt.Errorf("%w: %q (tcp, tls, udp, ws, wss, http or https)", ErrAddress, s)
		}
		if u.Host == "" {
			return nil, fmt.Errorf("%w: %q has no host", ErrAddress, s)
		}
		if len(out) > 0 && isHTTP(u) != isHTTP(out[0]) {
			return nil, fmt.Errorf("%w: mixing HTTP and socket servers in one client", ErrAddress)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no server address", ErrAddress)
	}
	return out, nil
}

func isHTTP(u *url.URL) bool { return u.Scheme == "http" || u.Scheme == "https" }

// conn returns slot i's live connection, connecting when it has none: one
// call dials, the others wait for its result or their context's end.
func (c *Client) conn(ctx context.Context, i int) (*codec.Conn, error) {
	sl := &c.slots[i]
	for {
		sl.mu.Lock()
		if c.closed.Load() {
			sl.mu.Unlock()
			return nil, ErrClosed
		}
		if sl.cc != nil {
			if cn := sl.cc.Conn(); cn.Session().Reason() == transport.ReasonNone { // not closing or closed
				sl.mu.Unlock()
				return cn, nil
			}
			sl.cc.Close()
			sl.cc = nil
		}
		d := sl.dialer
		if d == nil {
			return c.redial(ctx, sl) // unlocks sl.mu
		}
		sl.mu.Unlock()
		select {
		case <-d.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if d.err != nil && !d.cut {
			return nil, d.err // the servers are down: do not sweep them again at once
		}
		// The dial connected, or only the dialing call's context ended: look again.
	}
}

// redial connects slot sl to the first server that answers, trying them
// in turn from the current one (failover). Called with sl.mu held, which
// it releases for the dial.
func (c *Client) redial(ctx context.Context, sl *slot) (*codec.Conn, error) {
	dctx, cancel := context.WithCancel(ctx)
	d := &dialing{done: make(chan struct{}), cancel: cancel}
	sl.dialer = d
	sl.mu.Unlock()
	var cc *codec.Client
	err := c.eachServer(func(k int) (bool, error) {
		var err error
		cc, err = c.dial(dctx, c.addrs[k])
		if err != nil && dctx.Err() != nil {
			return true, fmt.Errorf("%w: %w", ErrNoServer, err) // not the server's fault: no failover
		}
		return err == nil, err
	})
	cancel()
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.dialer = nil
	if c.closed.Load() { // Close came during the dial (and cancelled it)
		if err == nil {
			cc.Close()
		}
		err = ErrClosed
	}
	d.err, d.cut = err, err != nil && ctx.Err() != nil
	close(d.done)
	if err != nil {
		return nil, err
	}
	sl.cc = cc
	return cc.Conn(), nil
}

// eachServer calls try with the servers' indexes in turn, from the current
// server, until a try is done; a server whose try is not done is failed
// over (the next one becomes current). It returns the done try's error,
// or ErrNoServer with the last error when no try was done.
func (c *Client) eachServer(try func(k int) (done bool, err error)) error {
	var last error
	for range c.addrs {
		k := int(c.server.Load()) % len(c.addrs)
		done, err := try(k)
		if done {
			return err
		}
		last = err
		c.server.CompareAndSwap(uint32(k), uint32(k+1)) // fail over
	}
	return fmt.Errorf("%w: %w", ErrNoServer, last)
}

// dial connects to one server address.
func (c *Client) dial(ctx context.Context, u *url.URL) (*codec.Client, error) {
	opts := c.opts
	opts.Pipeline = codec.NewPipeline(codec.SRMPFraming(c.cfg.Framer))
	network := "tcp"
	if u.Scheme == "udp" {
		network = "udp"
	}
	tcfg := c.cfg.Transport
	if u.Scheme == "ws" || u.Scheme == "wss" {
		tcfg.Upgrade = wsUpgrade(u, c.cfg)
	}
	if c.readsOnCallers(u) {
		tcfg.Mode = transport.ReceiveSync
	}
	if u.Scheme == "tls" || u.Scheme == "wss" || tcfg.TLS != nil && network == "tcp" {
		tcfg.TLS = clientTLS(tcfg.TLS, u)
	}
	cc, err := codec.Dial(ctx, network, u.Host, tcfg, opts)
	if err != nil {
		return nil, err
	}
	cc.Conn().SetState(&connState{addr: u}) // before any call can find the connection
	return cc, nil
}

// readsOnCallers reports whether a connection to u reads its replies on
// the callers' goroutines (transport.ReceiveSync) though the config left
// the mode at its default: nothing needs a reader between calls (no
// OnPush, no interceptor seeing pushes; a stream starts one), and before
// each call it can drain what came unasked, which needs a plain TCP socket
// (not TLS, not WebSocket, not UDP) on a system that reads one without
// waiting.
func (c *Client) readsOnCallers(u *url.URL) bool {
	t := &c.cfg.Transport
	return drainsBuffered && t.Mode == transport.ReceiveEvent && !t.AutoReconnect &&
		u.Scheme == "tcp" && t.TLS == nil && c.cfg.OnPush == nil && c.chain == nil
}

// pick returns a connection for the next call, in turn over the slots.
func (c *Client) pick(ctx context.Context) (*codec.Conn, error) {
	i := 0
	if n := len(c.slots); n > 1 {
		i = int(c.turn.Add(1)) % n
	}
	return c.conn(ctx, i)
}

// Invoke calls action with args and decodes the reply's data into result
// (a pointer; nil to ignore the data). args are encoded as NewLife does:
// nil for none, []byte and string raw, numbers and bools as text, anything
// else as JSON (an object also carries Token and Headers). A server's error
// reply returns an [*APIError] (which errors.Is matches to its code's
// sentinel: [ErrNotFound], [ErrArgs], …); a timeout wraps [ErrTimeout]. A
// call that finds its connection already gone reconnects (to the next
// server if need be; [ErrNoServer] when none answers) and goes out on the
// new one; a call pending when its connection ends fails with
// [ErrConnClosed] and is not retried, since it may have run. A 401 runs ClientConfig.Login and
// retries once; calls Login makes (with the context it gets) do not run
// Login again.
func (c *Client) Invoke(ctx context.Context, action string, args, result any) error {
	if c.chain != nil {
		return c.intercept(ctx, KindUnary, action, args, result, nil)
	}
	return c.invokeLogin(ctx, action, args, result, nil)
}

// invokeLogin is a call with its Login retry; iv, when not nil, is its
// Invocation, which keeps the reply.
func (c *Client) invokeLogin(ctx context.Context, action string, args, result any, iv *Invocation) error {
	err := c.invoke(ctx, action, args, result, iv)
	if err != nil && c.cfg.Login != nil && ctx.Value(inLogin{}) == nil && isUnauthorized(err) {
		if lerr := c.cfg.Login(context.WithValue(ctx, inLogin{}, true), c); lerr != nil {
			return errors.Join(err, lerr)
		}
		if iv != nil {
			iv.own.token = c.Token() // the interceptors see the token the call goes again with
		}
		err = c.invoke(ctx, action, args, result, iv)
	}
	return err
}

// intercept runs a call of kind through the interceptors; item is a
// stream's consumer.
func (c *Client) intercept(ctx context.Context, kind CallKind, action string, args, result any, item func(*codec.Message) (bool, error)) error {
	iv := sessionCall(nil)
	iv.client, iv.argv, iv.res, iv.item = true, args, result, item
	iv.own = CallInfo{action: action, kind: kind, token: c.Token(), hasToken: true}
	iv.info = &iv.own
	err := c.chain(ctx, iv)
	endSessionCall(nil, iv)
	return err
}

// runCall is a call itself, after the client's interceptors.
func (c *Client) runCall(ctx context.Context, iv *Invocation) error {
	switch iv.info.kind {
	case KindOneWay:
		return c.oneWay(ctx, iv.info.action, iv.argv, iv)
	case KindStream:
		return c.runStream(ctx, iv.info.action, iv.argv, iv, iv.item)
	case KindPush:
		if f := c.cfg.OnPush; f != nil {
			f(iv.info.action, iv.raw)
		}
		return nil
	}
	return c.invokeLogin(ctx, iv.info.action, iv.argv, iv.res, iv)
}

// extrasOf fills x with what a call made with ctx carries besides its
// arguments (nil: nothing): ctx's metadata and trace context, and with
// SendTimeout its remaining time: until ctx's deadline or the client's
// Timeout, whichever comes first; for a stream (whose Timeout bounds the
// wait for each item, not the stream) ctx's deadline only.
func (c *Client) extrasOf(ctx context.Context, x *extras, stream bool) *extras {
	md, _ := ctx.Value(outgoingKey{}).(*outgoing)
	tc, _ := ctx.Value(traceKey{}).(*TraceContext)
	var ms int64
	if c.cfg.SendTimeout {
		left, ok := c.cfg.Timeout, !stream
		if dl, has := ctx.Deadline(); has {
			left, ok = min(left, time.Until(dl)), true
			if stream {
				left = time.Until(dl)
			}
		}
		// In whole ms, rounded up (left+999µs would wrap near
		// math.MaxInt64), and at most the longest a server keeps.
		if ok {
			if ms = int64(left / time.Millisecond); left%time.Millisecond > 0 {
				ms++
			}
			ms = min(max(ms, 1), maxTimeoutMs)
		}
	}
	if md == nil && tc == nil && ms == 0 {
		return nil
	}
	x.md, x.trace, x.timeout = md, tc, ms
	return x
}

// inLogin marks the context of a Login run: a login call refused with 401
// fails instead of running Login again, for ever.
type inLogin struct{}

// isUnauthorized reports a server's 401 reply. It is a function of its
// own so that the *APIError errors.As fills is allocated on failed calls
// only, not on every call.
func isUnauthorized(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == CodeUnauthorized
}

// ClientStats are a [Client]'s counters: the sums over its current
// connections (a connection that ended and was replaced takes its counts
// with it).
type ClientStats struct {
	InFlight int    // calls waiting for their replies now, and timed-out ones whose numbers rest in quarantine
	TimedOut uint64 // calls that failed with [ErrTimeout]
	Unknown  uint64 // replies that matched no call (late, duplicated, never asked); dropped
	Reused   uint64 // calls given a sequence number within about a round trip of its last reply (a duplicate of that reply would be taken for theirs)
	// BytesIn is the bytes its current connections have read from their
	// servers, in any protocol, whole frames or not: 0 after a timed-out
	// call says the server has sent nothing at all (a port that accepts
	// and never answers: an HTTP server waiting for a line's end, a
	// listener of some other program), where a slow server has sent part
	// of a reply or earlier ones.
	BytesIn uint64
}

// Stats returns the client's counters. Safe for concurrent use.
func (c *Client) Stats() ClientStats {
	var st ClientStats
	for i := range c.slots {
		sl := &c.slots[i]
		sl.mu.Lock()
		if sl.cc != nil {
			s := sl.cc.Conn().Stats()
			st.Unknown += s.Unknown
			st.TimedOut += s.TimedOut
			st.InFlight += s.InFlight
			st.Reused += s.Reused
			st.BytesIn += sl.cc.Transport().Stats().BytesIn
		}
		sl.mu.Unlock()
	}
	return st
}

// fits refuses a request body whose frame would be over the client's
// Framer.MaxFrame (the server's limit by default too), before anything is
// written: the server would end the connection, and every call on it.
func (c *Client) fits(action string, body []byte) error {
	if frameLen(len(body)) <= c.cfg.Framer.MaxFrame {
		return nil // inlined: a call that fits pays a comparison
	}
	return tooLargeRequest(action, len(body), c.cfg.Framer.MaxFrame)
}

// tooLargeRequest is fits' error for a request body of n bytes.
func tooLargeRequest(action string, n, limit int) error {
	return fmt.Errorf("rpc: %s: %w", action, tooLarge("request", n, limit))
}

// connState is what a client keeps of one of its connections.
type connState struct {
	addr  *url.URL               // the server address it was dialed to
	shown atomic.Pointer[string] // the token last shown on the connection (one of c.token's values)
}

// showToken makes sure the server session of cn holds the client's token
// before a call whose body does not carry it (carried false: no token, or
// a bare value, bytes or an array, which have no room for one). A
// connection that has not seen the current token yet is shown it first by
// a call of Api/Info with the token alone as its argument, which NewLife's
// ApiServer reads into the session (its Info takes a parameter) and a
// lifenet server reads before any action runs, whatever the reply; the
// session keeps it for the calls after it (NewLife's and lifenet's alike).
// A call that carries the token records it as shown.
func (c *Client) showToken(ctx context.Context, cn *codec.Conn, carried bool) error {
	cs, _ := cn.State().(*connState)
	if cs == nil {
		return nil
	}
	cur := c.token.Load()
	shown := cs.shown.Load()
	switch {
	case shown == cur:
		return nil
	case carried:
		cs.shown.Store(cur)
		return nil
	case *cur == "":
		return nil // nothing to show (a cleared token does not clear the session's)
	}
	var stack [128]byte
	body, _, err := appendRequest(stack[:0], actionInfo, nil, *cur, nil, nil)
	if err != nil {
		return err
	}
	reply, err := cn.RequestBytesPrefixed(ctx, FlagRPC, body, nameLen(actionInfo))
	var re *codec.ReplyError
	switch {
	case err == nil:
		reply.Release()
	case !errors.As(err, &re): // an error reply (Api/Info refused or turned off) still showed the token
		return err
	}
	cs.shown.Store(cur)
	return nil
}

// SetToken sets the token merged into later calls' arguments (a login
// action's result, say); see ClientConfig.Token.
func (c *Client) SetToken(t string) { c.token.Store(&t) }

// Token returns the client's current token.
func (c *Client) Token() string { return *c.token.Load() }

// invoke makes one call; iv, when not nil, keeps its reply (and the
// reply's data as its result) for the interceptors.
func (c *Client) invoke(ctx context.Context, action string, args, result any, iv *Invocation) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if c.web != nil {
		return c.invokeHTTP(ctx, action, args, result, iv)
	}
	var stack [256]byte
	body, cn, err := c.request(ctx, stack[:0], action, args, iv, false)
	if err != nil {
		return err
	}
	// The reply repeats the action name: one that does not is an earlier
	// call's late reply on a reused sequence number, and is dropped.
	named := nameLen(action)
	var dst any = result
	if iv != nil {
		dst = iv // the interceptors see the reply: useReply keeps it
	}
	used, err := cn.RequestBytesInto(ctx, FlagRPC, body, named, useReply, dst)
	if err != nil && errors.Is(err, codec.ErrNotSent) { // the connection had ended: the call never left, so a new one may carry it
		if cn, err = c.pick(ctx); err == nil {
			iv.wentOut(cn, action, body)
			used, err = cn.RequestBytesInto(ctx, FlagRPC, body, named, useReply, dst)
		}
	}
	switch {
	case err == nil:
		return nil
	case !used:
		return callError(action, err, result)
	case errors.Is(err, errStreamReply): // a lifenet server's stream: the rest of it is dropped
		return fmt.Errorf("rpc: %s: %w", action, ErrStreamAction)
	}
	return fmt.Errorf("%w (%s): %w", ErrBadReply, action, err) // its body or its result did not decode
}

// errStreamReply is useReply's error for a stream's reply to a call.
var errStreamReply = errors.New("rpc: a stream's reply to a call")

// useReply decodes a call's reply (borrowed) into dst, the caller's
// result; it is the codec.ReplyUse of every call. dst is the call's
// *Invocation when interceptors watch it: the reply is kept for them (its
// data is their result) and decoded into the Invocation's result.
func useReply(dst any, reply *codec.Message) error {
	if reply.Flag&flagStream != 0 {
		return errStreamReply
	}
	iv, watched := dst.(*Invocation)
	if !watched {
		return decodeReply(reply, dst)
	}
	payload := reply.PayloadBytes()
	p := packet.Get(len(payload))
	copy(p.Bytes(), payload)
	kept := codec.NewMessage(reply.Kind, reply.Flag, reply.Seq, p) // reply is borrowed, or released when use returns
	b, err := parseBody(kept.PayloadBytes(), false)
	if err != nil {
		kept.Release()
		return err
	}
	iv.dropReply()
	iv.reply, iv.result = kept, b.data
	return decodeResult(b.data, iv.res)
}

// Call is the generic form of Invoke: it returns the result as an R.
func Call[R any](ctx context.Context, c *Client, action string, args any) (R, error) {
	var r R
	err := c.Invoke(ctx, action, args, &r)
	return r, err
}

// InvokeOneWay sends action with args and waits for nothing: the server
// runs it and answers nothing, even on error.
func (c *Client) InvokeOneWay(ctx context.Context, action string, args any) error {
	if c.chain != nil {
		return c.intercept(ctx, KindOneWay, action, args, nil, nil)
	}
	return c.oneWay(ctx, action, args, nil)
}

// oneWay sends a one-way call; iv, when not nil, records where it went.
func (c *Client) oneWay(ctx context.Context, action string, args any, iv *Invocation) error {
	if c.web != nil {
		return fmt.Errorf("%w: one-way calls need a socket server", ErrAddress)
	}
	body, cn, err := c.request(ctx, nil, action, args, iv, false)
	if err != nil {
		return err
	}
	p := packet.Get(len(body))
	copy(p.Bytes(), body)
	return cn.Write(codec.NewMessage(codec.KindOneWay, FlagRPC, 0, p))
}

// request appends the body of a call of action with args to dst and
// picks the connection it goes out on, showing the token there first when
// the body cannot carry it; a stream's connection gets a receive
// goroutine. iv, when not nil, records where the call went.
func (c *Client) request(ctx context.Context, dst []byte, action string, args any, iv *Invocation, stream bool) ([]byte, *codec.Conn, error) {
	var xs extras
	body, carried, err := appendRequest(dst, action, args, c.Token(), c.cfg.Headers, c.extrasOf(ctx, &xs, stream))
	if err == nil {
		err = c.fits(action, body)
	}
	if err != nil {
		return nil, nil, err
	}
	cn, err := c.pick(ctx)
	if err == nil && stream && cn.StartReceiving() != nil {
		// A stream's replies come while nobody waits for a call's reply: a
		// connection that read on its callers' goroutines (readsOnCallers)
		// starts a receive goroutine now, and keeps it. One found ended
		// there is replaced once, as a call's would be.
		if cn, err = c.pick(ctx); err == nil {
			err = cn.StartReceiving()
		}
	}
	if err == nil {
		err = c.showToken(ctx, cn, carried)
	}
	if err != nil {
		return nil, nil, localError(action, err)
	}
	iv.wentOut(cn, action, body)
	return body, cn, nil
}

// decodeReply turns a reply into result or an *APIError.
func decodeReply(reply *codec.Message, result any) error {
	b, err := parseBody(reply.PayloadBytes(), false)
	if err != nil {
		return err
	}
	return decodeResult(b.data, result)
}

// callError is the outcome of a call whose request failed with err: an
// error reply is its *APIError, but for codes 0 and 200, a success after
// all (NewLife's ApiException(200, msg), whose msg is decoded into
// result); an error without a reply is localError's.
func callError(action string, err error, result any) error {
	var re *codec.ReplyError
	if !errors.As(err, &re) {
		return localError(action, err)
	}
	b, perr := parseBody(re.Payload, true)
	switch {
	case perr != nil:
		return perr
	case b.code == CodeOK || b.code == codeOK200:
		return decodeResult(b.data, result)
	}
	return apiErrorOf(action, int(b.code), strings.Trim(string(b.data), `"`))
}

// localError is the error of a call of action that got no reply: err with
// the action's name, and ErrTimeout first when err is a timeout.
func localError(action string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, codec.ErrTimeout) {
		return fmt.Errorf("%w (%s): %w", ErrTimeout, action, err)
	}
	return fmt.Errorf("rpc: %s: %w", action, err)
}

// onPush hands a server's one-way requests to OnPush.
func (c *Client) onPush(cn *codec.Conn, msg any) {
	m, ok := msg.(*codec.Message)
	if !ok || m.IsReply() || c.cfg.OnPush == nil && c.chain == nil {
		return // replies nobody waits for any more (timed out) are dropped
	}
	b, err := parseBody(m.PayloadBytes(), false)
	switch {
	case err != nil:
	case c.chain != nil:
		iv := sessionCall(nil)
		iv.client, iv.raw, iv.coded = true, b.data, true
		iv.own = CallInfo{action: string(b.action), kind: KindPush}
		iv.info = &iv.own
		iv.wentOut(cn, "", nil) // where it came from
		c.chain(context.Background(), iv)
		endSessionCall(nil, iv)
	case c.cfg.OnPush != nil:
		c.cfg.OnPush(string(b.action), b.data)
	}
}

// Close closes the client's connections; calls in flight fail.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if c.ownWeb {
		c.web.CloseIdleConnections()
	}
	var errs []error
	for i := range c.slots {
		sl := &c.slots[i]
		sl.mu.Lock()
		if sl.dialer != nil {
			sl.dialer.cancel() // its connection, if it makes one, is closed as it lands
		}
		if sl.cc != nil {
			errs = append(errs, sl.cc.Close())
			sl.cc = nil
		}
		sl.mu.Unlock()
	}
	return errors.Join(errs...)
}
