package wstest

import (
	"encoding/binary"
	"strconv"
)

// Opcode is a frame's opcode (RFC 6455 §5.2), the low four bits of its first
// byte.
type Opcode byte

// The opcodes RFC 6455 defines; every other value is rejected with
// ErrBadOpcode.
const (
	Continuation Opcode = 0x0 // continues a fragmented message
	Text         Opcode = 0x1 // first frame of a UTF-8 text message
	Binary       Opcode = 0x2 // first frame of a binary message
	Close        Opcode = 0x8 // close frame (control)
	Ping         Opcode = 0x9 // ping (control)
	Pong         Opcode = 0xA // pong (control)
)

// IsControl reports whether op is a control opcode (close, ping or pong, or
// any other value with the high bit of the opcode set).
func (op Opcode) IsControl() bool { return op&0x8 != 0 }

// String returns the opcode's name, or "Opcode(n)" for an undefined one.
func (op Opcode) String() string {
	switch op {
	case Continuation:
		return "Continuation"
	case Text:
		return "Text"
	case Binary:
		return "Binary"
	case Close:
		return "Close"
	case Ping:
		return "Ping"
	case Pong:
		return "Pong"
	}
	return "Opcode(" + strconv.Itoa(int(op)) + ")"
}

// valid reports whether RFC 6455 defines op.
func (op Opcode) valid() bool {
	switch op {
	case Continuation, Text, Binary, Close, Ping, Pong:
		return true
	}
	return false
}

// MaxControlPayload is the largest payload a control frame may carry.
const MaxControlPayload = 125

// Header is a parsed frame header (RFC 6455 §5.2). It holds no references to
// the buffer it was parsed from.
type Header struct {
	Fin    bool    // final fragment of a message
	Op     Opcode  // frame opcode
	Masked bool    // the payload is masked with Mask
	Mask   [4]byte // masking key; zero when !Masked
	Length int64   // payload length in bytes, 0 … 1<<63-1
}

// Frame is a whole frame returned by Parse.
type Frame struct {
	Header
	// Payload is the frame's payload, already unmasked. It aliases the
	// buffer passed to Parse (capacity clipped to its length), so it is
	// valid only as long as the caller keeps that buffer unchanged.
	Payload []byte
}

// ParseHeader parses the frame header at the start of b.
//
// It returns the header and its length n in bytes. n == 0 with a nil error
// means b does not yet hold the whole header: call again with more bytes.
// Errors are reported as soon as the bytes that show them are present, even
// if the rest of the header is not: ErrReservedBits, ErrBadOpcode,
// ErrControlFrame, or ErrTooLarge for a 64-bit length with its top bit set.
// Extended lengths that are not in minimal form are accepted. A missing mask
// is not an error; the caller decides whether unmasked frames are allowed.
//
// ParseHeader does not modify or retain b and does not allocate.
func ParseHeader(b []byte) (h Header, n int, err error) {
	if len(b) < 2 {
		return Header{}, 0, nil
	}
	b0, b1 := b[0], b[1]
	if b0&0x70 != 0 {
		return Header{}, 0, ErrReservedBits
	}
	h.Fin = b0&0x80 != 0
	h.Op = Opcode(b0 & 0x0f)
	if !h.Op.valid() {
		return Header{}, 0, ErrBadOpcode
	}
	h.Masked = b1&0x80 != 0
	l := b1 & 0x7f
	if h.Op.IsControl() && (!h.Fin || l > MaxControlPayload) {
		return Header{}, 0, ErrControlFrame
	}
	n = 2
	switch l {
	case 126:
		if len(b) < 4 {
			return Header{}, 0, nil
		}
		h.Length = int64(binary.BigEndian.Uint16(b[2:4]))
		n = 4
	case 127:
		if len(b) < 10 {
			return Header{}, 0, nil
		}
		v := binary.BigEndian.Uint64(b[2:10])
		if v>>63 != 0 {
			return Header{}, 0, ErrTooLarge
		}
		h.Length = int64(v)
		n = 10
	default:
		h.Length = int64(l)
	}
	if h.Masked {
		if len(b) < n+4 {
			return Header{}, 0, nil
		}
		copy(h.Mask[:], b[n:n+4])
		n += 4
	}
	return h, n, nil
}

// Parse parses the whole frame at the start of b: header and payload.
//
// It returns the frame and the number of bytes n it occupies. n == 0 with a
// nil error means b does not yet hold the whole frame: call again with more
// bytes. Besides ParseHeader's errors it returns ErrTooLarge, as soon as the
// header is complete, when the payload is longer than max bytes.
//
// A masked payload is unmasked in place in b, so b[:n] must not be parsed
// again; f.Payload aliases b. Parse does not retain b and does not allocate.
func Parse(b []byte, max int) (f Frame, n int, err error) {
	h, hn, err := ParseHeader(b)
	if err != nil || hn == 0 {
		return Frame{}, 0, err
	}
	if max < 0 || h.Length > int64(max) {
		return Frame{}, 0, ErrTooLarge
	}
	if int64(len(b)-hn) < h.Length {
		return Frame{}, 0, nil
	}
	n = hn + int(h.Length)
	p := b[hn:n:n]
	if h.Masked {
		Unmask(p, h.Mask, 0)
	}
	return Frame{Header: h, Payload: p}, n, nil
}

// HeaderLen returns the length of the header AppendHeader writes for a
// payload of length bytes, with a masking key if masked.
func HeaderLen(length int, masked bool) int {
	n := 2
	switch {
	case length > 0xffff:
		n += 8
	case length > MaxControlPayload:
		n += 2
	}
	if masked {
		n += 4
	}
	return n
}

// AppendHeader appends a frame header to dst and returns the extended slice.
// The payload length uses the minimal encoding. mask nil means an unmasked
// frame (the server side); otherwise *mask is written as the masking key and
// the caller must mask the payload it appends (see Unmask, which also masks).
// AppendHeader does not check op, fin or length against the control-frame
// rules; it panics if length is negative. It allocates only when dst lacks
// capacity and does not retain mask.
func AppendHeader(dst []byte, op Opcode, fin bool, length int, mask *[4]byte) []byte {
	if length < 0 {
		panic("ws: negative payload length")
	}
	b0 := byte(op) & 0x0f
	if fin {
		b0 |= 0x80
	}
	var b1 byte
	if mask != nil {
		b1 = 0x80
	}
	switch {
	case length > 0xffff:
		dst = append(dst, b0, b1|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(length))
	case length > MaxControlPayload:
		dst = append(dst, b0, b1|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(length))
	default:
		dst = append(dst, b0, b1|byte(length))
	}
	if mask != nil {
		dst = append(dst, mask[:]...)
	}
	return dst
}

// AppendFrame appends a whole, final (FIN set) frame carrying payload to dst
// and returns the extended slice. With a non-nil mask the copy of payload in
// dst is masked with *mask; payload itself is never modified or retained.
// Like AppendHeader it does not enforce the control-frame rules.
func AppendFrame(dst []byte, op Opcode, payload []byte, mask *[4]byte) []byte {
	dst = AppendHeader(dst, op, true, len(payload), mask)
	start := len(dst)
	dst = append(dst, payload...)
	if mask != nil {
		Unmask(dst[start:], *mask, 0)
	}
	return dst
}
