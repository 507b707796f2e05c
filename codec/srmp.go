package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/lifenet/lifenet/packet"
)

// SRMPSplitter finds SRMP frames (NewLife DefaultMessage.GetLength).
type SRMPSplitter struct{}

// FrameLen implements Splitter.
func (SRMPSplitter) FrameLen(b []byte, maxFrame int) (int, error) {
	if len(b) < srmpHeaderLen {
		return -srmpHeaderLen, nil
	}
	n := int64(binary.LittleEndian.Uint16(b[2:]))
	hdr := int64(srmpHeaderLen)
	if n == srmpExtMarker {
		if len(b) < srmpExtHeaderLen {
			return -srmpExtHeaderLen, nil
		}
		n = int64(int32(binary.LittleEndian.Uint32(b[4:])))
		hdr = srmpExtHeaderLen
		if n < 0 {
			return 0, fmt.Errorf("%w: SRMP length %d is negative", ErrCorruptFrame, n)
		}
	}
	if hdr+n > int64(maxFrame) {
		return 0, fmt.Errorf("%w: SRMP frame of %d bytes, limit %d", ErrFrameTooLarge, hdr+n, maxFrame)
	}
	return int(hdr + n), nil
}

// srmpHeader is a parsed SRMP header.
type srmpHeader struct {
	kind Kind
	flag uint8
	seq  uint8
	size int // header length: 4 or 8
}

func parseSRMPHeader(b []byte) srmpHeader {
	h := srmpHeader{kind: Kind(b[0] >> srmpKindShift), flag: b[0] & srmpFlagMask, seq: b[1], size: srmpHeaderLen}
	if binary.LittleEndian.Uint16(b[2:]) == srmpExtMarker {
		h.size = srmpExtHeaderLen
	}
	return h
}

// srmpHeaderSize is the header length for a payload of n bytes: the long
// form is used iff n >= 65535, exactly as NewLife does (its v11 decoder
// rejects a long header with a short length).
func srmpHeaderSize(n int) int {
	if n >= srmpExtMarker {
		return srmpExtHeaderLen
	}
	return srmpHeaderLen
}

// putSRMPHeader writes the header for a payload of n bytes into b.
func putSRMPHeader(b []byte, kind Kind, flag, seq uint8, n int) {
	b[0] = byte(kind)<<srmpKindShift | flag&srmpFlagMask
	b[1] = seq
	if n >= srmpExtMarker {
		binary.LittleEndian.PutUint16(b[2:], srmpExtMarker)
		binary.LittleEndian.PutUint32(b[4:], uint32(n))
		return
	}
	binary.LittleEndian.PutUint16(b[2:], uint16(n))
}

// EncodeSRMP prepends an SRMP header to payload and returns the frame;
// ownership of payload moves into it. The header goes into the payload's
// front slack when it has some (packet.GetWithHeadroom(8, n)), otherwise
// into a small segment chained in front: the payload is never copied. A
// payload over 2 GiB − 1 is an error (and is released).
func EncodeSRMP(kind Kind, flag, seq uint8, payload *packet.Packet) (*packet.Packet, error) {
	n := payload.Total()
	if n > srmpMaxPayload {
		payload.Release()
		return nil, fmt.Errorf("%w: SRMP payload of %d bytes", ErrFrameTooLarge, n)
	}
	frame := payload.ExpandHeader(srmpHeaderSize(n))
	putSRMPHeader(frame.Bytes(), kind, flag, seq, n)
	return frame, nil
}
