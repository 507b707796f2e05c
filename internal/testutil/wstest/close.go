package wstest

import (
	"encoding/binary"
	"unicode/utf8"
)

// Close status codes (RFC 6455 §7.4.1) used by lifenet.
const (
	CloseNormal        uint16 = 1000 // normal closure
	CloseProtocolError uint16 = 1002 // the peer violated the protocol
	CloseNoStatus      uint16 = 1005 // no status code in the close frame; never sent
	CloseTooBig        uint16 = 1009 // a message was too big to process
)

// maxCloseReason is the longest reason that fits a close frame's payload
// next to the two-byte status code.
const maxCloseReason = MaxControlPayload - 2

// AppendClose appends a close frame to dst and returns the extended slice.
// Its payload is code (big-endian) followed by reason; reason is cut to at
// most 123 bytes, at a UTF-8 boundary, so the frame is a valid control frame.
// code 0 appends a close frame with an empty payload and ignores reason.
// mask nil means unmasked (server side); otherwise the payload is masked
// with *mask. AppendClose allocates only when dst lacks capacity.
func AppendClose(dst []byte, code uint16, reason string, mask *[4]byte) []byte {
	if code == 0 {
		return AppendHeader(dst, Close, true, 0, mask)
	}
	if len(reason) > maxCloseReason {
		cut := maxCloseReason
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut]
	}
	dst = AppendHeader(dst, Close, true, 2+len(reason), mask)
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, code)
	dst = append(dst, reason...)
	if mask != nil {
		Unmask(dst[start:], *mask, 0)
	}
	return dst
}

// CloseCode returns the status code and reason carried by a close frame's
// (unmasked) payload. An empty payload, or a malformed one-byte payload,
// yields CloseNoStatus and "". The reason is copied into a new string and is
// not checked for valid UTF-8; payload is not retained.
func CloseCode(payload []byte) (uint16, string) {
	if len(payload) < 2 {
		return CloseNoStatus, ""
	}
	return binary.BigEndian.Uint16(payload), string(payload[2:])
}

// ValidCloseCode reports whether code may be sent in a close frame (RFC 6455
// §7.4): the defined codes 1000–1003 and 1007–1014, and 3000–4999 (for
// libraries and applications). 1004–1006 and 1015 are reserved and never sent;
// anything else is invalid.
func ValidCloseCode(code uint16) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// ValidClosePayload reports whether a close frame's (unmasked) payload is
// well formed: empty, or a valid code followed by a UTF-8 reason. A one-byte
// payload is malformed.
func ValidClosePayload(payload []byte) bool {
	if len(payload) == 0 {
		return true
	}
	if len(payload) < 2 {
		return false
	}
	return ValidCloseCode(binary.BigEndian.Uint16(payload)) && utf8.Valid(payload[2:])
}
