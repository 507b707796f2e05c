package codec

import (
	"errors"
	"fmt"

	"github.com/lifenet/lifenet/packet"
)

// ErrUnencoded is returned when an outbound message reaches the head of a
// pipeline without having been encoded into a *packet.Packet.
var ErrUnencoded = errors.New("codec: message reached the transport unencoded (missing encoder handler?)")

// Handler is one stage of a pipeline. Read handles an inbound message
// (head → tail) and Write an outbound one (tail → head); each passes on
// zero, one or many messages with c.FireRead / c.FireWrite. A message
// passed to a handler is owned by it: pass it on, or release it.
//
// Each connection gets its own Handler instances (see Pipeline), so a
// handler may keep per-connection state in its fields; it is called from
// one goroutine at a time for reads, but writes may come from any
// goroutine, so state used by Write must be safe for concurrent use.
type Handler interface {
	Read(c *Context, msg any) error
	Write(c *Context, msg any) error
}

// Opener is implemented by handlers that act when their connection starts
// (a handshake, a greeting); Open runs head first, before the first Read.
type Opener interface {
	Open(c *Context) error
}

// Closer is implemented by handlers that need to know when their
// connection ends (to release buffered state); err says why (for a
// transport session, a *transport.CloseError whose cause may be the
// handler error that ended it).
type Closer interface {
	Close(c *Context, err error)
}

// Pipeline is an ordered list of handler constructors, shared by all the
// connections of a server or client; NewChain builds one connection's
// handlers. A Pipeline is immutable and safe for concurrent use.
type Pipeline struct {
	makers []func() Handler
}

// NewPipeline returns a pipeline of handlers built by makers, head first:
// put the framing codec first and application handlers (such as JSON)
// after it.
func NewPipeline(makers ...func() Handler) *Pipeline {
	return &Pipeline{makers: append([]func() Handler(nil), makers...)}
}

// Sender is where a chain's encoded packets go (a transport session).
type Sender interface {
	Send(p *packet.Packet) error
}

// Chain is one connection's instance of a pipeline. Read must be called
// from one goroutine at a time; Write from any.
type Chain struct {
	// Datagram is set for datagram transports (UDP): every Read is one
	// whole datagram, framed on its own.
	Datagram bool

	handlers []Handler
	ctxs     []Context
	out      Sender
	sink     func(msg any) error
}

// Context links a handler to its place in a chain.
type Context struct {
	chain *Chain
	index int
}

// NewChain builds the handlers for one connection: encoded packets go to
// out, decoded messages leave the tail through sink (which owns them).
func (p *Pipeline) NewChain(out Sender, sink func(msg any) error) *Chain {
	ch := &Chain{out: out, sink: sink, handlers: make([]Handler, len(p.makers)), ctxs: make([]Context, len(p.makers))}
	for i, mk := range p.makers {
		ch.handlers[i] = mk()
		ch.ctxs[i] = Context{chain: ch, index: i}
	}
	return ch
}

// Read passes an inbound message in at the head. A *packet.Packet given
// here is borrowed (typically the transport's receive buffer, valid during
// the call): framing handlers copy or share what they keep and never
// release it.
func (ch *Chain) Read(msg any) error {
	if len(ch.handlers) == 0 {
		if p, ok := msg.(*packet.Packet); ok {
			msg = p.Share() // the sink owns what it gets; p is only borrowed
		}
		return ch.sink(msg)
	}
	return ch.handlers[0].Read(&ch.ctxs[0], msg)
}

// Write passes an outbound message in at the tail; it must leave the head
// as a *packet.Packet, which is sent.
func (ch *Chain) Write(msg any) error {
	n := len(ch.handlers)
	if n == 0 {
		return ch.send(msg)
	}
	return ch.handlers[n-1].Write(&ch.ctxs[n-1], msg)
}

// Open tells every handler that implements Opener that the connection
// started, head first, stopping at the first error.
func (ch *Chain) Open() error {
	for i, h := range ch.handlers {
		if o, ok := h.(Opener); ok {
			if err := o.Open(&ch.ctxs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close tells every handler that implements Closer that the connection
// ended, tail first.
func (ch *Chain) Close(err error) {
	for i := len(ch.handlers) - 1; i >= 0; i-- {
		if c, ok := ch.handlers[i].(Closer); ok {
			c.Close(&ch.ctxs[i], err)
		}
	}
}

func (ch *Chain) send(msg any) error {
	if p, ok := msg.(*packet.Packet); ok {
		return ch.out.Send(p)
	}
	release(msg)
	return fmt.Errorf("%w: %T", ErrUnencoded, msg)
}

// FireRead passes msg to the next handler, or out of the tail.
func (c *Context) FireRead(msg any) error {
	ch := c.chain
	if i := c.index + 1; i < len(ch.handlers) {
		return ch.handlers[i].Read(&ch.ctxs[i], msg)
	}
	return ch.sink(msg)
}

// FireWrite passes msg to the previous handler, or out of the head to the
// transport.
func (c *Context) FireWrite(msg any) error {
	ch := c.chain
	if i := c.index - 1; i >= 0 {
		return ch.handlers[i].Write(&ch.ctxs[i], msg)
	}
	return ch.send(msg)
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
