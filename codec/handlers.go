package codec

import (
	"context"
	"sync/atomic"

	"github.com/lifenet/lifenet/packet"
)

// framing is the part shared by the framing handlers: one connection's
// framer (its settings, conf, shared by the stage's connections). What a
// read needs only while it runs, the loan of the frame and the message
// made of it, is a [readScratch] taken for the read.
type framing struct {
	framer Framer
}

// How a framing stage turns a frame into the message it lends on.
type frameDecode uint8

const (
	decodeSRMP   frameDecode = iota // a Message
	decodeHeader                    // the payload past a fixed header
	decodeVarint                    // the payload past a varint length field
	decodeWhole                     // the frame as it is (delimited lines)
)

// stageKind names the framing stages of this package.
type stageKind uint8

const (
	stageSRMP stageKind = iota
	stageLengthField
	stageDelimiter
)

// handler returns f as the Handler of its stage's kind (a one-pointer
// value: no allocation).
func (f *framing) handler() Handler {
	switch f.framer.conf.kind {
	case stageLengthField:
		return lengthFieldHandler{f}
	case stageDelimiter:
		return delimiterHandler{f}
	}
	return srmpHandler{f}
}

// readScratch is what a framing stage's read uses while it runs: the
// loan of the frame being lent and, for SRMP, the message made of it.
// Reads take one from spareScratch and give it back, so that a
// connection between reads (an idle one, parked) holds none.
type readScratch struct {
	loan packet.Loan
	in   Message                    // SRMP: the borrowed message lent to the next stage
	f    *framing                   // the stage reading
	ctx  *HandlerContext            // its context
	fn   func(*packet.Packet) error // Framer.Feed's emit (funcScratch); nil for a stage's read

	replies replyQueue // SRMP: replies cut and not yet delivered (see replyBatch)
}

// spareScratch holds read scratch between reads, in slots a read picks by
// its connection's session ID: reads of different connections at the
// same time seldom meet on a slot, and a read takes and gives back with
// one atomic swap each (sync.Pool's per-P caches cost a read several
// times that). A read that finds its slot empty makes one; one given back
// replaces the slot's spare, if any, which is dropped. At most a slot's
// worth is held, whatever the number of connections.
var spareScratch [64]struct {
	p atomic.Pointer[readScratch]
	_ [56]byte // a slot a cache line: reads on different cores do not share one
}

// takeScratch returns the spare scratch of slot id, or a new one.
func takeScratch(id uint64) *readScratch {
	if s := spareScratch[id%uint64(len(spareScratch))].p.Swap(nil); s != nil {
		return s
	}
	return new(readScratch)
}

// giveScratch puts s, which the read of slot id is done with, back.
func giveScratch(id uint64, s *readScratch) {
	s.f, s.ctx, s.fn = nil, nil, nil
	spareScratch[id%uint64(len(spareScratch))].p.Store(s)
}

// receiveFrame lends one frame, the n bytes of src from off, to the next
// stage: an SRMP message, or the payload past its header.
func (s *readScratch) receiveFrame(src *packet.Packet, off, n int) error {
	fc, c := s.f.framer.conf, s.ctx
	var err error
	switch fc.decode {
	case decodeSRMP:
		hdr, size := srmpHeaderOf(src.Bytes()[off:])
		if Kind(hdr[0]>>srmpKindShift) == KindReply && s.queues(src) {
			return s.queueReply(src, off, n, hdr[1])
		}
		if s.replies.n > 0 { // what came before this frame first
			if err := s.deliverQueued(); err != nil {
				return err
			}
		}
		s.in.lend(hdr, s.loan.Lend(src, off+size, n-size))
		if c.tail {
			err = c.chain.conn.sinkMessage(&s.in)
		} else {
			err = c.FireRead(&s.in)
		}
		s.endLend()
		return err
	case decodeHeader:
		off, n = off+fc.header, n-fc.header
	case decodeVarint:
		h := fc.lf.HeaderLen(src.Bytes()[off : off+n])
		off, n = off+h, n-h
	}
	frame := s.loan.Lend(src, off, n)
	if c.tail {
		err = c.chain.conn.sinkPacket(frame)
	} else {
		err = c.FireRead(frame)
	}
	s.loan.End()
	return err
}

// Read frames a borrowed packet; anything else passes through.
func (f *framing) Read(c *HandlerContext, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireRead(msg)
	}
	var id uint64
	if sess := c.chain.sess; sess != nil {
		id = sess.ID()
	}
	s := takeScratch(id)
	s.f, s.ctx = f, c
	err := f.framer.feed(p, s, c.chain.conn)
	if s.replies.n > 0 { // the replies cut before the read's end, or before its error
		if derr := s.deliverQueued(); err == nil {
			err = derr
		}
	}
	giveScratch(id, s)
	if err != nil {
		return err
	}
	if c.chain.Datagram {
		return f.framer.close(c.chain.conn) // a datagram holds whole frames only
	}
	return nil
}

// Closed drops a partial frame when the connection ends.
func (f *framing) Closed(c *HandlerContext, _ error) { f.framer.reset(c.chain.conn) }

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
	fc := newFramerConf(SRMPSplitter{}, cfg) // kind stageSRMP, decode decodeSRMP
	return func() Handler { return srmpHandler{&framing{framer: Framer{conf: fc}}} }
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
// SRMP stage's context (nil: conn's, when its SRMP stage is the tail of
// its pipeline); otherwise it is written as a [Message] through conn's
// tail stage.
// Its payload is p (taken: nil, borrowed or owned) or, when p is nil, a
// copy of body. A small payload is copied with its header as one message
// of bytes (from the head over a session, straight into its send queue: no
// packet); a large or chained one is framed in place. ctx bounds a wait
// for room when c is the head over a session (headSession); behind other
// stages their wait is not bounded by it.
func sendSRMP(ctx context.Context, c *HandlerContext, conn *Conn, kind Kind, flag, seq uint8, body []byte, p *packet.Packet) error {
	if c == nil {
		conn.flushBatch() // after a running batch's staged requests
		if c = conn.srmpCtx(); c == nil {
			if p == nil {
				p = copyPacket(body)
			}
			return conn.chain.Write(NewMessage(kind, flag, seq, p))
		}
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
type lengthFieldHandler struct{ *framing }

// LengthFieldFraming returns the pipeline stage of NewLife's
// LengthFieldCodec: inbound bytes become borrowed payload *packet.Packet
// values (header removed), outbound packets get the header. Requests on its
// connections match replies in order (FIFO). It panics if lf does not
// Validate.
func LengthFieldFraming(lf LengthField, cfg FramerConfig) func() Handler {
	if err := lf.Validate(); err != nil {
		panic(err)
	}
	fc := newFramerConf(lf, cfg)
	fc.kind, fc.decode, fc.lf = stageLengthField, decodeHeader, lf
	fc.header = lf.Offset + lf.width() // a fixed header: no second parse
	if lf.size() == VarintLength {
		fc.decode = decodeVarint
	}
	return func() Handler { return lengthFieldHandler{&framing{framer: Framer{conf: fc}}} }
}

func (lengthFieldHandler) match() MatchMode { return MatchFIFO }

// lfHeaderRoom is the header size the copy path writes from the stack.
const lfHeaderRoom = 16

func (h lengthFieldHandler) Write(c *HandlerContext, msg any) error {
	p, ok := msg.(*packet.Packet)
	if !ok {
		return c.FireWrite(msg)
	}
	fc := h.framer.conf
	lf := &fc.lf
	if small(p) && fc.header <= lfHeaderRoom { // one copy, header and payload, into the send buffer
		var body []byte
		if p != nil {
			body = p.Bytes()
		}
		var hdr [lfHeaderRoom]byte
		k, err := 2, error(nil)
		if fc.short == 2 { // the default field (two bytes, little-endian, no offset), inline: a small payload fits it
			hdr[0], hdr[1] = byte(len(body)), byte(len(body)>>8)
		} else {
			k, err = lf.header(hdr[:], len(body))
		}
		switch sess := c.headSession(); {
		case err != nil: // a payload the field cannot describe
		case sess != nil:
			err = sess.SendBytes(hdr[:k], body) // as WriteBytes, without its call
		default:
			err = c.WriteBytes(hdr[:k], body)
		}
		if p != nil && !p.Borrowed() { // a borrowed view (the request's payload sent back) holds nothing
			p.Release()
		}
		return err
	}
	f, err := lf.Encode(p)
	if err != nil {
		return err
	}
	return c.FireWrite(f)
}

// delimiterHandler frames lines.
type delimiterHandler struct{ *framing }

// DelimiterFraming returns the pipeline stage of NewLife's SplitDataCodec: inbound
// frames are borrowed packets that end with (and include) the delimiter;
// outbound packets get it appended. MaxFrame defaults to DefaultMaxLine.
// Requests on its connections match replies in order (FIFO).
func DelimiterFraming(d Delimiter, cfg FramerConfig) func() Handler {
	if cfg.MaxFrame == 0 {
		cfg.MaxFrame = DefaultMaxLine
	}
	fc := newFramerConf(d, cfg)
	fc.kind, fc.decode, fc.delim = stageDelimiter, decodeWhole, d
	return func() Handler { return delimiterHandler{&framing{framer: Framer{conf: fc}}} }
}

func (delimiterHandler) match() MatchMode { return MatchFIFO }

func (h delimiterHandler) Write(c *HandlerContext, msg any) error {
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
		return c.WriteBytes(b, h.framer.conf.delim.delim())
	}
	return c.FireWrite(h.framer.conf.delim.Encode(p.Keep()))
}

var _ CloseHandler = (*framing)(nil) // a framing stage drops its partial frame when the connection ends

// framingOf returns the framing of this package's framing stages, or nil.
func framingOf(h Handler) *framing {
	switch h := h.(type) {
	case srmpHandler:
		return h.framing
	case lengthFieldHandler:
		return h.framing
	case delimiterHandler:
		return h.framing
	}
	return nil
}
