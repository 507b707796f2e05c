package codec

import (
	"github.com/lifenet/lifenet/packet"
)

// framing is the part shared by the framing handlers: one connection's
// framer and the per-frame step that turns a frame into a message.
type framing struct {
	framer *Framer
	ctx    *Context
	emit   func(*packet.Packet) error // bound once: no allocation per read
	decode func(frame *packet.Packet) (any, error)
}

func newFraming(split Splitter, cfg FramerConfig, decode func(*packet.Packet) (any, error)) *framing {
	f := &framing{framer: NewFramer(split, cfg), decode: decode}
	f.emit = f.emitFrame
	return f
}

// read frames a borrowed packet; anything else passes through.
func (f *framing) read(c *Context, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireRead(msg)
	}
	f.ctx = c
	if err := f.framer.Feed(p, f.emit); err != nil {
		return err
	}
	if c.chain.Datagram {
		return f.framer.Close() // a datagram holds whole frames only
	}
	return nil
}

func (f *framing) emitFrame(frame *packet.Packet) error {
	m, err := f.decode(frame)
	if err != nil {
		return err
	}
	return f.ctx.FireRead(m)
}

// Close drops a partial frame when the connection ends.
func (f *framing) Close(*Context, error) { f.framer.Reset() }

// srmpHandler decodes SRMP frames into *Message and encodes *Message.
type srmpHandler struct{ *framing }

// SRMP returns the pipeline stage of NewLife's StandardCodec: inbound
// bytes become *Message values, outbound *Message values become frames.
func SRMP(cfg FramerConfig) func() Handler {
	decode := func(frame *packet.Packet) (any, error) { return DecodeSRMP(frame) }
	return func() Handler { return srmpHandler{newFraming(SRMPSplitter{}, cfg, decode)} }
}

func (h srmpHandler) Read(c *Context, msg any) error { return h.read(c, msg) }

func (h srmpHandler) Write(c *Context, msg any) error {
	m, ok := msg.(*Message)
	if !ok {
		return c.FireWrite(msg)
	}
	p, err := m.Encode()
	if err != nil {
		return err
	}
	return c.FireWrite(p)
}

// lengthFieldHandler strips and adds length-field headers.
type lengthFieldHandler struct {
	*framing
	lf LengthField
}

// LengthFieldFraming returns the pipeline stage of NewLife's
// LengthFieldCodec: inbound bytes become payload *packet.Packet values
// (header removed), outbound packets get the header.
func LengthFieldFraming(lf LengthField, cfg FramerConfig) func() Handler {
	decode := func(frame *packet.Packet) (any, error) {
		frame.Skip(lf.HeaderLen(frame.Bytes()))
		return frame, nil
	}
	return func() Handler { return lengthFieldHandler{newFraming(lf, cfg, decode), lf} }
}

func (h lengthFieldHandler) Read(c *Context, msg any) error { return h.read(c, msg) }

func (h lengthFieldHandler) Write(c *Context, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireWrite(msg)
	}
	f, err := h.lf.Encode(p)
	if err != nil {
		return err
	}
	return c.FireWrite(f)
}

// delimiterHandler frames lines.
type delimiterHandler struct {
	*framing
	d Delimiter
}

// Lines returns the pipeline stage of NewLife's SplitDataCodec: inbound
// frames end with (and include) the delimiter; outbound packets get it
// appended. MaxFrame defaults to DefaultMaxLine.
func Lines(d Delimiter, cfg FramerConfig) func() Handler {
	if cfg.MaxFrame == 0 {
		cfg.MaxFrame = DefaultMaxLine
	}
	decode := func(frame *packet.Packet) (any, error) { return frame, nil }
	return func() Handler { return delimiterHandler{newFraming(d, cfg, decode), d} }
}

func (h delimiterHandler) Read(c *Context, msg any) error { return h.read(c, msg) }

func (h delimiterHandler) Write(c *Context, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireWrite(msg)
	}
	return c.FireWrite(h.d.Encode(p))
}
