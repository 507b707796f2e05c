package wstest

import "encoding/binary"

// Unmask applies the masking key mask to payload in place (RFC 6455 §5.3).
// Masking and unmasking are the same operation, so Unmask also masks.
//
// offset is the position of payload[0] within the frame's payload, which
// lets a payload that arrives in pieces be unmasked piece by piece: unmasking
// p[:k] at offset o and p[k:] at offset o+k equals unmasking p at offset o.
// offset must not be negative. Unmask does not retain payload and does not
// allocate.
func Unmask(payload []byte, mask [4]byte, offset int) {
	// Rotate the key so that key[0] applies to payload[0].
	s := offset & 3
	var key [4]byte
	for i := range key {
		key[i] = mask[(s+i)&3]
	}
	i := 0
	if len(payload) >= 8 {
		k32 := uint64(binary.LittleEndian.Uint32(key[:]))
		k64 := k32 | k32<<32
		for ; len(payload)-i >= 32; i += 32 {
			p := payload[i : i+32 : i+32]
			binary.LittleEndian.PutUint64(p[0:], binary.LittleEndian.Uint64(p[0:])^k64)
			binary.LittleEndian.PutUint64(p[8:], binary.LittleEndian.Uint64(p[8:])^k64)
			binary.LittleEndian.PutUint64(p[16:], binary.LittleEndian.Uint64(p[16:])^k64)
			binary.LittleEndian.PutUint64(p[24:], binary.LittleEndian.Uint64(p[24:])^k64)
		}
		for ; len(payload)-i >= 8; i += 8 {
			p := payload[i : i+8 : i+8]
			binary.LittleEndian.PutUint64(p, binary.LittleEndian.Uint64(p)^k64)
		}
	}
	// i is a multiple of 8, so the key stays aligned.
	for ; i < len(payload); i++ {
		payload[i] ^= key[i&3]
	}
}
