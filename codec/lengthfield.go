package codec

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lifenet/lifenet/packet"
)

// LengthField is the length-prefixed format (NewLife LengthFieldCodec):
// Offset header bytes (written as zeros, skipped on read), then a length
// field of Size bytes counting the payload only. Size is 1, 2 (the
// default), 4 (little-endian), -2, -4 (big-endian), or [VarintLength] for a
// 7-bit varint (LEB128, low group first, at most 5 bytes; NewLife's Size 0).
// The zero value is Size 2, Offset 0.
type LengthField struct {
	Offset int
	Size   int
}

// Validate reports whether the format is one this package implements.
func (c LengthField) Validate() error {
	switch c.size() {
	case VarintLength, 1, 2, 4, -2, -4:
	default:
		return fmt.Errorf("%w: length field size %d (want 1, 2, 4, -2, -4 or VarintLength)", ErrConfig, c.Size)
	}
	if c.Offset < 0 || c.Offset > 1<<16 {
		return fmt.Errorf("%w: length field offset %d out of range", ErrConfig, c.Offset)
	}
	return nil
}

// size is the field's size: Size, or 2 for the zero value.
func (c LengthField) size() int {
	if c.Size == 0 {
		return 2
	}
	return c.Size
}

// width is the field's fixed width in bytes (the varint's is its largest).
func (c LengthField) width() int {
	if s := c.size(); s != VarintLength {
		return max(s, -s)
	}
	return maxVarintLen
}

// maxPayload is the largest payload the field can describe.
func (c LengthField) maxPayload() int64 { return min(int64(1)<<(8*c.width())-1, 1<<31-1) }

var errVarint = errors.New("varint longer than 5 bytes or above 2^31-1")

// readLength decodes the length field at b[Offset:]: the payload length and
// the field's width, or need > 0 when more bytes are needed.
func (c LengthField) readLength(b []byte) (n int64, width, need int, err error) {
	o := c.Offset
	switch s := c.size(); s {
	case VarintLength:
		var v uint64
		for i := 0; i < maxVarintLen; i++ {
			if len(b) <= o+i {
				return 0, 0, o + i + 1, nil
			}
			v |= uint64(b[o+i]&0x7F) << (7 * i)
			if b[o+i] < 0x80 {
				if v > 1<<31-1 {
					return 0, 0, 0, errVarint
				}
				return int64(v), i + 1, 0, nil
			}
		}
		return 0, 0, 0, errVarint
	default:
		w := max(s, -s)
		if len(b) < o+w {
			return 0, 0, o + w, nil
		}
		for i, x := range b[o : o+w] { // little-endian; a negative size is big-endian
			if s < 0 {
				i = w - 1 - i
			}
			n |= int64(x) << (8 * i)
		}
		if n = int64(int32(n)); n < 0 { // a 4-byte field is signed
			return 0, 0, 0, fmt.Errorf("negative length %d", n)
		}
		return n, w, 0, nil
	}
}

// FrameLen implements Splitter.
func (c LengthField) FrameLen(b []byte, maxFrame int) (int, error) {
	if c.Size == 0 || c.Size == 2 { // the default field, read inline
		o := c.Offset
		if len(b) < o+2 {
			return -(o + 2), nil
		}
		total := o + 2 + int(binary.LittleEndian.Uint16(b[o:]))
		if total > maxFrame {
			return 0, fmt.Errorf("%w: frame of %d bytes, limit %d", ErrFrameTooLarge, total, maxFrame)
		}
		return total, nil
	}
	n, w, need, err := c.readLength(b)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%w: length field: %v", ErrCorruptFrame, err)
	case need > 0:
		return -need, nil
	}
	total := int64(c.Offset+w) + n
	if total > int64(maxFrame) {
		return 0, fmt.Errorf("%w: frame of %d bytes, limit %d", ErrFrameTooLarge, total, maxFrame)
	}
	return int(total), nil
}

// HeaderLen returns the header length (offset + length field) of a
// complete frame.
func (c LengthField) HeaderLen(frame []byte) int {
	_, w, _, _ := c.readLength(frame)
	return c.Offset + w
}

// Encode prepends the header to payload and returns the frame; ownership of
// payload moves into it (a borrowed payload is kept with packet.Keep). Unlike NewLife, a payload too long for the field
// is an error (and is released), never a silently truncated length.
func (c LengthField) Encode(payload *packet.Packet) (*packet.Packet, error) {
	payload = payload.Keep()
	n := payload.Total()
	if int64(n) > c.maxPayload() {
		payload.Release()
		return nil, fmt.Errorf("%w: payload of %d bytes does not fit a %d-byte length field (at most %d)", ErrFrameTooLarge, n, c.width(), c.maxPayload())
	}
	var field [maxVarintLen]byte
	w := c.putLength(field[:], n)
	frame := payload.ExpandHeader(c.Offset + w)
	b := frame.Bytes()
	clear(b[:c.Offset])
	copy(b[c.Offset:], field[:w])
	return frame, nil
}

// header writes the header for a payload of n bytes into b, which has room
// for Offset+width() bytes, and returns its length.
func (c LengthField) header(b []byte, n int) (int, error) {
	if (c.Size == 0 || c.Size == 2) && c.Offset == 0 && n <= 1<<16-1 { // the default, inline
		binary.LittleEndian.PutUint16(b, uint16(n))
		return 2, nil
	}
	if int64(n) > c.maxPayload() {
		return 0, fmt.Errorf("%w: payload of %d bytes does not fit a %d-byte length field (at most %d)", ErrFrameTooLarge, n, c.width(), c.maxPayload())
	}
	clear(b[:c.Offset])
	return c.Offset + c.putLength(b[c.Offset:], n), nil
}

// putLength writes the length field for n into b and returns its width.
func (c LengthField) putLength(b []byte, n int) int {
	if s := c.size(); s != VarintLength {
		w := max(s, -s)
		for i := range w { // little-endian; a negative size is big-endian
			if s < 0 {
				b[w-1-i] = byte(n >> (8 * i))
			} else {
				b[i] = byte(n >> (8 * i))
			}
		}
		return w
	}
	i := 0
	for ; n >= 0x80; i++ {
		b[i] = byte(n) | 0x80
		n >>= 7
	}
	b[i] = byte(n)
	return i + 1
}
