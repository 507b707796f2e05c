package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/lifenet/lifenet/codec"
)

// defaultUDPReplyFactor is Config.UDPReplyFactor's default: QUIC's
// anti-amplification limit (RFC 9000 §8.1).
const defaultUDPReplyFactor = 3

// udpHeader is an SRMP header's size as a datagram carries it (a reply
// that fits a datagram has the short header).
const udpHeader = 4

// udpFits reports whether a reply body of n bytes may answer the UDP
// request m: at most Config.UDPReplyFactor times the request's size,
// headers counted (a negative factor: no bound).
func (s *Server) udpFits(m *codec.Message, n int) bool {
	f := s.cfg.UDPReplyFactor
	return f < 0 || udpHeader+n <= f*(udpHeader+m.Payload.Total())
}

// errUDPTooLarge is the text of the 413 a UDP peer gets for a reply past
// Config.UDPReplyFactor (cut to fit, as any error's text is).
var errUDPTooLarge = errors.New("use TCP: a reply past UDPReplyFactor")

// udpRefusal is what answers the UDP request m in place of body, a reply
// too large for its request: an error reply naming the action, with the
// error's code (413 for a result) and as much of its text as fits; nil
// when not even the name and code fit (the request is then dropped,
// counted).
func (s *Server) udpRefusal(ss *Session, m *codec.Message, body []byte, isErr bool) []byte {
	action, rest := body, []byte(nil)
	if n, k := binary.Uvarint(body); k > 0 && int(n) <= len(body)-k {
		action, rest = body[k:k+int(n)], body[k+int(n):]
	}
	code, msg := int32(CodeTooLarge), errUDPTooLarge.Error()
	if isErr && len(rest) >= 8 {
		code, msg = int32(binary.LittleEndian.Uint32(rest)), string(rest[8:])
	}
	short := appendError(appendName(nil, action), code, "")
	room := s.cfg.UDPReplyFactor*(udpHeader+m.Payload.Total()) - udpHeader - len(short)
	if room < 0 {
		s.drop(ss, action, fmt.Errorf("%w: a reply of %d bytes to a request of %d", errUDPTooLarge, len(body), m.Payload.Total()))
		return nil
	}
	return appendError(appendName(nil, action), code, cutUTF8(msg, room))
}

// cutUTF8 returns s cut to at most n bytes, on a UTF-8 boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
