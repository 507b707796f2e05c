package codec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/lifenet/lifenet/internal/mono"
	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Options configure the codec layer of a server or client. They are read
// when the server or client is created and not after.
type Options struct {
	// Pipeline builds each connection's handlers (required); its framing
	// stage decides how requests are matched (see [Pipeline.Match]).
	Pipeline *Pipeline
	// Timeout is the request timeout when the request's context has no
	// earlier deadline (default [DefaultRequestTimeout], 30 s; one of more
	// than 100 years, math.MaxInt64 for "never", is taken as 100 years).
	Timeout time.Duration
	// Handler gets every inbound message that is not a reply to one of
	// this side's requests: a borrowed *[Message] for SRMP, a borrowed
	// *packet.Packet payload for the length-field and delimiter formats
	// (see Message for borrowing; nothing needs releasing). It runs on the
	// connection's reading goroutine, one message at a time per connection;
	// replies it makes to the frames of one read leave together when they
	// are all handled (writes made through the [Conn] keep their order; a
	// write straight to the transport session may overtake them). A
	// handler that blocks stops its connection's reads; it gets no
	// cancellation signal, so one that may wait long should watch
	// c.Session().Reason() or its own deadline (a server's Close waits for
	// it). A panic in [Handler] ends its connection (transport.ReasonError,
	// cause *transport.PanicError) after the replies already made go out;
	// the connection's pending requests fail with ErrConnClosed.
	Handler func(c *Conn, msg any)
	// MaxPartialBytes caps, for a server, the bytes all its connections
	// together hold in incomplete frames, their framers' and what is
	// counted with [Server.Reserve] (default
	// [DefaultMaxPartialBytes]; negative: no cap). A connection whose frame
	// would need more ends with [ErrMemoryCap], so that peers sending the
	// start of large frames cannot take the server's memory. Clients
	// ignore it.
	MaxPartialBytes int64
	// OnOpen and OnClose, if set, run when a connection starts (before its
	// first message) and when it has ended, on its reading goroutine.
	OnOpen  func(c *Conn)
	OnClose func(c *Conn, err error)
	// OnPark, if set, runs each time a server's connection parks: it
	// gives its goroutine and read buffer up until its next bytes (see
	// transport.Config.ParkAfter; a new connection may park before its
	// first message). It runs on the connection's reading goroutine,
	// between reads: never while [Options.Handler], OnOpen or OnClose runs
	// for it. It may drop what the layer above keeps only for a busy
	// connection (the rpc package drops a session's cached call contexts),
	// which the connection's next message makes again; it must not block.
	// It runs as the connection is about to park: one that cannot park
	// after all (bytes came meanwhile) reads on. Clients' connections
	// never park. See [transport.ParkHandler].
	OnPark func(c *Conn)
	// Route, RouteTimeout and HandOff, for a server, choose the stack of
	// each stream connection from its first bytes (see
	// [transport.Hooks.Route]): a connection routed to
	// [transport.RouteServe] runs the pipeline, one handed off leaves it
	// for good. A connection gets its Conn (and OnOpen runs) once routed.
	Route        func(first []byte, full bool) transport.Route
	RouteTimeout time.Duration
	HandOff      func(c *transport.HandedConn)
	// ReadTimes makes each connection read the clock when a read of its
	// bytes arrives, for [Conn.ReadTime]: a server that times a message
	// from the socket's read (rpc's CallEvent) sets it. Off, reads cost no
	// clock reading.
	ReadTimes bool
	// Log is the server's or client's logger: the transport's, unless
	// its Config.Log is set (both nil: slog.Default()). The codec layer
	// writes no lines of its own; the transport's tell a connection's
	// life: Debug when it opens and closes, Warn (rate-limited) when a
	// limit or a protocol violation closes it — a frame too large or
	// expired, MaxPartialBytes, a malformed frame, with the codec's error
	// as the line's err — and Error for a panic of [Handler] or OnOpen,
	// with its stack. See docs/observability.md.
	Log *slog.Logger
}

// Validate reports whether the options can serve a connection.
func (o *Options) Validate() error {
	if o.Pipeline == nil {
		return ErrNoPipeline
	}
	if o.Timeout < 0 {
		return fmt.Errorf("%w: negative Timeout %v", ErrConfig, o.Timeout)
	}
	return nil
}

// Conn is one connection seen through the codec layer: its pipeline, and
// its pending requests. All methods are safe for concurrent use.
type Conn struct {
	chain  Chain                   // its session is the connection's
	m      atomic.Pointer[matcher] // its pending requests (requests); a server's connection makes it with its first request
	side   *connSide               // its server's (shared), or a client's own: the options, the server, a read turn
	one    *connOne                // the connOne this Conn is, when its pipeline is one framing stage of this package; else nil
	state  any                     // the application's per-connection value (SetState)
	readAt int64                   // mono reading of the read being handled (Options.ReadTimes; the reading goroutine's)
	// Its small fields (match, heard, srmpTail, batches) are the chain's,
	// packed with Chain.Datagram.
}

// connSide is what a connection has of the end it belongs to: a server's
// connections share their server's; a client's connection has its own.
// (A client's lead would otherwise be a field of every server's Conn.)
type connSide struct {
	opts   Options // the server's or client's options
	server *Server // the server whose connection this is (nil for a client's)
	lead   *lead   // a ReceiveSync client's read turn; nil when a receive goroutine reads (see syncLead)
}

// srmpCtx is the SRMP stage's context when it is the pipeline's tail
// (sendSRMP), else nil. A connOne's is at a fixed place (no chain walk).
func (c *Conn) srmpCtx() *HandlerContext {
	if !c.chain.srmpTail {
		return nil
	}
	if w := c.one; w != nil {
		return &w.stage[0].ctx
	}
	return c.chain.tailCtx()
}

// connOne is a [Conn] whose pipeline is one framing stage of this package
// (Pipeline.one), held with its chain's stage and that stage's framer: a
// connection's codec state is one allocation.
type connOne struct {
	Conn
	stage [1]stage
	fr    framing
}

// SetState attaches the value of the layer above codec to the connection
// (the rpc package keeps its session here), read on every message without
// a lock. Call it from [Options.OnOpen], before the connection's first
// message. Application state belongs in the session's bag
// ([transport.Session.Set]), the one place for it at every layer.
func (c *Conn) SetState(v any) { c.state = v }

// State returns the value SetState attached, or nil.
func (c *Conn) State() any { return c.state }

// ReadTime returns when the read whose bytes the connection is handling
// arrived (with [Options.ReadTimes]; the zero Time without): for a message
// its handler gets, the read that completed its frame. Call it from the
// handler, on the reading goroutine; a message kept past the handler
// keeps the time only if the handler takes it.
func (c *Conn) ReadTime() time.Time {
	if c.readAt == 0 {
		return time.Time{}
	}
	return mono.Time(c.readAt)
}

// requests returns the connection's request matcher, made on first use:
// most of a server's connections never send a request. Its pipeline
// matches requests (match is not MatchNone).
func (c *Conn) requests() *matcher {
	if m := c.m.Load(); m != nil {
		return m
	}
	return c.makeRequests()
}

// closedRequests is the matcher of every connection that ended before it
// made one (a server's connection that never sent a request): a request
// after the end fails at once with [ErrConnClosed], and the end allocates
// nothing. No request can be pending on it, so no cause is kept.
var closedRequests = func() *matcher {
	m := newMatcher(false, 0)
	m.close(nil)
	return m
}()

// makeRequests makes the matcher requests returns (apart, so that
// requests inlines).
func (c *Conn) makeRequests() *matcher {
	c.m.CompareAndSwap(nil, newMatcher(c.chain.match == MatchFIFO, c.side.opts.Timeout))
	return c.m.Load()
}

// newConn builds the codec state of a session and opens its handlers;
// side is its server's (shared), or a client's connection's own.
func newConn(s *transport.Session, side *connSide) *Conn {
	o := &side.opts
	p := o.Pipeline
	var c *Conn
	if fc := p.one; fc != nil {
		w := &connOne{}
		w.fr.framer.conf = fc
		w.stage[0].h = w.fr.handler()
		c = &w.Conn
		c.one = w
		c.chain.init(w.stage[:])
	} else {
		c = &Conn{}
		c.chain.init(p.newStages())
	}
	c.side, c.chain.match = side, p.match
	c.chain.sess, c.chain.conn, c.chain.Datagram = s, c, s.Datagram()
	st := c.chain.stages
	if n := len(st); n > 0 {
		if _, ok := st[n-1].h.(srmpHandler); ok {
			c.chain.srmpTail = true
		}
		if framingOf(st[n-1].h) != nil {
			st[n-1].ctx.tail = true // the tail stage (its reads' context) hands its messages straight to the sink
		}
	}
	if side.server == nil && c.chain.match != MatchNone {
		c.m.Store(newMatcher(c.chain.match == MatchFIFO, o.Timeout)) // a client's connection is for requests
	}
	if err := c.chain.Open(); err != nil {
		s.Abort(err)
	}
	if o.OnOpen != nil {
		o.OnOpen(c)
	}
	return c
}

// sessionHandler is the [transport.SessionHandler] of a [Conn]'s session,
// kept out of Conn's method set: only the transport calls it.
type sessionHandler Conn

// Receive runs received bytes through the pipeline: straight into the
// framing stage of a connOne (no dispatch through the chain); bytes
// the pipeline rejects end the connection. p stays the caller's.
func (h *sessionHandler) Receive(_ *transport.Session, p *packet.Packet) {
	c := (*Conn)(h)
	if c.side.opts.ReadTimes {
		c.readAt = mono.Now()
	}
	if !c.chain.heard {
		c.chain.heard = true
		if c.side.server == nil && c.chain.match == MatchSRMP {
			if err := foreignProtocol(p.Bytes()); err != nil {
				c.requests().close(err) // its pending requests fail naming it, not after their timeout
				c.chain.sess.Abort(err)
				return
			}
		}
	}
	var err error
	if w := c.one; w != nil {
		err = w.fr.Read(&w.stage[0].ctx, p)
	} else {
		err = c.chain.Read(p)
	}
	if err != nil {
		c.chain.sess.AbortAfterWrites(err) // the answers to the frames before the bad one still go out
	}
}

func (h *sessionHandler) Closed(_ *transport.Session, e *transport.CloseError) {
	(*Conn)(h).closed(e)
}

var _ transport.ParkHandler = (*sessionHandler)(nil)

// Parked runs [Options.OnPark] (the session is a [transport.ParkHandler]).
func (h *sessionHandler) Parked(*transport.Session) {
	if f := h.side.opts.OnPark; f != nil {
		f((*Conn)(h))
	}
}

// frameExpired reports whether a framing stage of the connection has held
// an incomplete frame past its Expire at now, a mono reading (any
// goroutine may ask).
func (c *Conn) frameExpired(now int64) bool {
	for i := range c.chain.stages {
		if f := framingOf(c.chain.stages[i].h); f != nil && f.framer.expiredAt(now) {
			return true
		}
	}
	return false
}

// closed tells the handlers that the connection ended and fails its
// pending requests with ErrConnClosed.
func (c *Conn) closed(e *transport.CloseError) {
	c.chain.Close(e)
	if c.chain.match != MatchNone {
		var cause error
		if e != nil && (errors.Is(e.Err, ErrNotSRMP) || errors.Is(e.Err, ErrFrameTooLarge) || errors.Is(e.Err, ErrCorruptFrame)) {
			cause = e.Err // the pending requests fail naming what the peer sent
		}
		if !c.m.CompareAndSwap(nil, closedRequests) { // none made: the shared closed one, nothing allocated
			c.m.Load().close(cause)
		}
	}
	if f := c.side.opts.OnClose; f != nil {
		f(c, e)
	}
}

// read is the session's Receive, for the reads a ReceiveSync client's
// caller makes itself.
func (c *Conn) read(p *packet.Packet) { (*sessionHandler)(c).Receive(c.chain.sess, p) }

// sink is the tail of the inbound pipeline: replies go to their requests,
// everything else to the handler. msg is borrowed.
func (c *Conn) sink(msg any) error {
	switch v := msg.(type) {
	case *Message:
		return c.sinkMessage(v)
	case *packet.Packet:
		return c.sinkPacket(v)
	}
	c.handle(msg)
	return nil
}

// sinkPacket is sink for a packet, which a length-field or delimiter tail
// stage passes straight (no interface value to unpack).
func (c *Conn) sinkPacket(p *packet.Packet) error {
	if m := c.m.Load(); m != nil && c.chain.match == MatchFIFO && m.pending() {
		m.deliver(0, p)
		return nil
	}
	c.handle(p)
	return nil
}

// sinkMessage is sink for a message, which an SRMP tail stage passes
// straight (no interface value to unpack).
func (c *Conn) sinkMessage(m *Message) error {
	if m.IsReply() && c.chain.match == MatchSRMP {
		c.requests().deliver(int(m.Seq), m) // a stray reply to a server's connection makes its matcher, to count it
		return nil
	}
	c.handle(m)
	return nil
}

// handle gives an inbound message that is not a reply to Options.Handler.
func (c *Conn) handle(msg any) {
	if h := c.side.opts.Handler; h != nil {
		h(c, msg)
	}
}

// Close ends the connection once what was written through it so far has
// left, including replies still held for the current read's batch (see
// transport.Session.CloseAfterWrites; Session().Close() ends it at once
// and drops them).
func (c *Conn) Close() error { return c.chain.sess.CloseAfterWrites() }

// Session returns the transport session under the connection.
func (c *Conn) Session() *transport.Session { return c.chain.sess }

// Write gives msg to the pipeline without waiting for a reply (a one-way
// message, a length-field reply). When the session's send queue is full it
// waits for room (see [transport.Session.Send]); a message that must not
// wait for the peer goes by [Conn.Enqueue]. It takes ownership of msg; a
// borrowed message (such as the one a [Handler] got) is copied or kept;
// writing back the very payload a length-field handler was lent is the
// cheapest reply (see the package's Cost and Order).
func (c *Conn) Write(msg any) error { return c.chain.Write(msg) }

// Enqueue is Write for a message that must never wait for the peer (a
// server's push): it is queued on the session and Enqueue returns, however
// full the queue (transport.Session.Enqueue: a peer that does not take it
// is closed as a slow consumer, not waited for). Order with the
// connection's other writes is kept (see the package's Order). It takes
// ownership of msg.
func (c *Conn) Enqueue(msg any) error { return c.chain.Enqueue(msg) }

// Reply answers an SRMP request with payload (reply kind, the request's
// flag and sequence). It takes ownership of payload, which may be nil or
// borrowed (a borrowed payload, such as req.Payload itself, is copied or
// kept); req stays the caller's.
func (c *Conn) Reply(req *Message, payload *packet.Packet) error {
	return sendSRMP(context.Background(), nil, c, KindReply, req.Flag, req.Seq, nil, payload)
}

// ReplyBytes answers an SRMP request with a copy of b.
func (c *Conn) ReplyBytes(req *Message, b []byte) error {
	return sendSRMP(context.Background(), nil, c, KindReply, req.Flag, req.Seq, b, nil)
}

// ReplyError answers an SRMP request with an error reply; see Reply.
func (c *Conn) ReplyError(req *Message, payload *packet.Packet) error {
	return sendSRMP(context.Background(), nil, c, KindError, req.Flag, req.Seq, nil, payload)
}

// Request sends an SRMP request and waits for its reply, which the caller
// owns and must release. Request assigns m.Seq; m.Kind must be
// KindRequest. It waits first for a free in-flight slot when
// [MaxInFlightSRMP] requests are pending, then, if the session's send
// queue is full, for room in it ([transport.Session.SendContext]: a request
// never fails its connection for being large or one of many; on a pipeline
// whose SRMP stage is not the tail that wait is not bounded by ctx). It
// fails with ctx's error, with [ErrTimeout] after Options.Timeout, or with
// ErrConnClosed. It takes ownership of m.
func (c *Conn) Request(ctx context.Context, m *Message) (*Message, error) {
	flag, p, err := requestOf(m)
	if err != nil {
		return nil, err
	}
	return replyAs[*Message](c.call(ctx, nil, false, flag, nil, p, replyUse{}))
}

// RequestBytes sends an SRMP request with flag and a copy of payload (no
// pooled message or packet is needed) and waits for its reply; see Request.
func (c *Conn) RequestBytes(ctx context.Context, flag uint8, payload []byte) (*Message, error) {
	return replyAs[*Message](c.call(ctx, nil, false, flag, payload, nil, replyUse{}))
}

// MaxPrefix is the longest prefix RequestBytesPrefixed compares.
const MaxPrefix = 64

// RequestBytesPrefixed is RequestBytes for a protocol whose replies repeat the
// start of their request (NewLife's RPC repeats the action name): a reply
// with the request's sequence number that does not start with the first
// prefixLen bytes of payload (at most [MaxPrefix]) is taken for an earlier request's
// late or repeated reply — SRMP has 256 numbers, so they are reused — and
// dropped, counted in MatchStats.Unknown, while the request waits on.
func (c *Conn) RequestBytesPrefixed(ctx context.Context, flag uint8, payload []byte, prefixLen int) (*Message, error) {
	return replyAs[*Message](c.call(ctx, payload[:min(prefixLen, MaxPrefix, len(payload))], false, flag, payload, nil, replyUse{}))
}

// ReplyUse is what a caller of [Conn.RequestBytesInto] does with its
// reply: decode it into dst, the destination the caller passed along.
type ReplyUse func(dst any, reply *Message) error

// RequestBytesInto is RequestBytesPrefixed for a caller that is done with
// its reply once it has decoded it: use gets the reply, borrowed for the
// call, with dst, on the caller's goroutine, instead of the reply being
// returned. When that goroutine reads the reply itself (a ReceiveSync
// client's turn holder) use runs on the read buffer the reply came in,
// and the call takes no copy of it and no pooled Message; otherwise use
// gets a kept copy, released when it returns. A static function for use
// and dst passed along, rather than a closure, keep the call free of
// allocations. used reports that a reply came and use ran: err is then
// use's. Otherwise err is the request's error, as RequestBytesPrefixed
// returns it (an error reply is a *ReplyError and use does not run). use
// must neither block nor make requests on the connection: while it runs
// on the read, the replies after it in the same read wait. A panic in use
// reaches the caller once the connection's read turn is given back.
func (c *Conn) RequestBytesInto(ctx context.Context, flag uint8, payload []byte, prefixLen int, use ReplyUse, dst any) (used bool, err error) {
	return c.requestInto(ctx, payload[:min(prefixLen, MaxPrefix, len(payload))], false, flag, payload, nil, replyUse{msg: use, dst: dst})
}

// requestInto is call for RequestBytesInto and RequestPacketInto: use
// gets the reply, borrowed when the caller's goroutine read it, else a
// kept copy it releases after use.
func (c *Conn) requestInto(ctx context.Context, echo []byte, fifo bool, flag uint8, body []byte, p *packet.Packet, use replyUse) (used bool, err error) {
	r, err := c.call(ctx, echo, fifo, flag, body, p, use)
	if err != nil {
		_, used = r.(usedReply)
		return used, err
	}
	switch reply := r.(type) {
	case usedReply:
		return true, nil
	case usePanic:
		panic(reply.v)
	}
	return true, useKept(use, r)
}

// useKept runs use on an owned reply and releases it, also when use panics.
func useKept(use replyUse, reply any) error {
	defer release(reply)
	return use.run(reply)
}

// replyUse is a caller's use of its reply: an SRMP reply's (msg,
// [Conn.RequestBytesInto]) or a FIFO reply's (pkt,
// [Conn.RequestPacketInto]), with the caller's dst. The zero value uses
// none: the caller gets its reply kept.
type replyUse struct {
	msg ReplyUse
	pkt PacketUse
	dst any
}

// takes reports whether u uses reply, a reply of its kind.
func (u *replyUse) takes(reply any) bool {
	switch reply.(type) {
	case *Message:
		return u.msg != nil
	case *packet.Packet:
		return u.pkt != nil
	}
	return false
}

// run runs u on reply, which u takes.
func (u *replyUse) run(reply any) error {
	if msg, ok := reply.(*Message); ok {
		return u.msg(u.dst, msg)
	}
	return u.pkt(u.dst, reply.(*packet.Packet))
}

// RequestPacket sends a request on a length-field or delimiter connection
// and waits for the next reply in order (FIFO), which the caller owns and
// must release; see Request. It takes ownership of p.
func (c *Conn) RequestPacket(ctx context.Context, p *packet.Packet) (*packet.Packet, error) {
	return replyAs[*packet.Packet](c.call(ctx, nil, true, 0, nil, p, replyUse{}))
}

// PacketUse is what a caller of [Conn.RequestPacketInto] does with its
// reply: decode it into dst, the destination the caller passed along.
type PacketUse func(dst any, reply *packet.Packet) error

// RequestPacketInto is RequestPacket for a caller that is done with its
// reply once it has decoded it, as [Conn.RequestBytesInto] is for SRMP:
// use gets the reply, borrowed for the call, with dst, on the caller's
// goroutine, instead of the reply being returned. When that goroutine
// reads the reply itself (a ReceiveSync client's turn holder) use runs on
// the read buffer the reply came in and the call takes no copy of it;
// otherwise use gets a kept copy, released when it returns. used reports
// that a reply came and use ran: err is then use's; otherwise err is the
// request's error, as RequestPacket returns it. use must neither block
// nor make requests on the connection, and must not keep the reply past
// its return (Keep it to hold it longer). A panic in use reaches the
// caller once the connection's read turn is given back. It takes
// ownership of p.
func (c *Conn) RequestPacketInto(ctx context.Context, p *packet.Packet, use PacketUse, dst any) (used bool, err error) {
	return c.requestInto(ctx, nil, true, 0, nil, p, replyUse{pkt: use, dst: dst})
}

// syncLead is the read turn of a ReceiveSync client whose callers read,
// nil when a receive goroutine reads: from Dial, or since StartReceiving.
func (c *Conn) syncLead() *lead {
	if l := c.side.lead; l != nil && !l.events.Load() {
		return l
	}
	return nil
}

// StartReceiving makes a ReceiveSync client's connection read on a
// receive goroutine from now on, as a client dialled in ReceiveEvent mode
// does: RequestAsync and RequestStream then work, Options.Handler runs on
// that goroutine for every inbound message whether or not a request
// waits, and the connection's end is noticed when it comes. Requests
// waiting meanwhile keep waiting and get their replies from the
// goroutine. It is for a client that learns only after Dial that it needs
// reads nobody waits for (a stream): until then its requests pay no
// goroutine hand-off. It cannot be undone, does nothing on a connection
// that has a receive goroutine already, and fails with the close error of
// one that has ended. Safe for concurrent use.
func (c *Conn) StartReceiving() error {
	if c.syncLead() == nil {
		return nil
	}
	return c.side.lead.startReceiving()
}

// replyAs is a blocking request's reply as the type its format gives.
func replyAs[T any](r any, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return r.(T), nil
}

// call sends a blocking request and waits for its reply: an SRMP
// request with flag carrying p (taken) or, when p is nil, a copy of body,
// whose reply must start with echo; for fifo, the packet p (see begin);
// use, the borrowing caller's (RequestBytesInto, RequestPacketInto), or
// the zero replyUse for a reply returned kept. On a ReceiveSync
// client's connection its caller takes its turn reading (callSync), else
// the receive goroutine delivers the reply.
func (c *Conn) call(ctx context.Context, echo []byte, fifo bool, flag uint8, body []byte, p *packet.Packet, use replyUse) (any, error) {
	if err := c.matches(fifo); err != nil {
		p.Release()
		return nil, err
	}
	if l := c.syncLead(); l != nil {
		return c.callSync(ctx, l, echo, fifo, flag, body, p, use)
	}
	var key int
	var ch chan result
	var err error
	if fifo {
		key, ch, err = c.startFIFO(ctx, nil, p)
	} else {
		key, ch, err = c.begin(ctx, nil, echo, false, flag, body, p)
	}
	if err != nil {
		return nil, err
	}
	return c.requests().wait(ctx, key, ch)
}

// RequestAsync sends an SRMP request like Request but returns once it is
// sent; cb gets the reply or the error later ([ErrTimeout], [ErrConnClosed]).
// The reply is borrowed: valid during cb (Keep it to hold it longer). cb
// runs on the connection's reading goroutine or on the timeout sweeper and
// must not block. ctx bounds only the waits before the request leaves: for
// a free in-flight slot, and for room in a full send queue. It
// takes ownership of m. A ReceiveSync client refuses it
// ([ErrAsyncNeedsEvents]) until [Conn.StartReceiving].
func (c *Conn) RequestAsync(ctx context.Context, m *Message, cb func(reply *Message, err error)) error {
	if c.syncLead() != nil {
		m.Release()
		return ErrAsyncNeedsEvents
	}
	flag, p, err := requestOf(m)
	if err != nil {
		return err
	}
	_, _, err = c.start(ctx, &callback{msg: cb}, false, flag, p)
	return err
}

// RequestBytesAsync is RequestAsync with flag and a copy of payload.
func (c *Conn) RequestBytesAsync(ctx context.Context, flag uint8, payload []byte, cb func(reply *Message, err error)) error {
	if err := c.asyncSRMP(); err != nil {
		return err
	}
	_, _, err := c.begin(ctx, &callback{msg: cb}, nil, false, flag, payload, nil)
	return err
}

// StreamStep is what a RequestStream callback wants after a reply.
type StreamStep uint8

const (
	// StreamMore keeps the stream open for its next reply.
	StreamMore StreamStep = iota
	// StreamDone ends the stream at its last reply: the peer sends no
	// more, and the sequence number is free at once.
	StreamDone
	// StreamLeave ends the stream before its last reply. The peer may go
	// on sending, so the sequence number stays out of use until the peer
	// has sent nothing for a timeout; what it sends meanwhile is dropped
	// and counted in MatchStats.Unknown.
	StreamLeave
)

// RequestStream sends an SRMP request with flag and a copy of payload that
// may have many replies, all with its sequence number (NewLife's
// server-streaming calls). Like RequestBytesPrefixed, it takes only replies
// that start with the first prefixLen bytes of payload. cb gets each reply,
// borrowed, on the reading goroutine, and returns what it wants next; the
// request ends when cb returns [StreamDone] or [StreamLeave], or gets an error
// (its step then does not matter): an error reply, [ErrTimeout] when no
// reply came within the timeout since the last one, ErrConnClosed. The
// sequence number stays taken until then, and after a timeout or
// StreamLeave as StreamLeave says. cb must not block. A ReceiveSync client
// refuses it ([ErrAsyncNeedsEvents]) until [Conn.StartReceiving].
func (c *Conn) RequestStream(ctx context.Context, flag uint8, payload []byte, prefixLen int, cb func(reply *Message, err error) StreamStep) error {
	if err := c.asyncSRMP(); err != nil {
		return err
	}
	_, _, err := c.begin(ctx, &callback{stream: cb}, payload[:min(prefixLen, MaxPrefix, len(payload))], false, flag, payload, nil)
	return err
}

// RequestPacketAsync is RequestAsync for length-field and delimiter
// connections; the reply packet is borrowed by cb.
func (c *Conn) RequestPacketAsync(ctx context.Context, p *packet.Packet, cb func(reply *packet.Packet, err error)) error {
	if c.syncLead() != nil {
		p.Release()
		return ErrAsyncNeedsEvents
	}
	_, _, err := c.start(ctx, &callback{pkt: cb}, true, 0, p)
	return err
}

// asyncSRMP is the refusal of an asynchronous SRMP request with a []byte
// payload, or nil: such a request is started with begin straight away
// (what start would decide for it).
func (c *Conn) asyncSRMP() error {
	if c.side.lead != nil || c.chain.match != MatchSRMP { // inlined: the refusal apart
		return c.asyncRefusal()
	}
	return nil
}

// asyncRefusal is asyncSRMP's error, if any.
func (c *Conn) asyncRefusal() error {
	if c.syncLead() != nil {
		return ErrAsyncNeedsEvents
	}
	if c.chain.match != MatchSRMP {
		return formatError(MatchSRMP, c.chain.match)
	}
	return nil
}

// requestOf takes the flag and payload of m, an SRMP request, and
// releases m (also when it is not a request).
func requestOf(m *Message) (flag uint8, p *packet.Packet, err error) {
	if m.Kind != KindRequest {
		m.Release()
		return 0, nil, fmt.Errorf("%w (kind %d)", ErrNotRequest, m.Kind)
	}
	flag, p = m.Flag, m.Payload
	m.Payload = nil
	m.Release()
	return flag, p, nil
}

// matches reports a request of the wrong format for the connection: an
// SRMP one, or for fifo a length-field or delimiter one.
func (c *Conn) matches(fifo bool) error {
	want := MatchSRMP
	if fifo {
		want = MatchFIFO
	}
	if c.chain.match != want {
		return formatError(want, c.chain.match)
	}
	return nil
}

// start starts an asynchronous request (cb) carrying p (see begin), of
// the connection's format. A ReceiveSync client's connection has refused
// it before; blocking requests go by call.
func (c *Conn) start(ctx context.Context, cb *callback, fifo bool, flag uint8, p *packet.Packet) (int, chan result, error) {
	if err := c.matches(fifo); err != nil {
		p.Release()
		return 0, nil, err
	}
	if fifo {
		return c.startFIFO(ctx, cb, p)
	}
	return c.begin(ctx, cb, nil, false, flag, nil, p)
}

// startFIFO is start for a FIFO request: registering and writing are one
// step under the matcher's fifoMu, so that wire order is queue order.
func (c *Conn) startFIFO(ctx context.Context, cb *callback, p *packet.Packet) (int, chan result, error) {
	mu := &c.requests().fifoMu
	mu.Lock()
	defer mu.Unlock()
	return c.begin(ctx, cb, nil, true, 0, nil, p)
}

// begin registers a request, asynchronous (cb) or blocking (cb nil), and
// sends it with the request's key (for SRMP its sequence number): an SRMP
// request with flag carrying p (taken) or, when p is nil, a copy of body;
// for fifo, the packet p, the matcher's fifoMu held. p is released if the
// request fails before it is sent. (Separate parameters, not one struct:
// escape analysis follows a struct as a whole, and p's leaking would take
// body, often the caller's stack buffer, with it.)
func (c *Conn) begin(ctx context.Context, cb *callback, echo []byte, fifo bool, flag uint8, body []byte, p *packet.Packet) (int, chan result, error) {
	m := c.requests()
	var key int
	var ch chan result
	var alone bool
	var err error
	if cb != nil && !fifo && c.chain.batches.Load() != 0 && small(p) && len(body) < copyBelow && c.stagesRequests() {
		if p != nil {
			body = p.Bytes()
		}
		var staged int
		if key, staged, err = m.registerStaged(ctx, cb, echo, flag, body); err == nil && staged > 0 {
			if p != nil && !p.Borrowed() {
				p.Release()
			}
			if staged >= stageFlushAt {
				m.flushStaged(false) // a failed write closes the connection: the callbacks get it
			}
			return key, nil, nil
		}
	} else {
		key, ch, alone, err = m.register(ctx, cb, echo)
	}
	if err != nil {
		p.Release()
		return 0, nil, acquireError(err)
	}
	if cb == nil && !alone && c.chain.batches.Load() == 0 && !c.chain.Datagram { // (a ReceiveSync client's blocking requests went by callSync)
		err = c.sendCrowded(ctx, key, fifo, flag, body, p)
	} else if fifo {
		err = c.chain.Write(p)
	} else {
		err = sendSRMP(ctx, nil, c, KindRequest, flag, uint8(key), body, p)
	}
	if err != nil {
		if !m.unregister(key, cb != nil) {
			return key, ch, nil // its callback has had the outcome (a stray reply, a timeout, the close): reported once
		}
		return 0, nil, sendError(err)
	}
	return key, ch, nil
}

// send writes a started request with its key (see begin); it takes p.
func (c *Conn) send(ctx context.Context, key int, fifo bool, flag uint8, body []byte, p *packet.Packet) error {
	if fifo {
		return c.chain.Write(p)
	}
	return sendSRMP(ctx, nil, c, KindRequest, flag, uint8(key), body, p)
}

// acquireError is a request's error when it got no in-flight slot.
func acquireError(err error) error {
	if errors.Is(err, ErrConnClosed) {
		return fmt.Errorf("%w (%w)", err, ErrNotSent) // err may name why (ErrNotSRMP)
	}
	return err
}

// sendError classifies a request's failed send: on a connection that
// ended, [ErrNotSent] when none of its bytes left (the connection had ended, or the
// write failed before its first byte), so a new connection may carry it;
// else [ErrConnClosed] alone, since a write that failed part way may have
// delivered the whole request.
func sendError(err error) error {
	switch {
	case !errors.Is(err, transport.ErrClosed):
		return err
	case errors.Is(err, transport.ErrNotWritten):
		return fmt.Errorf("%w (%w): %w", ErrConnClosed, ErrNotSent, err)
	}
	return fmt.Errorf("%w: %w", ErrConnClosed, err)
}

// sendCrowded sends a request whose caller is about to block for its
// reply while other requests of this connection are in flight: their
// callers are likely about to send too (woken by the replies of one read),
// so the write is held back while this goroutine yields once, and those
// requests leave in the same write instead of one system call each. A
// lone request, an asynchronous one (its caller may be the reading
// goroutine, or pipelining), one inside Batch, one of a ReceiveSync
// client's callers and a datagram are written at once (begin decides).
func (c *Conn) sendCrowded(ctx context.Context, key int, fifo bool, flag uint8, body []byte, p *packet.Packet) error {
	var err error
	werr := c.chain.sess.Batch(func() {
		err = c.send(ctx, key, fifo, flag, body, p)
		runtime.Gosched()
	})
	if err == nil {
		err = werr
	}
	return err
}

// formatError is a request's error on a connection whose requests are
// matched by got, not by want (the kind of request asked).
func formatError(want, got MatchMode) error {
	if got == MatchNone {
		return ErrNoMatch
	}
	return fmt.Errorf("%w: a %v request on a connection matched by %v", ErrWrongFormat, want, got)
}

// Batch runs f with the connection's writes held back, then writes what
// was sent meanwhile in one write: several RequestAsync calls (or writes)
// cost one system call instead of one each. See transport.Session.Batch.
// Small asynchronous SRMP requests sent meanwhile (from any goroutine) are
// framed into a buffer of the batch as their sequence numbers are given
// out, which saves each a lock; they reach the session before any other
// write of the connection, but a write straight to [Conn.Session] may
// pass them.
func (c *Conn) Batch(f func()) error {
	c.chain.batches.Add(1)
	defer c.chain.batches.Add(-1)
	if !c.stagesRequests() {
		return c.chain.sess.Batch(f)
	}
	m := c.requests()
	m.startBatch(c.chain.sess)
	var ferr error
	err := c.chain.sess.Batch(func() {
		defer func() { ferr = m.flushStaged(true) }() // also when f panics: the batch is counted out
		f()
	})
	if err == nil {
		err = ferr
	}
	return err
}

// Stats returns the connection's matching counters.
func (c *Conn) Stats() MatchStats {
	if m := c.m.Load(); m != nil {
		return m.stats()
	}
	return MatchStats{}
}

// String names a matching mode.
func (m MatchMode) String() string {
	if m == MatchSRMP || m == MatchFIFO {
		return [...]string{MatchSRMP: "sequence (SRMP)", MatchFIFO: "order (FIFO)"}[m]
	}
	return "none"
}

// release frees a message of a known owned type.
func release(msg any) {
	switch m := msg.(type) {
	case *packet.Packet:
		m.Release()
	case *Message:
		m.Release()
	}
}
