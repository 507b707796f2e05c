package codec

import (
	"fmt"
	"sync"

	"github.com/lifenet/lifenet/packet"
)

// Message is an SRMP message.
//
// A message is either owned or borrowed. [NewMessage], [DecodeSRMP] and Keep
// return owned messages: the owner releases them (Release frees the
// payload too) or hands them to a call that takes ownership. The messages a
// connection hands to Options.Handler and to RequestAsync callbacks are
// borrowed: valid until that call returns, then reused; their Payload is a
// view of the receive buffer. A borrowed message needs no Release (it does
// nothing); to keep one, call Keep, or TakePayload for its payload only.
//
// A [Message] belongs to one goroutine at a time.
type Message struct {
	Kind    Kind
	Flag    uint8 // six bits (FlagString, FlagPacket, FlagBinary, FlagJSON or user bits)
	Seq     uint8
	Payload *packet.Packet // nil for an empty message

	borrowed bool
}

var messagePool = sync.Pool{New: func() any { return new(Message) }}

// NewMessage returns a pooled message that owns payload (which may be nil
// for an empty message).
func NewMessage(kind Kind, flag, seq uint8, payload *packet.Packet) *Message {
	m := messagePool.Get().(*Message)
	*m = Message{Kind: kind, Flag: flag & srmpFlagMask, Seq: seq, Payload: payload}
	return m
}

// Borrowed reports whether m is borrowed (see [Message]).
func (m *Message) Borrowed() bool { return m.borrowed }

// Release frees an owned message and its payload; on a borrowed message it
// does nothing.
func (m *Message) Release() {
	if m.borrowed {
		return
	}
	if m.Payload != nil {
		m.Payload.Release()
	}
	*m = Message{}
	messagePool.Put(m)
}

// TakePayload moves the payload out of m and returns it, owned by the
// caller (a borrowed payload is kept with packet.Keep: copied if small,
// shared if large); m's Payload is nil afterwards. It returns nil for an
// empty message.
func (m *Message) TakePayload() *packet.Packet {
	p := m.Payload
	m.Payload = nil
	if p == nil {
		return nil
	}
	return p.Keep()
}

// Keep returns an owned message with m's contents: m itself if m is owned,
// else a new message whose payload is kept with packet.Keep (m is left
// without a payload).
func (m *Message) Keep() *Message {
	if !m.borrowed {
		return m
	}
	return NewMessage(m.Kind, m.Flag, m.Seq, m.TakePayload())
}

// PayloadBytes returns the payload's bytes (nil for an empty message),
// flattening a chained payload into a new slice.
func (m *Message) PayloadBytes() []byte {
	switch p := m.Payload; {
	case p == nil:
		return nil
	case p.Next() == nil:
		return p.Bytes()
	default:
		return p.AppendTo(nil)
	}
}

// IsReply reports whether the message is a reply or an error reply.
func (m *Message) IsReply() bool { return m.Kind == KindReply || m.Kind == KindError }

// Encode turns an owned message into an SRMP frame, moving the payload
// into it and releasing the message.
func (m *Message) Encode() (*packet.Packet, error) {
	p := m.TakePayload()
	if p == nil {
		p = packet.Get(0)
	}
	kind, flag, seq := m.Kind, m.Flag, m.Seq
	m.Release()
	return EncodeSRMP(kind, flag, seq, p)
}

// DecodeSRMP turns one SRMP frame (as cut by a [Framer] with [SRMPSplitter])
// into an owned message, taking ownership of the frame (a borrowed frame is
// kept with packet.Keep): the header is skipped in place and the rest
// becomes the payload.
func DecodeSRMP(frame *packet.Packet) (*Message, error) {
	frame = frame.Keep()
	if frame.NumSegments() > 1 { // framers emit single segments; others are flattened
		flat := frame.Clone()
		frame.Release()
		frame = flat
	}
	h, err := checkSRMP(frame.Bytes())
	if err != nil {
		frame.Release()
		return nil, err
	}
	frame.Skip(h.size)
	return NewMessage(h.kind, h.flag, h.seq, frame), nil
}

// lend fills m, a connection's reused message, with a borrowed SRMP frame
// as cut by a [Framer] (exactly one frame): hdr is its header, payload
// the frame's view past it (lent; see srmpHeaderOf).
// It inlines (the header read here, not by parseSRMPHeader): it runs once
// per frame.
func (m *Message) lend(hdr []byte, payload *packet.Packet) {
	// Field by field, not a composite literal: see packet.Loan.Lend.
	m.Kind, m.Flag, m.Seq = Kind(hdr[0]>>srmpKindShift), hdr[0]&srmpFlagMask, hdr[1]
	m.Payload, m.borrowed = payload, true
}

// srmpHeaderOf returns the header of the SRMP frame at the start of b, a
// whole frame as a [Framer] cuts it, and its length (4 or 8). It inlines.
func srmpHeaderOf(b []byte) (hdr []byte, size int) {
	hdr = b[:srmpHeaderLen]
	if hdr[3]&hdr[2] == 0xFF { // the long header's marker, srmpExtMarker
		return hdr, srmpExtHeaderLen
	}
	return hdr, srmpHeaderLen
}

// checkSRMP parses the header of b, which must be exactly one frame.
func checkSRMP(b []byte) (srmpHeader, error) {
	n, err := SRMPSplitter{}.FrameLen(b, max(len(b), srmpExtHeaderLen))
	if err == nil && n != len(b) {
		err = fmt.Errorf("%w: SRMP frame of %d bytes declares %d", ErrCorruptFrame, len(b), n)
	}
	if err != nil {
		return srmpHeader{}, err
	}
	return parseSRMPHeader(b), nil
}
