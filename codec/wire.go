package codec

import "time"

// Wire constants of the formats in this package, all in one place. The
// protocol is written down in docs/PROTOCOL.md.

// SRMP ("standard" codec, NewLife DefaultMessage): 1 byte kind+flag,
// 1 byte sequence, uint16 LE payload length; a length of 0xFFFF means an
// int32 LE length follows, used iff the payload is at least 65 535 bytes.
const (
	srmpHeaderLen    = 4
	srmpExtHeaderLen = 8
	srmpExtMarker    = 0xFFFF
	srmpKindShift    = 6
	srmpFlagMask     = 0x3F
	srmpMaxPayload   = 1<<31 - 1 // the int32 length field
)

// Kind is the SRMP message kind, the top two bits of the first byte.
type Kind uint8

// SRMP kinds.
const (
	KindRequest Kind = 0 // 00: a request that expects a reply
	KindOneWay  Kind = 1 // 01: a request without a reply
	KindReply   Kind = 2 // 10: a reply
	KindError   Kind = 3 // 11: an error reply
)

// SRMP flags (NewLife DataKinds), the low six bits of the first byte;
// advisory only.
const (
	FlagString uint8 = 0
	FlagPacket uint8 = 1
	FlagBinary uint8 = 2
	FlagJSON   uint8 = 3
)

// Length-field codec: the length field's size in bytes; negative sizes are
// big-endian; [VarintLength] selects a 7-bit varint (LEB128, at most 5 bytes;
// NewLife's Size 0).
const (
	VarintLength = -1
	maxVarintLen = 5
)

// Replies and other small messages are copied straight into the
// connection's send buffer, header and payload together; larger payloads
// get their header in front and go out without a copy.
const copyBelow = 512

// Delimiter codec default: CR LF.
var defaultDelimiter = []byte{'\r', '\n'}

// Defaults of the framers.
const (
	// DefaultMaxFrame is the largest frame accepted (NewLife MessageCodec
	// MaxCache, 10 MB).
	DefaultMaxFrame = 10 << 20
	// DefaultExpire is how long a partial frame may wait for its next
	// bytes (NewLife PacketCodec Expire, 5 s).
	DefaultExpire = 5 * time.Second
	// DefaultMaxLine is the delimiter codec's default largest frame
	// (NewLife SplitDataCodec MaxCacheDataLength, 1024).
	DefaultMaxLine = 1024
)
