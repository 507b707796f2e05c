package rpc

import (
	"encoding/binary"
	"fmt"
)

// Wire constants of NewLife.Remoting's body inside an SRMP payload
// (docs/PROTOCOL.md, "RPC body"):
//
//	request, one-way, reply: [varint nameLen][name] ([int32 LE dataLen][data])?
//	error reply:             [varint nameLen][name] [int32 LE code] ([int32 LE dataLen][data])?
//
// The data block is left out for a null value; the code is present only on
// error replies (the SRMP kind says which).
const (
	// FlagRPC is the SRMP flag of RPC messages (NewLife DataKinds.Packet).
	FlagRPC uint8 = 1
	// flagStream is SRMP.MD's Streaming flag bit (NewLife's code sets it
	// nowhere, reads no flag bits, and echoes a request's bits in its
	// replies). A lifenet client sets it on a Stream request, which a
	// lifenet server refuses for an action that does not stream
	// (ErrUnaryAction); a lifenet server sets it on the replies of a
	// stream, which a lifenet client's Call refuses (ErrStreamAction).
	flagStream uint8 = 0x20
	// MaxActionLen is the longest action name NewLife encodes correctly:
	// its encoder sizes the name prefix for one varint byte.
	MaxActionLen = 127
	// maxCallName bounds the action name of a request a server serves:
	// a longer one (which no registered action has; "*" may serve up to
	// this) is answered 400 without a lookup.
	maxCallName = 1024
	// maxReplyName bounds the name a reply repeats: the request's, cut
	// (every name a client can register or call fits, and its length
	// stays the one varint byte NewLife's decoder expects).
	maxReplyName = MaxActionLen
)

// body is a decoded RPC body; its slices alias the payload it came from.
type body struct {
	action []byte
	code   int32
	data   []byte // nil without a data block (a null value); a present block of zero length is not nil
}

// parseBody decodes an RPC body; withCode says whether an error code
// follows the name (error replies).
func parseBody(b []byte, withCode bool) (body, error) {
	var m body
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return m, fmt.Errorf("%w: bad action name length", ErrBody)
	}
	m.action = b[k : k+int(n)]
	b = b[k+int(n):]
	if withCode {
		if len(b) < 4 {
			return m, fmt.Errorf("%w: error reply without a code", ErrBody)
		}
		m.code = int32(binary.LittleEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) == 0 {
		return m, nil
	}
	if len(b) < 4 {
		return m, fmt.Errorf("%w: %d stray bytes after the action name", ErrBody, len(b))
	}
	dl := int32(binary.LittleEndian.Uint32(b))
	if dl < 0 || int(dl) > len(b)-4 {
		return m, fmt.Errorf("%w: data length %d, %d bytes left", ErrBody, dl, len(b)-4)
	}
	m.data = b[4 : 4+int(dl)]
	return m, nil
}

// appendName appends an action name with its varint length, cut to
// maxReplyName bytes: a server's reply repeats the request's name (it never
// grows with a hostile name; NewLife's client matches replies by
// sequence), and every name a client sends fits.
func appendName[S string | []byte](dst []byte, action S) []byte {
	action = action[:min(len(action), maxReplyName)]
	dst = binary.AppendUvarint(dst, uint64(len(action)))
	return append(dst, action...)
}

// nameLen is how many bytes an action name takes at the start of a body.
func nameLen(action string) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], uint64(len(action))) + len(action)
}

// appendDataLen appends a data length field.
func appendDataLen(dst []byte, n int) []byte {
	return binary.LittleEndian.AppendUint32(dst, uint32(n))
}

// appendError appends an error reply's code and message (after its action
// name).
func appendError(dst []byte, code int32, msg string) []byte {
	dst = appendDataLen(binary.LittleEndian.AppendUint32(dst, uint32(code)), len(msg))
	return append(dst, msg...)
}

// patchDataLen writes the length of the data that follows a length field
// reserved at off.
func patchDataLen(b []byte, off int) {
	binary.LittleEndian.PutUint32(b[off:], uint32(len(b)-off-4))
}

// validAction reports whether NewLife would serve the action: not empty,
// every byte ASCII below 127 (ApiServer drops anything else unanswered).
func validAction(a []byte) bool {
	if len(a) == 0 {
		return false
	}
	// Eight bytes at a time: a byte is below 127 when neither it nor it
	// plus one has its high bit set (below 0x80 the add carries nothing
	// into the next byte). Every call's name passes here, on both sides.
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(a) >= 8 {
		if x := binary.LittleEndian.Uint64(a); (x|(x+ones))&highs != 0 {
			return false
		}
		a = a[8:]
	}
	for _, c := range a {
		if c >= 127 {
			return false
		}
	}
	return true
}

// frameLen is the size of the SRMP frame that carries a payload of n bytes
// (NewLife's 8-byte header from 65535 bytes on).
func frameLen(n int) int {
	if n < 0xFFFF {
		return 4 + n
	}
	return 8 + n
}

// tooLarge returns an error wrapping ErrTooLarge when a payload of n bytes
// makes a frame over limit (what tells it, for the message), else nil.
func tooLarge(what string, n, limit int) error {
	if f := frameLen(n); f > limit {
		return fmt.Errorf("%w: %s of %d bytes, limit %d (Framer.MaxFrame)", ErrTooLarge, what, f, limit)
	}
	return nil
}
