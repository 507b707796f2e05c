package codec

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Match selects how a connection pairs replies with its requests.
type Match uint8

// Matching modes.
const (
	MatchNone Match = iota // no requests: every inbound message goes to the handler
	MatchSRMP              // SRMP: by sequence number
	MatchFIFO              // no ids (length-field): the oldest pending request
)

// Options configure the codec layer of a server or client.
type Options struct {
	// Pipeline builds each connection's handlers (required).
	Pipeline *Pipeline
	// Match selects reply matching (default MatchNone).
	Match Match
	// Timeout is the request timeout when the request's context has no
	// earlier deadline (default 30 s).
	Timeout time.Duration
	// Handler gets every inbound message that is not a reply to one of
	// this side's requests: *Message for SRMP, *packet.Packet for the
	// length-field and delimiter codecs. It owns the message and must
	// release it. It runs on the connection's receive goroutine (a ReceiveSync
	// client: on the goroutine of the Request that is reading).
	Handler func(c *Conn, msg any)
}

// Conn is one connection seen through the codec layer: its pipeline, and
// its pending requests. All methods are safe for concurrent use.
type Conn struct {
	sess   *transport.Session
	chain  *Chain
	m      *matcher
	opts   *Options
	fifoMu sync.Mutex // FIFO: register and write in one step, so wire order is queue order
	lead   *lead      // a ReceiveSync client's read turn; nil when a receive goroutine reads
}

// Hooks returns transport hooks that run opts.Pipeline on every session of
// a server (or a client's connection).
func Hooks(opts Options) transport.Hooks { return hooksFor(&opts) }

func hooksFor(o *Options) transport.Hooks {
	return transport.Hooks{
		BatchSends: true, // replies to the frames of one read leave in one writev
		OnOpen: func(s *transport.Session) {
			if err := connOf(s, o).chain.Open(); err != nil {
				s.Abort(err)
			}
		},
		OnReceive: func(s *transport.Session, p *packet.Packet) {
			connOf(s, o).read(p)
		},
		OnClose: func(s *transport.Session, e *transport.CloseError) {
			c := connOf(s, o)
			c.chain.Close(e)
			if c.m != nil {
				c.m.close()
			}
		},
	}
}

// read runs received bytes through the pipeline; bytes the pipeline
// rejects end the connection. p stays the caller's.
func (c *Conn) read(p *packet.Packet) {
	if err := c.chain.Read(p); err != nil {
		c.sess.Abort(err)
	}
}

// connOf returns the session's Conn, creating it on first use.
func connOf(s *transport.Session, o *Options) *Conn {
	if c, ok := s.Attachment().(*Conn); ok {
		return c
	}
	c := &Conn{sess: s, opts: o}
	c.chain = o.Pipeline.NewChain(s, c.sink)
	c.chain.Datagram = s.Datagram()
	switch o.Match {
	case MatchSRMP:
		c.m = newMatcher(false, o.Timeout)
	case MatchFIFO:
		c.m = newMatcher(true, o.Timeout)
	}
	return s.CompareAndAttach(c).(*Conn)
}

// ConnOf returns the codec connection of a session served with Hooks, or nil.
func ConnOf(s *transport.Session) *Conn {
	c, _ := s.Attachment().(*Conn)
	return c
}

// sink is the tail of the inbound pipeline: replies go to their requests,
// everything else to the handler.
func (c *Conn) sink(msg any) error {
	if c.m != nil {
		switch v := msg.(type) {
		case *Message:
			if c.opts.Match == MatchSRMP && v.IsReply() {
				c.m.deliver(int(v.Seq), v)
				return nil
			}
		case *packet.Packet:
			if c.opts.Match == MatchFIFO && c.m.pending() {
				c.m.deliver(0, v)
				return nil
			}
		}
	}
	if h := c.opts.Handler; h != nil {
		h(c, msg)
	} else {
		release(msg)
	}
	return nil
}

// Session returns the transport session under the connection.
func (c *Conn) Session() *transport.Session { return c.sess }

// Write sends a message through the pipeline without waiting for anything
// (a one-way message, a push). It takes ownership of msg.
func (c *Conn) Write(msg any) error { return c.chain.Write(msg) }

// Reply answers an SRMP request with payload (same sequence, reply kind).
// It takes ownership of payload; req stays the caller's.
func (c *Conn) Reply(req *Message, payload *packet.Packet) error {
	return c.chain.Write(NewMessage(KindReply, req.Flag, req.Seq, payload))
}

// ReplyError answers an SRMP request with an error reply.
func (c *Conn) ReplyError(req *Message, payload *packet.Packet) error {
	return c.chain.Write(NewMessage(KindError, req.Flag, req.Seq, payload))
}

// errNoMatch is returned by requests on a connection without matching.
var errNoMatch = errors.New("codec: requests need Options.Match")

// Request sends msg (an SRMP *Message, whose Seq is assigned here, or a
// *packet.Packet for FIFO) and waits for the reply, which the caller owns:
// a *Message or a *packet.Packet. It waits first for a free in-flight slot
// when MaxInFlight requests are pending. It fails with ctx's error, with
// ErrTimeout after Options.Timeout, or with ErrConnClosed. It takes
// ownership of msg.
func (c *Conn) Request(ctx context.Context, msg any) (any, error) {
	key, ch, err := c.start(ctx, msg, nil)
	if err != nil {
		return nil, err
	}
	if c.lead != nil {
		return c.lead.await(ctx, c, key, ch)
	}
	return c.m.wait(ctx, key, ch)
}

// RequestAsync sends msg like Request but returns once it is sent; cb gets
// the reply or the error later (ErrTimeout, ErrConnClosed). ctx bounds only
// the wait for a free in-flight slot. It takes ownership of msg. A client
// dialled in transport.ReceiveSync mode refuses it (only a waiting Request
// reads there).
func (c *Conn) RequestAsync(ctx context.Context, msg any, cb Callback) error {
	if c.lead != nil {
		release(msg)
		return errAsyncNeedsEvents
	}
	_, _, err := c.start(ctx, msg, cb)
	return err
}

// start registers and sends a request.
func (c *Conn) start(ctx context.Context, msg any, cb Callback) (int, chan result, error) {
	if c.m == nil {
		release(msg)
		return 0, nil, errNoMatch
	}
	if err := c.m.acquire(ctx); err != nil {
		release(msg)
		return 0, nil, err
	}
	if c.opts.Match == MatchFIFO {
		c.fifoMu.Lock()
		defer c.fifoMu.Unlock()
	}
	key, ch, err := c.m.register(cb)
	if err != nil {
		release(msg)
		return 0, nil, err
	}
	switch v := msg.(type) {
	case *Message:
		v.Kind, v.Seq = KindRequest, uint8(key)
	case *packet.Packet:
		if c.opts.Match != MatchFIFO {
			c.m.unregister(key)
			v.Release()
			return 0, nil, fmt.Errorf("codec: SRMP requests are *Message, not %T", msg)
		}
	}
	if err := c.chain.Write(msg); err != nil {
		c.m.unregister(key)
		return 0, nil, err
	}
	return key, ch, nil
}

// Stats returns the connection's matching counters.
func (c *Conn) Stats() MatchStats {
	if c.m == nil {
		return MatchStats{}
	}
	return c.m.stats()
}

// Client is a codec-level client: a transport client whose connection runs
// a pipeline, with requests and replies matched.
type Client struct {
	tc   *transport.Client
	opts *Options
}

// Dial connects like transport.Dial and runs opts.Pipeline on the
// connection. By default a receive goroutine reads (transport.ReceiveEvent;
// cfg.Mode ReceivePull is treated alike): replies, pushes and RequestAsync
// callbacks are handled whether or not anyone waits. With cfg.Mode
// transport.ReceiveSync there is no receive goroutine: the callers blocked
// in Request take turns reading the socket, which saves a goroutine
// hand-off per request; Options.Handler then runs only while some Request
// waits, on that caller's goroutine, and RequestAsync is refused.
func Dial(ctx context.Context, network, address string, cfg transport.ClientConfig, opts Options) (*Client, error) {
	if opts.Pipeline == nil {
		return nil, errors.New("codec: Options.Pipeline is required")
	}
	syncReads := cfg.Mode == transport.ReceiveSync
	if !syncReads {
		cfg.Mode = transport.ReceiveEvent
	}
	o := &opts
	h := hooksFor(o)
	h.BatchSends = false // a client's receive goroutine must keep reading (see transport.Hooks)
	tc, err := transport.Dial(ctx, network, address, cfg, h)
	if err != nil {
		return nil, err
	}
	c := &Client{tc: tc, opts: o}
	if syncReads { // no reconnects in this mode: this is the only Conn
		conn := c.Conn()
		conn.lead = newLead(tc)
		if conn.m != nil {
			conn.m.onExpire = tc.Wake
		}
	}
	return c, nil
}

// Conn returns the codec connection of the current transport connection.
func (c *Client) Conn() *Conn {
	s := c.tc.Session()
	if conn := ConnOf(s); conn != nil {
		return conn
	}
	return connOf(s, c.opts)
}

// Request sends a request on the current connection; see Conn.Request.
func (c *Client) Request(ctx context.Context, msg any) (any, error) {
	return c.Conn().Request(ctx, msg)
}

// RequestAsync sends a request on the current connection; see
// Conn.RequestAsync.
func (c *Client) RequestAsync(ctx context.Context, msg any, cb Callback) error {
	return c.Conn().RequestAsync(ctx, msg, cb)
}

// Write sends a one-way message on the current connection.
func (c *Client) Write(msg any) error { return c.Conn().Write(msg) }

// Transport returns the underlying transport client.
func (c *Client) Transport() *transport.Client { return c.tc }

// Close closes the client; pending requests fail with ErrConnClosed.
func (c *Client) Close() error { return c.tc.Close() }
