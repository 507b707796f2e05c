package codec

import (
	"fmt"
	"sync/atomic"

	"github.com/lifenet/lifenet/packet"
	"github.com/lifenet/lifenet/transport"
)

// Handler is one stage of a pipeline. Read handles an inbound message
// (head → tail) and Write an outbound one (tail → head); each passes on
// zero, one or many messages with c.FireRead / c.FireWrite.
//
// Reads lend, writes give. A message passed to Read (and on with FireRead)
// is borrowed for the call: the stage that made it keeps ownership and
// reuses or frees it when FireRead returns, so a stage that keeps a message
// past the call keeps a copy ([Message.Keep], packet.Packet.Keep). A message
// passed to Write (and on with FireWrite) is given: the callee passes it on
// or releases it, including on error.
//
// Each connection gets its own [Handler] instances (see [Pipeline]), so a
// handler may keep per-connection state in its fields; it is called from
// one goroutine at a time for reads, but writes may come from any
// goroutine, so state used by Write must be safe for concurrent use.
type Handler interface {
	Read(c *HandlerContext, msg any) error
	Write(c *HandlerContext, msg any) error
}

// OpenHandler is implemented by handlers that act when their connection starts
// (a handshake, a greeting); Opened runs head first, before the first Read.
type OpenHandler interface {
	Opened(c *HandlerContext) error
}

// CloseHandler is implemented by handlers that need to know when their
// connection ends (to release buffered state); err says why (for a
// transport session, a *transport.CloseError whose cause may be the
// handler error that ended it).
type CloseHandler interface {
	Closed(c *HandlerContext, err error)
}

// Pipeline is an ordered list of handler constructors, shared by all the
// connections of a server or client; NewChain builds one connection's
// handlers. A [Pipeline] is immutable and safe for concurrent use.
type Pipeline struct {
	makers []func() Handler
	match  MatchMode
	// one is the stage's settings when the pipeline is one framing stage
	// of this package (the common case): a connection's Conn then holds
	// its chain and that stage in one allocation (newConn).
	one *framerConf
}

// MatchMode is how a pipeline's connections pair replies with requests; it
// follows from the format of the pipeline's framing stage.
type MatchMode uint8

// Matching modes.
const (
	MatchNone MatchMode = iota // no framing stage of this package: requests are refused (ErrNoMatch)
	MatchSRMP                  // SRMP: by sequence number
	MatchFIFO                  // length-field and delimiter frames carry no ids: the oldest pending request
)

// matcherStage is implemented by the framing stages; the stage nearest the
// tail decides the pipeline's matching.
type matcherStage interface{ match() MatchMode }

// NewPipeline returns a pipeline of handlers built by makers, head first:
// put the framing codec first and application handlers (such as JSON)
// after it.
func NewPipeline(makers ...func() Handler) *Pipeline {
	p := &Pipeline{makers: append([]func() Handler(nil), makers...)}
	for _, mk := range p.makers {
		h := mk()
		if m, ok := h.(matcherStage); ok {
			p.match = m.match()
		}
		if f := framingOf(h); f != nil && len(p.makers) == 1 {
			p.one = f.framer.conf
		}
	}
	return p
}

// Match returns how requests on the pipeline's connections are matched.
func (p *Pipeline) Match() MatchMode { return p.match }

// Sender is where a chain's encoded packets go (a transport session); Send
// takes ownership of p.
type Sender interface {
	Send(p *packet.Packet) error
}

// Chain is one connection's instance of a pipeline. Read must be called
// from one goroutine at a time; Write from any.
type Chain struct {
	// Datagram is set for datagram transports (UDP): every Read is one
	// whole datagram, framed on its own.
	Datagram bool

	// The rest of the first word: the small fields of the Conn whose
	// chain this is (unused for NewChain's), packed with Datagram.
	match    MatchMode    // the pipeline's (Pipeline.Match)
	heard    bool         // the first bytes were read (the reading goroutine's)
	srmpTail bool         // the pipeline's tail is an SRMP stage (Conn.srmpCtx)
	batches  atomic.Int32 // Conn.Batch calls in progress: their writes are held back already

	stages []stage
	sess   *transport.Session // where encoded packets go, when it is a session: small messages are copied into its send buffer
	ext    *chainEnds         // NewChain's Sender and sink; nil for a Conn's chain (the session, and the Conn's sink)
	conn   *Conn              // the Conn whose chain this is (its sink called directly); nil for NewChain's
	// noWait is the stages' contexts for writes that must not wait for
	// room in the send queue (Chain.Enqueue's), made by the first: most
	// connections never make one, and each idle connection would hold
	// them.
	noWait atomic.Pointer[[]HandlerContext]
}

// stage is one handler of a chain and its context: for reads, and for
// writes that may wait for room in the send queue (for those that must
// not, see Chain.noWait).
type stage struct {
	h   Handler
	ctx HandlerContext
}

// chainEnds is where a chain that NewChain built sends and delivers.
type chainEnds struct {
	out  Sender
	sink func(msg any) error
}

// HandlerContext links a handler to its place in a chain. Its methods follow the
// [Handler]'s: FireRead on the reading goroutine, FireWrite and WriteBytes
// from any. A write passed on through the context it came with keeps its
// kind: one given by [Chain.Enqueue] leaves by the session's Enqueue.
type HandlerContext struct {
	chain  *Chain
	index  int32
	noWait bool // a write of Chain.Enqueue: it must not wait for the peer
	tail   bool // the tail stage of a Conn's chain, a framing stage of this package: its messages go straight to the Conn's sink
}

// NewChain builds the handlers for one connection: encoded packets go to
// out, decoded messages leave the tail through sink, which borrows them.
func (p *Pipeline) NewChain(out Sender, sink func(msg any) error) *Chain {
	ch := &Chain{ext: &chainEnds{out: out, sink: sink}}
	ch.sess, _ = out.(*transport.Session)
	ch.init(p.newStages())
	return ch
}

// newStages makes a chain's stages, each with its own handlers.
func (p *Pipeline) newStages() []stage {
	st := make([]stage, len(p.makers))
	for i, mk := range p.makers {
		st[i].h = mk()
	}
	return st
}

// init sets the chain's stages and their contexts.
func (ch *Chain) init(st []stage) {
	ch.stages = st
	for i := range st {
		st[i].ctx = HandlerContext{chain: ch, index: int32(i)}
	}
}

// ctx is the context of stage i for writes that may wait.
func (ch *Chain) ctx(i int) *HandlerContext { return &ch.stages[i].ctx }

// tailCtx is the context of the tail stage for writes that may wait; the
// chain has stages.
func (ch *Chain) tailCtx() *HandlerContext { return &ch.stages[len(ch.stages)-1].ctx }

// Read lends an inbound message to the head (typically the transport's
// receive buffer, valid during the call).
func (ch *Chain) Read(msg any) error {
	if len(ch.stages) == 0 {
		return ch.toSink(msg)
	}
	st := &ch.stages[0]
	return st.h.Read(&st.ctx, msg)
}

// Write gives an outbound message to the tail; it must leave the head as a
// *packet.Packet (or bytes, see [HandlerContext.WriteBytes]), which is sent.
func (ch *Chain) Write(msg any) error { return ch.write(msg, false) }

// Enqueue is Write for a message that must not wait for the peer (a
// server's push): it leaves by the session's Enqueue, which queues it and
// returns (see transport.Session.Enqueue), where Write's message waits for
// room in a full send queue. A Sender that is not a session gets it by Send.
func (ch *Chain) Enqueue(msg any) error { return ch.write(msg, true) }

// write gives msg to the tail through its context of noWait's kind.
func (ch *Chain) write(msg any, noWait bool) error {
	if ch.conn != nil {
		ch.conn.flushBatch() // after a running batch's staged requests
	}
	n := len(ch.stages)
	if n == 0 {
		return ch.sendVia(msg, noWait)
	}
	return ch.stages[n-1].h.Write(ch.context(n-1, noWait), msg)
}

// context is stage i's context for writes of noWait's kind.
func (ch *Chain) context(i int, noWait bool) *HandlerContext {
	if noWait {
		return ch.noWaitCtx(i)
	}
	return &ch.stages[i].ctx
}

// noWaitCtx is stage i's context for writes that must not wait, the
// contexts made by the first such write.
func (ch *Chain) noWaitCtx(i int) *HandlerContext {
	p := ch.noWait.Load()
	if p == nil {
		cs := make([]HandlerContext, len(ch.stages))
		for j := range cs {
			cs[j] = HandlerContext{chain: ch, index: int32(j), noWait: true}
		}
		if ch.noWait.CompareAndSwap(nil, &cs) {
			p = &cs
		} else {
			p = ch.noWait.Load() // another write's
		}
	}
	return &(*p)[i]
}

// Open tells every handler that implements [OpenHandler] that the connection
// started, head first, stopping at the first error.
func (ch *Chain) Open() error {
	for i := range ch.stages {
		if o, ok := ch.stages[i].h.(OpenHandler); ok {
			if err := o.Opened(ch.ctx(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close tells every handler that implements [CloseHandler] that the connection
// ended, tail first.
func (ch *Chain) Close(err error) {
	for i := len(ch.stages) - 1; i >= 0; i-- {
		if c, ok := ch.stages[i].h.(CloseHandler); ok {
			c.Closed(ch.ctx(i), err)
		}
	}
}

// sendVia sends an encoded message, by the session's Enqueue if noWait.
func (ch *Chain) sendVia(msg any, noWait bool) error {
	p, ok := msg.(*packet.Packet)
	switch {
	case !ok:
		release(msg)
		return fmt.Errorf("%w: %T", ErrUnencoded, msg)
	case ch.sess == nil:
		return ch.ext.out.Send(p)
	case noWait:
		return ch.sess.Enqueue(p)
	}
	return ch.sess.Send(p)
}

// Conn returns the connection the context's chain serves, or nil for a
// chain built outside a [Server] or [Client] (NewChain).
func (c *HandlerContext) Conn() *Conn { return c.chain.conn }

// FireRead passes msg to the next handler, or out of the tail.
func (c *HandlerContext) FireRead(msg any) error {
	ch := c.chain
	if i := int(c.index) + 1; i < len(ch.stages) {
		st := &ch.stages[i]
		return st.h.Read(&st.ctx, msg)
	}
	return ch.toSink(msg)
}

// toSink passes a message out of the tail.
func (ch *Chain) toSink(msg any) error {
	if ch.conn != nil {
		return ch.conn.sink(msg)
	}
	return ch.ext.sink(msg)
}

// FireWrite passes msg to the previous handler, or out of the head to the
// transport.
func (c *HandlerContext) FireWrite(msg any) error {
	ch := c.chain
	if i := c.index - 1; i >= 0 {
		return ch.stages[i].h.Write(ch.context(int(i), c.noWait), msg)
	}
	return ch.sendVia(msg, c.noWait)
}

// WriteBytes passes the bytes of parts, as one encoded message, towards the
// head: from the head of a session's chain they are copied straight into
// the session's send buffer (no packet per message); otherwise they are
// copied into a packet for the previous handler or the Sender. The caller
// keeps parts.
func (c *HandlerContext) WriteBytes(parts ...[]byte) error {
	if sess := c.headSession(); sess != nil {
		return sess.SendBytes(parts...) // a concrete call: parts stay on the caller's stack
	}
	if c.chain.sess != nil && c.index == 0 {
		return c.chain.sess.EnqueueBytes(parts...) // noWait
	}
	n := 0
	for _, b := range parts {
		n += len(b)
	}
	p := packet.Get(n)
	dst := p.Bytes()
	for _, b := range parts {
		dst = dst[copy(dst, b):]
	}
	return c.FireWrite(p)
}

// headSession is the session a write from c goes to directly, with a
// wait for room in its send queue: the chain's session when c is the head
// of a session's chain and not a no-wait context; else nil.
func (c *HandlerContext) headSession() *transport.Session {
	if c.index == 0 && !c.noWait {
		return c.chain.sess
	}
	return nil
}
