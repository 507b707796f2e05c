package codec

import (
	"fmt"
	"sync"

	"github.com/lifenet/lifenet/packet"
)

// Message is an SRMP message. It owns its Payload; Release frees both the
// payload and the message. A Message belongs to one goroutine at a time.
type Message struct {
	Kind    Kind
	Flag    uint8 // six bits (FlagString, FlagPacket, FlagBinary, FlagJSON or user bits)
	Seq     uint8
	Payload *packet.Packet
}

var messagePool = sync.Pool{New: func() any { return new(Message) }}

// NewMessage returns a pooled message that owns payload (which may be nil
// for an empty message).
func NewMessage(kind Kind, flag, seq uint8, payload *packet.Packet) *Message {
	m := messagePool.Get().(*Message)
	*m = Message{Kind: kind, Flag: flag & srmpFlagMask, Seq: seq, Payload: payload}
	return m
}

// Release frees the payload and returns the message to its pool.
func (m *Message) Release() {
	if m.Payload != nil {
		m.Payload.Release()
	}
	*m = Message{}
	messagePool.Put(m)
}

// IsReply reports whether the message is a reply or an error reply.
func (m *Message) IsReply() bool { return m.Kind == KindReply || m.Kind == KindError }

// Encode turns the message into an SRMP frame, moving the payload into it
// and releasing the message.
func (m *Message) Encode() (*packet.Packet, error) {
	p := m.Payload
	if p == nil {
		p = packet.Get(0)
	}
	kind, flag, seq := m.Kind, m.Flag, m.Seq
	m.Payload = nil
	m.Release()
	return EncodeSRMP(kind, flag, seq, p)
}

// DecodeSRMP turns one SRMP frame (as cut by a Framer with SRMPSplitter)
// into a message, taking ownership of the frame: the header is skipped in
// place and the rest becomes the payload, without a copy.
func DecodeSRMP(frame *packet.Packet) (*Message, error) {
	if frame.Segments() > 1 { // framers emit single segments; others are flattened
		flat := frame.Clone()
		frame.Release()
		frame = flat
	}
	n, err := SRMPSplitter{}.FrameLen(frame.Bytes(), max(frame.Len(), srmpExtHeaderLen))
	if err != nil || n != frame.Len() {
		frame.Release()
		if err == nil {
			err = fmt.Errorf("%w: SRMP frame of %d bytes declares %d", ErrCorruptFrame, frame.Len(), n)
		}
		return nil, err
	}
	h := parseSRMPHeader(frame.Bytes())
	frame.Skip(h.size)
	return NewMessage(h.kind, h.flag, h.seq, frame), nil
}
