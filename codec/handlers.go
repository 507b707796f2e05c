package codec

import (
	"context"

	"github.com/lifenet/lifenet/packet"
)

// framing is the part shared by the framing handlers: one connection's
// framer, how a frame becomes the message passed on, and the context of the
// read in progress.
type framing struct {
	framer *Framer
	ctx    *HandlerContext
	decode frameDecode
	header int // length-field with a fixed-size field: the header to skip
	lf     *LengthField
	in     Message // SRMP: the borrowed message lent to the next stage
	tail   *Conn   // set when this stage is the pipeline's tail: messages go straight to its sink
}

// How a framing stage turns a frame into the message it lends on.
type frameDecode uint8

const (
	decodeSRMP   frameDecode = iota // a Message
	decodeHeader                    // the payload past a fixed header
	decodeVarint                    // the payload past a varint length field
	decodeWhole                     // the frame as it is (delimited lines)
)

func newFraming(split Splitter, cfg FramerConfig, decode frameDecode) *framing {
	return &framing{framer: NewFramer(split, cfg), decode: decode}
}

// receiveFrame lends one borrowed frame to the next stage.
func (f *framing) receiveFrame(frame *packet.Packet) error {
	switch f.decode {
	case decodeSRMP:
		f.in.lend(frame)
		var err error
		if f.tail != nil {
			err = f.tail.sinkMessage(&f.in)
		} else {
			err = f.ctx.FireRead(&f.in)
		}
		f.in = Message{}
		return err
	case decodeHeader:
		frame.Skip(f.header)
	case decodeVarint:
		frame.Skip(f.lf.HeaderLen(frame.Bytes()))
	}
	return f.next(frame)
}

// next passes a message on: straight to the connection when this stage is
// the pipeline's tail (the common one-stage pipeline), else to the next
// stage.
func (f *framing) next(msg any) error {
	if f.tail != nil {
		return f.tail.sink(msg)
	}
	return f.ctx.FireRead(msg)
}

// Read frames a borrowed packet; anything else passes through.
func (f *framing) Read(c *HandlerContext, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireRead(msg)
	}
	f.ctx = c
	if err := f.framer.feed(p, f); err != nil {
		return err
	}
	if c.chain.Datagram {
		return f.framer.Close() // a datagram holds whole frames only
	}
	return nil
}

// Closed drops a partial frame when the connection ends.
func (f *framing) Closed(*HandlerContext, error) { f.framer.Reset() }

// small reports whether payload goes out by copy (see copyBelow).
func small(payload *packet.Packet) bool {
	return payload == nil || payload.Next() == nil && payload.Len() < copyBelow
}

// srmpHandler decodes SRMP frames into borrowed *[Message] values and encodes
// *Message values.
type srmpHandler struct{ *framing }

// SRMPFraming returns the pipeline stage of NewLife's StandardCodec: inbound
// bytes become borrowed *[Message] values (see Message), outbound *Message
// values become frames. Requests on its connections match replies by
// sequence number.
func SRMPFraming(cfg FramerConfig) func() Handler {
	return func() Handler { return srmpHandler{newFraming(SRMPSplitter{}, cfg, decodeSRMP)} }
}

func (srmpHandler) match() MatchMode { return MatchSRMP }

func (h srmpHandler) Write(c *HandlerContext, msg any) error {
	m, ok := msg.(*Message)
	if !ok {
		return c.FireWrite(msg)
	}
	kind, flag, seq := m.Kind, m.Flag, m.Seq
	payload := m.Payload
	m.Payload = nil
	m.Release()
	return sendSRMP(context.Background(), c, nil, kind, flag, seq, nil, payload)
}

// sendSRMP is the one way an SRMP message of this package's making (a
// reply, an error reply, a request) leaves: towards the head from c, the
// SRMP stage's context; when c is nil (conn's SRMP stage is not the tail
// of its pipeline) it is written as a [Message] through conn's tail stage.
// Its payload is p (taken: nil, borrowed or owned) or, when p is nil, a
// copy of body. A small payload is copied with its header as one message
// of bytes (from the head over a session, straight into its send queue: no
// packet); a large or chained one is framed in place. ctx bounds a wait
// for room when c is the head over a session (headSession); behind other
// stages their wait is not bounded by it.
func sendSRMP(ctx context.Context, c *HandlerContext, conn *Conn, kind Kind, flag, seq uint8, body []byte, p *packet.Packet) error {
	if c == nil {
		if p == nil {
			p = copyPacket(body)
		}
		return conn.chain.Write(NewMessage(kind, flag, seq, p))
	}
	if p != nil && !small(p) {
		return sendSRMPFrame(ctx, c, kind, flag, seq, p)
	}
	if p != nil {
		body = p.Bytes()
	}
	if len(body) >= copyBelow {
		return sendSRMPFrame(ctx, c, kind, flag, seq, copyPacket(body))
	}
	var hdr [srmpHeaderLen]byte
	putSRMPHeader(hdr[:], kind, flag, seq, len(body))
	var err error
	if sess := c.headSession(); sess != nil {
		err = sess.SendBytesContext(ctx, hdr[:], body)
	} else {
		err = c.WriteBytes(hdr[:], body)
	}
	if p != nil && !p.Borrowed() { // a borrowed view (a handler's reply with the request's payload) holds nothing
		p.Release()
	}
	return err
}

// sendSRMPFrame frames p in place (taking it) and passes the frame on.
func sendSRMPFrame(ctx context.Context, c *HandlerContext, kind Kind, flag, seq uint8, p *packet.Packet) error {
	frame, err := EncodeSRMP(kind, flag, seq, p.Keep())
	if err != nil {
		return err
	}
	if sess := c.headSession(); sess != nil {
		return sess.SendContext(ctx, frame)
	}
	return c.FireWrite(frame)
}

// copyPacket returns an owned copy of b with room for an SRMP header in
// front.
func copyPacket(b []byte) *packet.Packet {
	p := packet.GetWithHeadroom(srmpExtHeaderLen, len(b))
	copy(p.Bytes(), b)
	return p
}

// lengthFieldHandler strips and adds length-field headers.
type lengthFieldHandler struct {
	*framing
	lf LengthField
}

// LengthFieldFraming returns the pipeline stage of NewLife's
// LengthFieldCodec: inbound bytes become borrowed payload *packet.Packet
// values (header removed), outbound packets get the header. Requests on its
// connections match replies in order (FIFO). It panics if lf does not
// Validate.
func LengthFieldFraming(lf LengthField, cfg FramerConfig) func() Handler {
	if err := lf.Validate(); err != nil {
		panic(err)
	}
	return func() Handler {
		f := newFraming(lf, cfg, decodeHeader)
		f.header = lf.Offset + lf.width() // a fixed header: no second parse
		if lf.size() == VarintLength {
			f.decode, f.lf = decodeVarint, &lf
		}
		return &lengthFieldHandler{f, lf}
	}
}

func (*lengthFieldHandler) match() MatchMode { return MatchFIFO }

// lfHeaderRoom is the header size the copy path writes from the stack.
const lfHeaderRoom = 16

func (h *lengthFieldHandler) Write(c *HandlerContext, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireWrite(msg)
	}
	if small(p) && h.lf.Offset+h.lf.width() <= lfHeaderRoom { // one copy, header and payload, into the send buffer
		var hdr [lfHeaderRoom]byte
		if p == nil {
			k, _ := h.lf.header(hdr[:], 0)
			return c.WriteBytes(hdr[:k])
		}
		k, err := h.lf.header(hdr[:], p.Len())
		if err == nil { // else a payload the field cannot describe
			err = c.WriteBytes(hdr[:k], p.Bytes())
		}
		p.Release() // nothing for a borrowed view
		return err
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

// DelimiterFraming returns the pipeline stage of NewLife's SplitDataCodec: inbound
// frames are borrowed packets that end with (and include) the delimiter;
// outbound packets get it appended. MaxFrame defaults to DefaultMaxLine.
// Requests on its connections match replies in order (FIFO).
func DelimiterFraming(d Delimiter, cfg FramerConfig) func() Handler {
	if cfg.MaxFrame == 0 {
		cfg.MaxFrame = DefaultMaxLine
	}
	return func() Handler { return &delimiterHandler{newFraming(d, cfg, decodeWhole), d} }
}

func (*delimiterHandler) match() MatchMode { return MatchFIFO }

func (h *delimiterHandler) Write(c *HandlerContext, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireWrite(msg)
	}
	if small(p) {
		var b []byte
		if p != nil {
			b = p.Bytes()
			defer p.Release()
		}
		return c.WriteBytes(b, h.d.delim())
	}
	return c.FireWrite(h.d.Encode(p.Keep()))
}

var _ CloseHandler = (*framing)(nil) // a framing stage drops its partial frame when the connection ends

// framingOf returns the framing of this package's framing stages, or nil.
func framingOf(h Handler) *framing {
	switch h := h.(type) {
	case srmpHandler:
		return h.framing
	case *lengthFieldHandler:
		return h.framing
	case *delimiterHandler:
		return h.framing
	}
	return nil
}
