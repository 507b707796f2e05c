package fleet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// SRMP kinds (docs/PROTOCOL.md §1): the top two bits of a frame's first byte.
const (
	kindMask  = 0xC0
	kindReply = 0x80
	kindError = 0xC0
	flagCall  = 0x01 // the flag lifenet's client sends on a call (packet)
	maxFrame  = 1 << 30
	helloSize = 32 // --proto echo: the bytes of the hello and of each heartbeat
)

// errProtocol is a reply that breaks the SRMP framing.
var errProtocol = errors.New("a reply breaks the SRMP framing")

// echoHello is the 32 bytes an echo connection sends on connect and at
// each heartbeat.
var echoHello = []byte("lifenet fleet hello 0123456789ab")

// srmpCall returns an RPC request frame (kind request, flag 1, sequence
// 0: the sender patches byte 1 before each send) calling action with data
// as its argument, or with no argument when data is nil.
func srmpCall(action string, data []byte) []byte {
	body := make([]byte, 0, 1+len(action)+4+len(data))
	body = append(body, byte(len(action))) // ValidAction: 1–127 bytes, a one-byte varint
	body = append(body, action...)
	if data != nil {
		body = binary.LittleEndian.AppendUint32(body, uint32(len(data)))
		body = append(body, data...)
	}
	var f []byte
	if n := len(body); n < 0xFFFF {
		f = []byte{flagCall, 0, byte(n), byte(n >> 8)}
	} else { // the long header iff the payload is at least 65,535 bytes
		f = binary.LittleEndian.AppendUint32([]byte{flagCall, 0, 0xFF, 0xFF}, uint32(n))
	}
	return append(f, body...)
}

// filler returns n printable ASCII bytes: a burst's payload, valid as a
// string (Bench/EchoString) and as bytes (Bench/EchoPacket).
func filler(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// ValidAction reports whether action can be called: 1 to 127 printable
// ASCII bytes (PROTOCOL.md §5.1).
func ValidAction(action string) bool {
	if len(action) == 0 || len(action) > 127 {
		return false
	}
	for i := range len(action) {
		if action[i] <= ' ' || action[i] >= 127 {
			return false
		}
	}
	return true
}

// feedSRMP parses the reply bytes p, which may hold parts of frames, and
// calls done for each whole frame with its kind byte, sequence number and
// payload (nil when the payload did not arrive in this p: its bytes are
// skipped, not kept). It returns errProtocol for a frame that breaks the
// format.
func (c *conn) feedSRMP(p []byte, done func(kind, seq byte, payload []byte)) error {
	for len(p) > 0 {
		if c.flags&fBody == 0 { // the header
			need := uint8(4)
			if c.hdrN >= 4 && c.hdr[2] == 0xFF && c.hdr[3] == 0xFF {
				need = 8
			}
			k := copy(c.hdr[c.hdrN:need], p)
			c.hdrN += uint8(k)
			p = p[k:]
			if c.hdrN < need || (need == 4 && c.hdr[2] == 0xFF && c.hdr[3] == 0xFF) {
				continue
			}
			n := int64(binary.LittleEndian.Uint16(c.hdr[2:4]))
			if need == 8 {
				n = int64(int32(binary.LittleEndian.Uint32(c.hdr[4:8])))
			}
			if n < 0 || n > maxFrame {
				return errProtocol
			}
			c.remain = uint32(n)
			c.flags |= fBody
			if len(p) >= int(n) { // the whole payload is here
				c.flags &^= fBody
				c.hdrN, c.remain = 0, 0
				done(c.hdr[0], c.hdr[1], p[:n])
				p = p[n:]
			}
			continue
		}
		k := min(int(c.remain), len(p))
		c.remain -= uint32(k)
		p = p[k:]
		if c.remain == 0 {
			c.flags &^= fBody
			c.hdrN = 0
			done(c.hdr[0], c.hdr[1], nil)
		}
	}
	return nil
}

// feedEcho counts the echoed bytes p against the ones awaited and reports
// whether they are all back, and how many bytes came that nothing awaited.
func (c *conn) feedEcho(p []byte) (complete bool, extra int) {
	if c.flags&fPending == 0 {
		return false, len(p)
	}
	k := min(int(c.remain), len(p))
	c.remain -= uint32(k)
	return c.remain == 0, len(p) - k
}

// errorText is an error reply's payload as text, "error 404: …" (PROTOCOL.md
// §5.1: name, int32 code, then the message as a data block), or a
// placeholder when the payload did not arrive whole.
func errorText(payload []byte) string {
	if len(payload) < 1 {
		return "an error reply (its text not read)"
	}
	n := int(payload[0])
	if n >= 0x80 || len(payload) < 1+n+4 {
		return "an error reply that does not parse"
	}
	name := string(payload[1 : 1+n])
	rest := payload[1+n:]
	code := int32(binary.LittleEndian.Uint32(rest))
	msg := ""
	if rest = rest[4:]; len(rest) >= 4 {
		l := int(binary.LittleEndian.Uint32(rest))
		if l >= 0 && l <= len(rest)-4 {
			msg = string(rest[4 : 4+l])
		}
	}
	msg = strings.ToValidUTF8(msg, "?")
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return fmt.Sprintf("%s: error %d: %s", name, code, msg)
}
