package wstest

import "errors"

// Errors returned by ParseHeader and Parse. They are returned unwrapped (so
// parsing never allocates), but callers should compare with errors.Is.
var (
	// ErrReservedBits reports a frame with RSV1, RSV2 or RSV3 set; no
	// extension is ever negotiated, so these bits must be zero.
	ErrReservedBits = errors.New("ws: reserved bits set")

	// ErrBadOpcode reports a frame whose opcode is not one RFC 6455
	// defines (0, 1, 2, 8, 9 or 10).
	ErrBadOpcode = errors.New("ws: unknown opcode")

	// ErrControlFrame reports a control frame (close, ping or pong) that is
	// fragmented or whose payload is longer than 125 bytes.
	ErrControlFrame = errors.New("ws: control frame fragmented or longer than 125 bytes")

	// ErrTooLarge reports a 64-bit payload length with its top bit set
	// (ParseHeader) or a payload longer than the caller's limit (Parse).
	ErrTooLarge = errors.New("ws: frame too large")
)

// ErrHandshake is wrapped by every error CheckResponse and NewKey return;
// the wrapping error says what was wrong.
var ErrHandshake = errors.New("ws: handshake failed")
